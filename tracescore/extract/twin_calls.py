"""One request traced twice in one trace: the content-less copy is no model call of its own.

A client SDK's own telemetry and an instrumentation of the same client can both trace a
request, under the same parent when an application span (a Traceloop ``@workflow``, a
framework's agent span) holds them: the Anthropic SDK's ``anthropic.messages.create`` at its
default ``metadata_only`` beside OpenLLMetry's ``anthropic.chat`` with the messages. Both name
the provider's response id. Read as two model calls, the copy without content would be a
primary run with nothing to score, and would count the request's tokens twice. The copy is
read as an ``other`` span instead: the trace's sources then say its scope's spans became no
run because another scope's did (:mod:`tracescore.extract.sources`). Across traces, the same
is done by :mod:`tracescore.extract.linked`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tracescore.extract.model import SpanInfo
from tracescore.extract.response_ids import response_id
from tracescore.spans import Span


class _Read(Protocol):
    span: Span
    info: SpanInfo


def drop_twin_calls(nodes: Sequence[_Read]) -> None:
    """Read a content-less model call whose response id a model call with content of this
    trace also names as ``other`` (see the module docstring). Spans with no response id, or
    whose twins all lack content, are left as they are."""
    calls = [node for node in nodes if node.info.kind == "llm"]
    if len(calls) < 2:
        return
    with_content: set[str] = set()
    bare: list[tuple[str, SpanInfo]] = []
    for node in calls:
        found = response_id(node.span.attributes)
        if found is None:
            continue
        info = node.info
        if info.input_messages or info.output_messages or info.system:
            with_content.add(found)
        else:
            bare.append((found, info))
    for found, info in bare:
        if found in with_content:
            info.kind = "other"
            info.usage = None

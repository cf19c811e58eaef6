"""Runs to score offline, from files or from Python values.

Files are OTLP exports (JSON or protobuf, traces and logs; directories expand to the export files
they hold) or JSON / JSON Lines of runs. A run object is either in our own shape (what
``tracescore extract`` prints: it has ``traceId``, ``spanId`` and ``kind``) or in Mastra's scorer
shape (``{input, output, groundTruth?}``). Python values may also be plain
``{input, output, ground_truth}`` items with text or chat messages, the way eval datasets are
usually written.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from tracescore.extract import extract_runs
from tracescore.extract.base import Convention
from tracescore.extract.conversation_id import DEFAULT_ID_ATTRIBUTES
from tracescore.extract.linked import CallLinks, read_linked
from tracescore.extract.mastra_json import (
    MastraRunError,
    is_mastra_json,
    json_items,
    run_from_mastra,
)
from tracescore.extract.model import AgentRun
from tracescore.extract.registry import CONVENTIONS
from tracescore.ingest.files import export_files, load_traces
from tracescore.scorers.utils import make_agent_run, make_test_message
from tracescore.spans import Trace

_EPOCH = "1970-01-01T00:00:00Z"


def read_runs(
    paths: Iterable[Path],
    conversation_attributes: Sequence[str] = DEFAULT_ID_ATTRIBUTES,
    conventions: Sequence[Convention] = CONVENTIONS,
    *,
    only_primary: bool = False,
) -> list[AgentRun]:
    """Every run in ``paths``: runs extracted from OTLP exports, and runs given as JSON.
    ``only_primary``: of an export's traces, only the runs standing for their agents (what
    bindings that score no LLM or tool runs read, :func:`~tracescore.pipeline.bindings.primary_only`),
    as the live worker extracts them. The exports' traces are linked as the worker links a batch
    (:func:`~tracescore.extract.linked.read_linked`): a loop whose calls came as traces of their
    own is read in its answering call's trace, a request traced twice is read once.

    ``conversation_attributes`` name the attributes a trace's conversation id is read from
    (``conversations.id_attributes``), so files group into the conversations the service sees;
    ``conventions`` is the claim order, the configuration's declared conventions first.

    Raises ``DecodeError``, ``MastraRunError`` or ``OSError`` naming the file that could not be
    read.
    """
    paths = list(paths)
    runs: list[AgentRun] = []
    exports: list[Path] = []
    # Directories expand to their export files, plus the JSON Lines of runs they hold.
    lines = [file for path in paths if path.is_dir() for file in sorted(path.rglob("*.jsonl"))]
    for path in [*export_files(paths), *lines]:
        body = path.read_bytes() if path.suffix in (".json", ".jsonl") else b""
        if path.suffix == ".jsonl" or (body and is_mastra_json(body)):
            try:
                runs.extend(runs_from_json(body))
            except MastraRunError as exc:
                raise MastraRunError(f"{path}: {exc}") from None
        else:
            exports.append(path)
    claim_order = list(conventions)
    traces = {trace.trace_id: trace for trace in load_traces(exports)}
    linked = read_linked(
        traces,
        CallLinks(),
        functools.partial(
            extract_runs,
            conventions=claim_order,
            only_primary=only_primary,
            conversation_attributes=conversation_attributes,
        ),
        _nothing_more,
    )
    runs.extend(run for links in linked.values() for run in links.runs)
    return runs


def _nothing_more(trace_ids: list[str]) -> dict[str, Trace]:
    """Files have no store to fetch earlier steps from: every trace read is already given."""
    return {}


def runs_from_json(text: str | bytes) -> list[AgentRun]:
    """A JSON document of one run or a list of runs, or JSON Lines of runs (either shape)."""
    return [as_run(item, index=i) for i, item in enumerate(json_items(text))]


def as_run(item: Any, *, index: int = 0) -> AgentRun:
    """One dataset item as a run: an ``AgentRun``, a run dict of our shape or Mastra's, or a plain
    ``{input, output?, ground_truth?}`` item whose input and output are text or chat messages."""
    if isinstance(item, AgentRun):
        return item
    if not isinstance(item, Mapping):
        raise MastraRunError(f"run {index}: expected a run object, got {type(item).__name__}")
    if "spanId" in item and "kind" in item:
        try:
            return AgentRun.model_validate(item)
        except ValidationError as exc:
            raise MastraRunError(f"run {index}: {exc.errors()[0]['msg']}") from None
    if is_plain_item(item):
        return plain_run(item.get("input"), item.get("output"), _ground_truth(item), index=index)
    return run_from_mastra(dict(item), index=index)


def is_plain_item(item: Mapping[str, Any]) -> bool:
    """Whether ``input`` is text or a chat message list rather than Mastra's run-input object."""
    return not isinstance(item.get("input"), Mapping)


def plain_run(
    user_input: Any, output: Any, ground_truth: Any = None, *, index: int = 0
) -> AgentRun:
    """A run from a user turn and an answer, each text or a list of ``{role, content}`` messages.

    Ids are derived from the content, so the same item always gets the same ids.
    """
    input_messages = [_message(m, f"in-{i}") for i, m in enumerate(_messages(user_input, "user"))]
    output_messages = [
        _message(m, f"out-{i}")
        for i, m in enumerate(_messages(output, "assistant"))
        if m.get("role", "assistant") == "assistant"
    ]
    digest = hashlib.sha256(
        orjson.dumps([index, user_input, output, ground_truth], default=str)
    ).hexdigest()
    data = make_agent_run(
        output=output_messages,
        input_messages=input_messages,
        run_id=digest[32:48],
        ground_truth=ground_truth,
    )
    data["traceId"] = digest[:32]
    return run_from_mastra(data, index=index)


def _messages(value: Any, role: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, Sequence):
        return [m if isinstance(m, Mapping) else {"role": role, "content": str(m)} for m in value]
    return [{"role": role, "content": str(value)}]


def _message(message: Mapping[str, Any], default_id: str) -> dict[str, Any]:
    """A ``MastraDBMessage`` dict from a chat message (``content`` text or a part list)."""
    content = message.get("content")
    if isinstance(content, Mapping):  # already a MastraDBMessage
        return {"id": default_id, "createdAt": _EPOCH, **message}
    built = make_test_message(
        content if isinstance(content, str) else "",
        str(message.get("role") or "user"),
        id=str(message.get("id") or default_id),
        parts=list(content) if isinstance(content, list) else None,
    )
    built["createdAt"] = _EPOCH  # keeps the content fingerprint, hence the ids, stable
    return built


def _ground_truth(item: Mapping[str, Any]) -> Any:
    return item["groundTruth"] if "groundTruth" in item else item.get("ground_truth")

"""The path syntax of declared conventions: where a fact sits inside a JSON attribute.

A path is keys separated by dots, with ``[N]`` for a list index (``[-1]`` counts from the end)
and ``["key.with.dots"]`` for a key that is not a plain name::

    choices[0].message.content
    messages[-1].content
    ["llm.request"].model

A small subset of JSONPath on purpose: a fact is one value at one place, so wildcards, filters
and recursive descent (which return lists of matches) have nothing to give here, and following a
pre-parsed tuple of keys costs a few dict lookups per span, where a JSONPath engine costs an
order of magnitude more on a path that runs for every span of every trace. Strings met on the
way are decoded as JSON, since SDKs encode nested objects as strings, sometimes twice.
"""

from __future__ import annotations

import re
from typing import Any

from tracescore.extract.base import load_json

Step = str | int
_TOKEN = re.compile(
    r"""(?P<key>[^.\[\]"]+)|\[(?P<index>-?\d+)\]|\[(?P<quoted>"(?:[^"\\]|\\.)*")\]"""
)


def parse_path(text: str) -> tuple[Step, ...]:
    """The steps of ``text``; raises ``ValueError`` saying where it stops being a path."""
    steps: list[Step] = []
    position = 0
    while position < len(text):
        if steps and text[position] == ".":
            position += 1
        match = _TOKEN.match(text, position)
        if match is None or (match.group("key") and steps and text[position - 1] != "."):
            raise ValueError(
                f"not a path at character {position + 1} of {text!r}: write keys separated by "
                '".", [N] for a list index, ["a.b"] for a key with dots'
            )
        if match.group("key") is not None:
            steps.append(match.group("key"))
        elif match.group("index") is not None:
            steps.append(int(match.group("index")))
        else:
            steps.append(str(load_json(match.group("quoted"), [], "path")))
        position = match.end()
    if not steps:
        raise ValueError(f"{text!r} is not a path: it names no key")
    return tuple(steps)


def follow(value: Any, steps: tuple[Step, ...], warnings: list[str], what: str) -> Any:
    """The value at ``steps`` inside ``value`` (JSON strings decoded on the way), or None."""
    for step in steps:
        if isinstance(value, (str, bytes)):
            value = load_json(value, warnings, what)
        if isinstance(step, int) and isinstance(value, list):
            if not -len(value) <= step < len(value):
                return None
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value

"""Structured output: how JSON is asked of a judge, and how its answer is read back.

Providers differ: OpenAI, vLLM and Anthropic (through litellm) take a JSON schema in
``response_format``; llama.cpp's server and Ollama only take JSON mode; some take neither. The
schema therefore always goes into the prompt too, and the answer is always validated with
pydantic, so a judge that ignores ``response_format`` still works and a wrong answer is caught.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

Mode = Literal["json_schema", "json_object", "prompt"]

_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


@cache
def schema_json(schema: type[BaseModel]) -> str:
    """The schema as compact, key-sorted JSON (stable text for prompts and cache keys)."""
    return json.dumps(schema.model_json_schema(), sort_keys=True, separators=(",", ":"))


def schema_instruction(schema: type[BaseModel]) -> str:
    return (
        "Answer with one JSON object only, no prose and no code fence, that validates against "
        f"this JSON Schema:\n{schema_json(schema)}"
    )


def request_messages(
    prompt: str, instructions: str | None, schema: type[BaseModel] | None
) -> list[dict[str, str]]:
    """The chat messages of one judge request: the instructions as the system message, the
    prompt (with the schema spelled out when one is asked for) as the user message."""
    if schema is not None:
        prompt = f"{prompt}\n\n{schema_instruction(schema)}"
    messages = [{"role": "user", "content": prompt}]
    if instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    return messages


def response_format(
    schema: type[BaseModel], mode: Mode, *, self_hosted: bool
) -> dict[str, Any] | None:
    """The ``response_format`` argument for ``mode``.

    JSON mode carries the schema too when the judge is a self-hosted OpenAI-compatible server:
    llama.cpp constrains its sampling with it, and hosted APIs would reject the extra key.
    """
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": json.loads(schema_json(schema))},
        }
    if mode == "json_object":
        if self_hosted:
            return {"type": "json_object", "schema": json.loads(schema_json(schema))}
        return {"type": "json_object"}
    return None


_DECODER = json.JSONDecoder()
_OPENING_BRACE = re.compile(r"\{")
_MAX_STARTS = 64
"""Opening braces tried before giving up: each try decodes at most the rest of the answer, and a
judge's answer is bounded by its ``max_tokens``, so the search stays linear in practice."""


def json_text(text: str) -> str:
    """The first complete JSON object in a judge's answer, as text: code fences, prose before it
    and anything after it (more prose, braces in a remark, a second object) left out.

    ``json.JSONDecoder.raw_decode`` reads one value and says where it ended, so the object is
    found by parsing rather than by guessing from the first ``{`` and the last ``}`` (which took
    "{...} (see {x})" whole). An answer holding no object is returned trimmed, for the schema's
    error to name.
    """
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    for tries, brace in enumerate(_OPENING_BRACE.finditer(text)):
        if tries == _MAX_STARTS:
            break
        try:
            value, end = _DECODER.raw_decode(text, brace.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return text[brace.start() : end]
    return text


def parse_output(text: str, schema: type[BaseModel] | None) -> BaseModel | str:
    """Validate ``text`` against ``schema`` (``pydantic.ValidationError`` when it does not fit)."""
    if schema is None:
        return text.strip()
    return schema.model_validate_json(json_text(text))

"""A model call's response id and the earlier response it continues, from its span's
attributes, whatever convention wrote them.

OpenAI's Responses API lets a call continue an earlier response by ``previous_response_id``
and send only what is new (the tool outputs of a loop's step): what links that call to the
step before it, and to the step's trace when a client instrumentation starts a trace per call,
is the pair of ids, not the content. Instrumentations name them in different places: the
response id as ``gen_ai.response.id`` (OTel GenAI, OpenLLMetry) or only inside the response body
recorded whole (OpenInference's ``output.value``); the previous id in the request's parameters
(OpenInference's ``llm.invocation_parameters``, the request body in ``input.value``) or as an
attribute of its own. Bodies are parsed only when their text names what is looked for, so the
common call, which continues nothing, costs a substring search.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

RESPONSE_ID_ATTRIBUTES = ("gen_ai.response.id", "llm.response.id")
"""Where a model call's span names the provider's response id."""
_PREVIOUS_ATTRIBUTES = (
    "gen_ai.request.previous_response_id",
    "gen_ai.openai.request.previous_response_id",
)
_PREVIOUS_IN = ("llm.invocation_parameters", "input.value")
"""Request parameters or bodies recorded whole that may name ``previous_response_id``."""
_PREVIOUS = "previous_response_id"
_BODY_PREFIX = 200
"""How far into a recorded response body its ``id`` is looked for (it comes first)."""


def response_id(attributes: Mapping[str, Any]) -> str | None:
    """The provider's id of the response the call read, when its span names one."""
    for key in RESPONSE_ID_ATTRIBUTES:
        if isinstance(value := attributes.get(key), str) and value:
            return value
    body = attributes.get("output.value")
    if isinstance(body, str) and '"object":"response"' in body[:_BODY_PREFIX].replace(" ", ""):
        parsed = _parsed(body)
        if isinstance(found := parsed.get("id"), str) and found:
            return found
    return None


def previous_response_id(attributes: Mapping[str, Any]) -> str | None:
    """The id of the earlier response this call continues, when its request named one."""
    for key in _PREVIOUS_ATTRIBUTES:
        if isinstance(value := attributes.get(key), str) and value:
            return value
    for key in _PREVIOUS_IN:
        value = attributes.get(key)
        if isinstance(value, str) and _PREVIOUS in value:
            found = _parsed(value).get(_PREVIOUS)
            if isinstance(found, str) and found:
                return found
    return None


def _parsed(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}

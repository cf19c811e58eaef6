"""The REST API reference, rendered from the OpenAPI schema of the app ``tracescore serve`` runs.

The schema is the one ``/api/openapi.json`` serves, taken from an app built on a throwaway
SQLite store with the default configuration, so every route anyone adds shows up here too.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from docgen.markdown import code, prose, table
from tracescore.config import Config
from tracescore.service import create_app
from tracescore.store import open_store

_METHODS = ("get", "post", "put", "patch", "delete")


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI document of the service's HTTP app."""
    with tempfile.TemporaryDirectory(prefix="tracescore-docs-") as directory:
        store = open_store(f"sqlite:///{Path(directory) / 'schema.db'}")
        try:
            return create_app(Config(), store).openapi()
        finally:
            store.close()


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(METHOD, path, operation)`` of every route, in the schema's order."""
    return [
        (method.upper(), path, item[method])
        for path, item in schema["paths"].items()
        for method in _METHODS
        if method in item
    ]


def render() -> str:
    """A summary table of the routes, then a section per route."""
    schema = openapi_schema()
    found = operations(schema)
    summary = table(
        ("route", "what"),
        (
            (f"[{code(f'{method} {path}')}](#{_anchor(method, path)})", _first_line(operation))
            for method, path, operation in found
        ),
    )
    return "\n\n".join([summary, *(_section(*route) for route in found)]) + "\n"


def _anchor(method: str, path: str) -> str:
    return (
        f"{method}-{path}".lower()
        .replace("/", "-")
        .replace("{", "")
        .replace("}", "")
        .replace("--", "-")
    )


def _first_line(operation: dict[str, Any]) -> str:
    return (operation.get("description") or operation.get("summary") or "").strip().split("\n\n")[0]


def _section(method: str, path: str, operation: dict[str, Any]) -> str:
    parts = [
        f"## `{method} {path}` {{#{_anchor(method, path)}}}",
        prose(operation.get("description")),
    ]
    parameters = operation.get("parameters", [])
    if parameters:
        parts.append(
            table(
                ("parameter", "in", "type", "default", "what it does"),
                (
                    (
                        code(parameter["name"]),
                        parameter["in"],
                        _type(parameter.get("schema", {})),
                        "required"
                        if parameter.get("required")
                        else _default(parameter.get("schema", {})),
                        parameter.get("description")
                        or parameter.get("schema", {}).get("description", ""),
                    )
                    for parameter in parameters
                ),
            )
        )
    responses = ", ".join(
        f"{code(status)} {answer.get('description', '')}".strip()
        for status, answer in operation.get("responses", {}).items()
    )
    if responses:
        parts.append(f"Responses: {responses}.")
    return "\n\n".join(part for part in parts if part)


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        present = [option for option in schema["anyOf"] if option.get("type") != "null"]
        text = " or ".join(_type(option) for option in present)
        return f"{text} or null" if len(present) < len(schema["anyOf"]) else text
    if "enum" in schema:
        return " or ".join(code(json.dumps(value)) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    kind = schema.get("type", "any")
    return f"{kind} ({schema['format']})" if "format" in schema else str(kind)


def _default(schema: dict[str, Any]) -> str:
    return code(json.dumps(schema["default"])) if "default" in schema else "—"

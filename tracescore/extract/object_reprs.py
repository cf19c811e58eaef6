"""Python objects recorded as their ``repr`` / ``str`` instead of JSON, read back as values.

Some instrumentations serialise a call's arguments with ``str()``: a message the client took
as a typed model is then text, not a message. Two shapes are read:

* a constructor call, ``ChatMessage(_role=…, _content=[…])`` (dataclasses, Haystack);
* a pydantic model's ``str()``, its fields separated by spaces,
  ``content='Hi' role='user'`` (Mistral's typed messages under OpenInference's Mistral
  instrumentation, nested models written as calls: ``tool_calls=[ToolCall(function=…)]``).

Both are parsed with :mod:`ast` (never evaluated): a call becomes a dict of its keyword
arguments (``__class__`` its name), literals stay literals, anything else is None. The text is
attacker-controlled: it is bounded before parsing.
"""

from __future__ import annotations

import ast
import re
from typing import Any

MAX_REPR_CHARS = 200_000
"""A repr longer than this is not parsed (``ast.parse`` costs memory in proportion)."""
_FIELD = re.compile(r"[A-Za-z_]\w*=(?!=)")
_PYDANTIC_START = re.compile(r"[A-Za-z_]\w*=")


def ast_value(node: ast.AST) -> Any:
    """A repr's expression as plain values: a constructor call as a dict of its keyword
    arguments (``__class__`` its name), literals as themselves, anything else as None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [ast_value(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {
            ast_value(key): ast_value(item)
            for key, item in zip(node.keys, node.values, strict=True)
            if key is not None and isinstance(ast_value(key), (str, int, float, bool))
        }
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return {"__class__": node.func.id} | {
            keyword.arg: ast_value(keyword.value) for keyword in node.keywords if keyword.arg
        }
    return None


def pydantic_fields(text: str) -> dict[str, Any] | None:
    """The fields of a pydantic model's ``str()`` (``a=1 b='x'``), or None when ``text`` is
    not one. A field holding a model with no fields (``name=Unset()``) is left out."""
    if len(text) > MAX_REPR_CHARS or not _PYDANTIC_START.match(text):
        return None
    try:
        call = ast.parse(f"_({_with_commas(text)})", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    fields = ast_value(call)
    if not isinstance(fields, dict):
        return None
    return {
        key: value
        for key, value in fields.items()
        if key != "__class__" and not (isinstance(value, dict) and value.keys() == {"__class__"})
    }


def _with_commas(text: str) -> str:
    """``a=1 b='x y'`` as ``a=1, b='x y'``: a comma before each top-level ``name=`` that
    follows a space, outside strings and brackets."""
    out: list[str] = []
    depth = 0
    quote = ""
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                out.append(text[index : index + 2])
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == " " and depth == 0 and _FIELD.match(text, index + 1):
            out.append(",")
        out.append(char)
        index += 1
    return "".join(out)

"""The configuration reference: every key of the YAML file, walked from the pydantic models.

``tracescore.config.Config`` composes the sections each part owns, so walking its fields (types,
constraints, defaults, the docstrings written under the fields) documents whatever key anyone
adds, the day it is added.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
import types
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import AnyUrl, BaseModel, BeforeValidator
from pydantic.fields import FieldInfo

from docgen.markdown import code, prose, table
from tracescore.config import Config
from tracescore.settings import parse_duration

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Any: "any"}
_BOUNDS = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
)
_UNITS = (("d", 86400), ("h", 3600), ("m", 60))


@dataclass(frozen=True)
class Key:
    """One configuration key as the reference lists it."""

    path: str
    """Dotted, with ``[]`` for list items and ``<name>`` for mapping entries: ``scorers[].filter.agent``."""
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Block:
    """The keys of one model, under the path where the model sits in the file."""

    path: str
    variant: str
    """``type: threshold`` for one member of a union told apart by its ``type`` key, else empty."""
    description: str
    keys: list[Key]


def config_blocks(
    model: type[BaseModel] = Config,
    path: str = "",
    variant: str = "",
    within: tuple[type[BaseModel], ...] = (),
    lead: str = "",
) -> list[Block]:
    """``model``'s keys and, after them, those of every model nested in it, depth first.

    A field holding one section (``server``) is a heading of its own rather than a key; a list
    or mapping of models (``scorers``, ``judges``) is both: a key with its default, and the
    heading of its items' keys. A model nested in itself (``when.any[]``, a condition of
    conditions) is listed once, where it first appears: ``within`` holds the models above.
    ``lead`` is the docstring of the field holding the model, said before the model's own
    (``when.tokens``: which number the bounds bound).
    """
    keys: list[Key] = []
    nested: list[Block] = []
    docstrings = _field_docstrings(model)
    for name, field in model.model_fields.items():
        key = field.alias or name
        key_path = f"{path}.{key}" if path else key
        children = [
            (suffix, child)
            for suffix, child in _nested_models(field.annotation)
            if child not in (*within, model)
        ]
        description = field.description or docstrings.get(name, "")
        if not children or any(suffix for suffix, _ in children):
            keys.append(Key(key_path, _field_type(field), _default(field), prose(description)))
        for suffix, child in children:
            child_variant = _variant(child) if len(children) > 1 else ""
            held_by = "" if suffix else description
            nested.extend(
                config_blocks(child, key_path + suffix, child_variant, (*within, model), held_by)
            )
    own_doc = "\n\n".join(text for text in (prose(lead), prose(vars(model).get("__doc__"))) if text)
    return [Block(path or "top level", variant, own_doc, keys), *nested] if keys else nested


def render() -> str:
    """The reference as Markdown: one table per block."""
    parts = []
    for block in config_blocks():
        title = f"`{block.path}`" if block.path != "top level" else "Top level"
        if block.variant:
            title += f" ({code(block.variant)})"
        parts.append(f"## {title}")
        if block.description:
            parts.append(block.description)
        parts.append(
            table(
                ("key", "type", "default", "what it does"),
                ((code(key.path), key.type, key.default, key.description) for key in block.keys),
            )
        )
    return "\n\n".join(parts) + "\n"


def _nested_models(annotation: Any) -> list[tuple[str, type[BaseModel]]]:
    """The models a field holds, each with the path suffix of its keys: ``""`` for a section,
    ``[]`` for list items, ``.<name>`` for mapping values."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    if origin is Annotated:
        return _nested_models(args[0])
    if origin in (Union, types.UnionType):
        return [found for arg in args for found in _nested_models(arg)]
    if origin is list:
        return [(f"[]{suffix}", model) for suffix, model in _nested_models(args[0])]
    if origin is dict:
        return [(f".<name>{suffix}", model) for suffix, model in _nested_models(args[1])]
    return []


def _variant(model: type[BaseModel]) -> str:
    """``type: <value>`` of a union member told apart by a ``type`` literal, else its class name."""
    field = model.model_fields.get("type")
    if field is not None and get_origin(field.annotation) is Literal:
        return "type: " + " | ".join(str(value) for value in get_args(field.annotation))
    return model.__name__


def _field_type(field: FieldInfo) -> str:
    text = "duration" if _is_duration(field.metadata) else _type_text(field.annotation)
    bounds = [
        f"{sign} {getattr(item, attr)}"
        for item in field.metadata
        for kind, attr, sign in _BOUNDS
        if isinstance(item, kind)
    ]
    bounds += [
        f"at most {item.max_length} characters"
        for item in field.metadata
        if isinstance(item, annotated_types.MaxLen)
    ]
    bounds += [
        f"matching {code(pattern)}"
        for item in field.metadata
        if (pattern := getattr(item, "pattern", None))
    ]
    return f"{text} ({', '.join(bounds)})" if bounds else text


def _is_duration(metadata: list[Any] | tuple[Any, ...]) -> bool:
    """Whether the annotation is ``tracescore.settings.Duration`` (its validator gives it away)."""
    return any(
        isinstance(item, BeforeValidator) and item.func is parse_duration for item in metadata
    )


def _type_text(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return "duration" if _is_duration(args[1:]) else _type_text(args[0])
    if origin is Literal:
        return " or ".join(code(json.dumps(value)) for value in args)
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        text = " or ".join(dict.fromkeys(_type_text(arg) for arg in present))
        return f"{text} or null" if len(present) < len(args) else text
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is dict:
        return f"mapping of {_type_text(args[0])} to {_type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, AnyUrl):
        return "URL"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel) or (
        isinstance(value, list) and value and isinstance(value[0], BaseModel)
    ):
        dumped = (
            [item.model_dump(mode="json", exclude_defaults=True) for item in value]
            if isinstance(value, list)
            else value.model_dump(mode="json", exclude_defaults=True)
        )
        return code(json.dumps(dumped))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = code(json.dumps(value))
    if _is_duration(field.metadata) and isinstance(value, int):
        unit = next(
            ((name, size) for name, size in _UNITS if value >= size and value % size == 0), None
        )
        if unit:
            text += f" ({code(f'{value // unit[1]}{unit[0]}')})"
    return text


@cache
def _own_field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The string literals written right under ``model``'s own field declarations."""
    try:
        source = textwrap.dedent(inspect.getsource(model))
    except (OSError, TypeError):  # defined where its source cannot be read
        return {}
    body = next(node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)).body
    found = {}
    for declaration, following in itertools.pairwise(body):
        if (
            isinstance(declaration, ast.AnnAssign)
            and isinstance(declaration.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[declaration.target.id] = inspect.cleandoc(following.value.value)
    return found


def _field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Field docstrings of ``model`` and the models it inherits fields from (nearest wins)."""
    found: dict[str, str] = {}
    for base in reversed(model.__mro__):
        if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel:
            found.update(_own_field_docstrings(base))
    return found

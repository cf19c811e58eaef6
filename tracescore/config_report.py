"""How a config document's mistakes are reported: pydantic's errors mapped to the document's
dotted keys (with a "did you mean" for a misspelt key), each key's line in the file, and the
message listing them all. Values are never echoed (they may be secrets), PyYAML's snippet of
the offending line included.

Its own module, below every section: each section checks its own cross-references and returns
problems (:data:`tracescore.settings.Problem`), the scorers' section validates its options
with :func:`validation_problems`, and :func:`tracescore.config.parse_config` reports them all.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from tracescore.settings import Problem

Lines = dict[tuple[str, ...], int]
"""Each key path of a document and its 1-based line."""


def line_index(text: str) -> Lines:
    """Map each key path of a YAML document to its 1-based line, for error messages."""
    lines: Lines = {}

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, str(index)))

    root = yaml.compose(text)
    if root is not None:
        walk(root, ())
    return lines


def line_of(path: tuple[str, ...], lines: Lines) -> int | None:
    """The line of the deepest part of ``path`` the document has."""
    return next((lines[path[:n]] for n in range(len(path), -1, -1) if path[:n] in lines), None)


def _where(path: tuple[str, ...], lines: Lines) -> str:
    line = line_of(path, lines)
    return f" (line {line})" if line else ""


def validation_problems(
    exc: ValidationError, model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> list[Problem]:
    """pydantic's errors as problems at document paths (a tagged union's tag, which pydantic
    puts in the path, dropped), an unknown key with the nearest known ones as suggestions."""
    problems: list[Problem] = []
    for error in exc.errors(include_input=False, include_url=False):
        path, known = _document_path(model, error["loc"])
        message = error["msg"]
        if error["type"] == "extra_forbidden" and (close := did_you_mean(path[-1], known)):
            message += f"; {close}"
        problems.append(((*prefix, *path), message))
    return problems


def did_you_mean(name: str, known: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(m) for m in matches)}?" if matches else ""


def _document_path(
    model: type[BaseModel], loc: tuple[int | str, ...]
) -> tuple[tuple[str, ...], set[str]]:
    """``loc`` as a path of the document, and the keys the mapping holding its last part may
    have (empty when that is no model)."""
    node: Any = model
    path: list[str] = []
    for position, part in enumerate(loc):
        node = _unwrap(node)
        if isinstance(node, list):  # a union: the member the tag names, else the one that fits
            tagged = [m for m in node if _is_model(m) and _has_tag(m, part)]
            if tagged:
                node = tagged[0]
                continue  # the tag is pydantic's, not a key of the document
            node = next((m for m in node if not _is_model(m)), node[0])
            node = _unwrap(node)
        path.append(str(part))
        if position == len(loc) - 1:
            break
        node = _child(node, part)
    keys: set[str] = set()
    if _is_model(node):
        # Suggested in the spelling the key was written in: camelCase aliases for camelCase.
        camel = str(loc[-1]) != str(loc[-1]).lower() if loc else False
        keys = {
            (field.alias or name) if camel else name for name, field in node.model_fields.items()
        }
    return tuple(path), keys


def _unwrap(annotation: Any) -> Any:
    """A model, a list of union members, or another annotation, without Annotated/Optional."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else [_unwrap(m) for m in members]
    return annotation


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _has_tag(model: type[BaseModel], value: object) -> bool:
    return any(
        get_origin(field.annotation) is Literal and value in get_args(field.annotation)
        for field in model.model_fields.values()
    )


def _child(node: Any, part: int | str) -> Any:
    if _is_model(node):
        field = node.model_fields.get(str(part))
        return field.annotation if field is not None else None
    origin, args = get_origin(node), get_args(node)
    if origin in (list, tuple, set, frozenset) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def format_problems(problems: list[Problem], lines: Lines) -> str:
    """Every problem on a line of its own: the dotted key, its line, what is wrong."""
    return "invalid configuration:\n  " + "\n  ".join(
        f"{'.'.join(path) or '(top level)'}{_where(path, lines)}: {message}"
        for path, message in problems
    )


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML found wrong and where, without its snippet of the offending line (which
    would print whatever secret sits on it)."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return "cannot be parsed"
    mark = exc.problem_mark
    return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"

"""Which tests start a real ``tracescore serve``: the ``e2e`` marker, set at collection.

A test is marked when its function, a fixture it uses, or a function or class of the test tree
these reach calls ``start_server`` or ``ServerProcess``, or builds a ``tracescore.cli serve``
command line itself. The walk reads the compiled code (the global names each function uses and
its constants), so a new test that starts a service is marked without anyone remembering to:
``pytest -m "not e2e"`` runs the rest, in-process, in a fraction of the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import CodeType, FunctionType
from typing import Any

import pytest

from tests.support.server_process import ServerProcess, start_server

STARTERS: tuple[object, ...] = (start_server, ServerProcess)
"""What starts a service; everything that reaches one of these starts one too."""
OWN_CODE = "tests."
"""Functions and classes of these modules are followed; the package's and libraries' are not."""


def _strings(constants: Iterable[object]) -> Iterable[str]:
    for constant in constants:
        if isinstance(constant, str):
            yield constant
        elif isinstance(constant, tuple | frozenset):
            yield from _strings(constant)


def _builds_a_serve_command(code: CodeType) -> bool:
    strings = set(_strings(code.co_consts))
    return "serve" in strings and any("tracescore.cli" in text for text in strings)


def _functions_of(value: Any) -> Iterable[FunctionType]:
    """The test tree's own functions behind ``value`` (a function, a method's class, a fixture)."""
    value = getattr(value, "__wrapped__", value)
    if isinstance(value, FunctionType) and value.__module__.startswith(OWN_CODE):
        yield value
    elif isinstance(value, type) and value.__module__.startswith(OWN_CODE):
        for member in vars(value).values():
            yield from _functions_of(getattr(member, "__func__", member))


def _reaches_a_starter(code: CodeType, names: dict[str, Any], seen: set[CodeType]) -> bool:
    if code in seen:
        return False
    seen.add(code)
    if _builds_a_serve_command(code):
        return True
    for constant in code.co_consts:
        if isinstance(constant, CodeType) and _reaches_a_starter(constant, names, seen):
            return True
    for name in code.co_names:
        value = names.get(name)
        if any(value is starter for starter in STARTERS):
            return True
        for function in _functions_of(value):
            if _reaches_a_starter(function.__code__, function.__globals__, seen):
                return True
    return False


def starts_a_service(functions: Iterable[Any]) -> bool:
    """Whether any of ``functions`` (a test and its fixtures) starts a ``tracescore serve``."""
    seen: set[CodeType] = set()
    for value in functions:
        value = getattr(value, "__func__", value)
        if any(value is starter for starter in STARTERS):
            return True
        for function in _functions_of(value):
            if _reaches_a_starter(function.__code__, function.__globals__, seen):
                return True
    return False


def mark_e2e(items: Iterable[pytest.Item]) -> None:
    """Mark ``e2e`` every collected test that starts a service, itself or through a fixture."""
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        fixtures = [
            definition.func
            for definitions in item._fixtureinfo.name2fixturedefs.values()
            for definition in definitions
        ]
        if starts_a_service([item.function, *fixtures]):
            item.add_marker(pytest.mark.e2e)

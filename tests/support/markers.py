"""Markers set at collection from what a test calls: ``e2e`` and ``postgres``.

A test is marked ``e2e`` when its function, a fixture it uses, or a function or class of the
test tree these reach calls ``start_server`` or ``ServerProcess``, or builds a
``tracescore.cli serve`` command line itself; ``postgres`` when they reach a PostgreSQL database
(``fresh_pg_database``, behind the ``pg_url`` and ``db_url`` fixtures, or a private
``ThrowawayPostgres`` cluster) or read the server's URL from ``TRACESCORE_TEST_PG_URL``. A
fixture parametrized over databases counts only for its PostgreSQL parameter: ``db_url[sqlite]``
needs no server. The walk reads the compiled code (the global names each function uses and its
constants), so a new test is marked without anyone remembering to: ``pytest -m "not e2e"`` runs
the rest, in-process, in a fraction of the time, and ``-m "not postgres"`` runs without a
PostgreSQL server.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import CodeType, FunctionType
from typing import Any

import pytest

from tests.support.databases import fresh_pg_database
from tests.support.server_process import ServerProcess, start_server
from tests.support.throwaway_pg import ThrowawayPostgres

OWN_CODE = "tests."
"""Functions and classes of these modules are followed; the package's and libraries' are not."""


def _strings(constants: Iterable[object]) -> Iterable[str]:
    for constant in constants:
        if isinstance(constant, str):
            yield constant
        elif isinstance(constant, tuple | frozenset):
            yield from _strings(constant)


@dataclass(frozen=True)
class Need:
    """What a marked test reaches: one of ``starters``, or code whose constants ``spelled``."""

    starters: tuple[object, ...]
    spelled: Callable[[set[str]], bool]

    def reached_by(self, functions: Iterable[Any]) -> bool:
        """Whether any of ``functions`` (a test and its fixtures) reaches this need."""
        return any(self._reached_from(value) for value in functions)

    @functools.cache  # noqa: B019 - the needs are module constants, never freed
    def _reached_from(self, value: Any) -> bool:
        """Whether ``value`` reaches this need; once per function, where fixtures like
        ``db_url`` serve thousands of tests."""
        value = getattr(value, "__func__", value)
        if self._is_starter(value):
            return True
        seen: set[CodeType] = set()
        return any(
            self._reached(function.__code__, function.__globals__, seen)
            for function in _functions_of(value)
        )

    def _is_starter(self, value: object) -> bool:
        return any(value is starter for starter in self.starters)

    def _reached(self, code: CodeType, names: dict[str, Any], seen: set[CodeType]) -> bool:
        if code in seen:
            return False
        seen.add(code)
        if self.spelled(set(_strings(code.co_consts))):
            return True
        for constant in code.co_consts:
            if isinstance(constant, CodeType) and self._reached(constant, names, seen):
                return True
        for name in code.co_names:
            value = names.get(name)
            if self._is_starter(value):
                return True
            for function in _functions_of(value):
                if self._reached(function.__code__, function.__globals__, seen):
                    return True
        return False


def _functions_of(value: Any) -> Iterable[FunctionType]:
    """The test tree's own functions behind ``value`` (a function, a method's class, a fixture)."""
    value = getattr(value, "__wrapped__", value)
    if isinstance(value, FunctionType) and value.__module__.startswith(OWN_CODE):
        yield value
    elif isinstance(value, type) and value.__module__.startswith(OWN_CODE):
        for member in vars(value).values():
            yield from _functions_of(getattr(member, "__func__", member))


SERVICE = Need(
    (start_server, ServerProcess),
    lambda strings: "serve" in strings and any("tracescore.cli" in text for text in strings),
)
"""A real ``tracescore serve``: started through the helpers, or its command line built."""
POSTGRES = Need(
    (fresh_pg_database, ThrowawayPostgres),
    lambda strings: "TRACESCORE_TEST_PG_URL" in strings,
)
"""A PostgreSQL server: a database on the shared one, a private cluster, or the URL itself."""
SQLITE_PARAMETER = "sqlite"
"""A database-parametrized fixture's parameter that needs no server."""


def starts_a_service(functions: Iterable[Any]) -> bool:
    """Whether any of ``functions`` (a test and its fixtures) starts a ``tracescore serve``."""
    return SERVICE.reached_by(functions)


def _used_functions(item: pytest.Function) -> list[Any]:
    """The test's function and those of the fixtures it uses in this parametrization."""
    params = getattr(item, "callspec", None)
    chosen = params.params if params is not None else {}
    return [
        item.function,
        *(
            definition.func
            for name, definitions in item._fixtureinfo.name2fixturedefs.items()
            if chosen.get(name) != SQLITE_PARAMETER
            for definition in definitions
        ),
    ]


def mark_by_need(items: Iterable[pytest.Item]) -> None:
    """Mark ``e2e`` every collected test that starts a service and ``postgres`` every one that
    uses a PostgreSQL server, itself or through a fixture."""
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        functions = _used_functions(item)
        if SERVICE.reached_by(functions):
            item.add_marker(pytest.mark.e2e)
        if POSTGRES.reached_by(functions):
            item.add_marker(pytest.mark.postgres)

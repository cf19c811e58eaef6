"""The ``score_series`` table: the names a score row shares with every other row of its binding,
stored once and referred to by a small integer.

A score row named its binding, scorer, version, status, judge model, run kind, service, agent
and model as text (about 60 bytes) and four indexes repeated the binding, the scorer, the agent
and the status beside each row's time: more than half of a scored trace's bytes (#49). A
deployment has a few hundred such combinations at most, so each is a row here and a score
carries its ``series_id``; one ``(series_id, created_at)`` index then serves every filter on
any of them (the read joins this table and the planner walks the matching series' ranges).

Ids are resolved by the writer, through a per-engine cache: a combination seen once is a dict
lookup after that. A new one is inserted (``ON CONFLICT DO NOTHING`` on its ``key``, a digest
of the names, since both databases let NULLs repeat under a unique constraint) and read back
in a transaction of its own that commits before the scores' write, so the cache never holds the
id of a series row a rolled-back transaction took with it. A write that is already inside a
transaction (:func:`in_transaction`) inserts what it misses there and caches nothing new.
Series rows are never deleted: retention prunes scores, and a series without scores costs a
row of a few hundred.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Column, Engine, Index, Integer, LargeBinary, select
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from tracescore.store.dialect import dialect_insert
from tracescore.store.table_of import table_of
from tracescore.store.text import ColumnFit, TextGuard
from tracescore.store.writelock import exclusive_transaction

NAMES = (
    "binding",
    "scorer_id",
    "scorer_version",
    "status",
    "judge_model",
    "run_kind",
    "service",
    "agent",
    "model",
)
"""The columns of a score that are its series', in the order a series' names are kept."""

Names = tuple[str | None, ...]


class ScoreSeriesRow(SQLModel, table=True):
    __tablename__ = "score_series"
    __table_args__ = (
        # What the reads filter by: the planner starts from the few matching series.
        Index("ix_score_series_binding", "binding"),
        Index("ix_score_series_scorer", "scorer_id"),
        Index("ix_score_series_agent", "agent"),
        Index("ix_score_series_status", "status"),
    )

    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    key: bytes = Field(sa_column=Column(LargeBinary, nullable=False, unique=True))
    """:func:`series_key` of the names."""
    binding: str = Field(max_length=100)
    scorer_id: str = Field(max_length=200)
    scorer_version: str = Field(max_length=50)
    status: str = Field(max_length=20)
    judge_model: str | None = Field(default=None, max_length=200)
    run_kind: str = Field(default="agent", max_length=10)
    service: str | None = Field(default=None, max_length=200)
    agent: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)


SERIES = table_of(ScoreSeriesRow)
_DEFAULTS = {"run_kind": "agent"}
_FIT = ColumnFit(SERIES, produced_here=("key", "status", "run_kind"))


def series_key(names: Names) -> bytes:
    """16 bytes naming one combination of names (None told apart from any text)."""
    text = "\x1f".join("\x00" if name is None else name for name in names)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def names_of(row: Mapping[str, Any]) -> Names:
    """A score row's series names, as the row gives them (a run's kind, when it gives none, is
    an agent's: the column's default)."""
    return tuple([row.get(name, default) for name, default in _NAMED])


_NAMED = tuple((name, _DEFAULTS.get(name)) for name in NAMES)
"""Each series name and its value when a row leaves it out (read once per score row)."""


class _Fitted:
    """A series' names made storable, with how many of them that changed."""

    __slots__ = ("key", "replaced", "values")

    def __init__(self, names: Names) -> None:
        guard = TextGuard()
        self.values = _FIT.row(dict(zip(NAMES, names, strict=True)), guard)
        self.key = series_key(tuple(self.values[name] for name in NAMES))
        self.values["key"] = self.key
        self.replaced = guard.replaced


_CACHES: WeakKeyDictionary[Engine, dict[Names, tuple[int, int]]] = WeakKeyDictionary()
_CACHES_GUARD = threading.Lock()


def _cache(engine: Engine) -> dict[Names, tuple[int, int]]:
    with _CACHES_GUARD:
        found = _CACHES.get(engine)
        if found is None:
            found = _CACHES[engine] = {}
        return found


def _resolve(connection: Connection, fitted: Iterable[_Fitted]) -> dict[bytes, int]:
    """Insert the series not stored yet and read every one's id, by key."""
    rows = {item.key: item.values for item in fitted}
    if not rows:
        return {}
    statement = dialect_insert(connection)(SERIES).on_conflict_do_nothing(index_elements=["key"])
    connection.execute(statement, list(rows.values()))
    found = connection.execute(
        select(SERIES.c.key, SERIES.c.id).where(SERIES.c.key.in_(list(rows)))
    )
    return {bytes(key): int(series) for key, series in found}


def committed_ids(engine: Engine, wanted: Iterable[Names]) -> dict[Names, tuple[int, int]]:
    """Each of ``wanted``'s series id and the text values its names had replaced; those not
    cached are stored (and cached) in a transaction of their own first. Call it outside any
    write transaction: on SQLite it takes the writer lock."""
    cache = _cache(engine)
    missing = {names: _Fitted(names) for names in wanted if names not in cache}
    if missing:
        with exclusive_transaction(engine, "score_series") as connection:
            ids = _resolve(connection, missing.values())
        for names, item in missing.items():
            cache[names] = (ids[item.key], item.replaced)
    return cache


def in_transaction(connection: Connection, wanted: Iterable[Names]) -> dict[Names, tuple[int, int]]:
    """As :func:`committed_ids`, for a write inside ``connection``'s transaction: what the cache
    lacks is stored in that transaction and not cached (it may yet roll back)."""
    cache = _cache(connection.engine)
    missing = {names: _Fitted(names) for names in wanted if names not in cache}
    if not missing:
        return cache
    ids = _resolve(connection, missing.values())
    found = dict(cache)
    for names, item in missing.items():
        found[names] = (ids[item.key], item.replaced)
    return found

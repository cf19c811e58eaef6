"""Score rows name their series by a small integer (#49): the binding, scorer, version, status,
judge model, run kind, service, agent and model a row repeated as text become one row of
``score_series`` and the score's ``series_id``.

The four indexes that repeated a name beside each row's time (binding, scorer, agent, status)
become one on ``(series_id, created_at)``; ``score_series`` is indexed on the names the reads
filter by. ``scores`` is copied into its new form (on PostgreSQL its columns ordered 8-byte,
4-byte, then variable, so no row pads between them): the series are read once (``SELECT
DISTINCT``), keyed as the store keys them (:func:`~tracescore.store.score_series.series_key`),
and each row finds its series by its names (SQLite: a function of this session holding the
series in a dict; PostgreSQL: a hash join, a NULL name compared as a text longer than any name
column holds). A reason becomes its packed form (``store/packed_text.py``): compressed on
SQLite, kept plain behind its tag on PostgreSQL (which has no zstandard in SQL; rows written
after the upgrade are compressed). The old table is dropped and the copy renamed, its indexes made again. SQLite
frees the old pages only to later rows until ``VACUUM`` (``tracescore vacuum``).

There is no downgrade: a database is never downgraded (``store/migrate.py``).

Revision ID: 0024_score_series
Revises: 0023_compact_spans_traces
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa
from alembic import op

from tracescore.store.packed_text import pack_text
from tracescore.store.score_series import NAMES, series_key

revision = "0024_score_series"
down_revision = "0023_compact_spans_traces"
branch_labels = None
depends_on = None

_NULLABLE = ("judge_model", "service", "agent", "model")
_LENGTHS = {
    "binding": 100,
    "scorer_id": 200,
    "scorer_version": 50,
    "status": 20,
    "judge_model": 200,
    "run_kind": 10,
    "service": 200,
    "agent": 200,
    "model": 200,
}
_NO_NAME = "\x01" * 201
"""What a NULL name is compared as in PostgreSQL's join: longer than any name column holds."""
_KEPT = (
    "score",
    "cost_usd",
    "latency_ms",
    "created_at",
    "updated_at",
    "input_tokens",
    "output_tokens",
    "conversation_turns",
    "id",
    "trace_id",
    "span_id",
    "label",
    "reason",
    "error",
    "steps",
    "conversation_id",
)
"""The score columns that stay, in the new table's order (``series_id`` after the 8-byte ones)."""


def _scores_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("score", sa.Float()),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("conversation_turns", sa.Integer()),
        sa.Column("id", sa.LargeBinary(), primary_key=True),
        sa.Column("trace_id", sa.LargeBinary(), nullable=False),
        sa.Column("span_id", sa.LargeBinary(), nullable=False),
        sa.Column("label", sa.String(100)),
        sa.Column("reason", sa.LargeBinary()),
        sa.Column("error", sa.Text()),
        sa.Column("steps", sa.LargeBinary()),
        sa.Column("conversation_id", sa.String(200)),
    ]


def _series_table() -> None:
    op.create_table(
        "score_series",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key", sa.LargeBinary(), nullable=False, unique=True),
        *(sa.Column(name, sa.String(_LENGTHS[name]), nullable=name in _NULLABLE) for name in NAMES),
    )
    for name, column in (
        ("ix_score_series_binding", "binding"),
        ("ix_score_series_scorer", "scorer_id"),
        ("ix_score_series_agent", "agent"),
        ("ix_score_series_status", "status"),
    ):
        op.create_index(name, "score_series", [column])


def _fill_series() -> dict[tuple[Any, ...], int]:
    """Every distinct combination of names in ``scores`` as a series; their ids by names."""
    bind = op.get_bind()
    names = ", ".join(NAMES)
    found = [tuple(row) for row in bind.exec_driver_sql(f"SELECT DISTINCT {names} FROM scores")]
    series = sa.table("score_series", sa.column("key"), *(sa.column(name) for name in NAMES))
    if found:
        bind.execute(
            series.insert(),
            [
                {"key": series_key(row)} | dict(zip(NAMES, row, strict=True))
                for row in sorted(found, key=lambda row: tuple(str(name) for name in row))
            ],
        )
    ids = bind.exec_driver_sql(f"SELECT {names}, id FROM score_series")
    return {tuple(row[:-1]): int(row[-1]) for row in ids}


def _pack(reason: str | None) -> bytes | None:
    return None if reason is None else pack_text(reason)


def _indexes() -> None:
    op.create_index("ix_scores_series_created", "scores", ["series_id", "created_at"])
    op.create_index("ix_scores_created", "scores", ["created_at", "series_id"])
    op.create_index("ix_scores_trace", "scores", ["trace_id"])
    op.create_index(
        "ix_scores_conversation",
        "scores",
        ["conversation_id"],
        sqlite_where=sa.text("conversation_id IS NOT NULL"),
        postgresql_where=sa.text("conversation_id IS NOT NULL"),
    )


def upgrade() -> None:
    bind = op.get_bind()
    _series_table()
    ids = _fill_series()
    op.create_table("scores_converted", *_scores_columns())
    kept = ", ".join(_KEPT)
    sqlite = bind.dialect.name == "sqlite"
    reason = (
        "ts_pack_text(s.reason)" if sqlite else "'\\x00'::bytea || convert_to(s.reason, 'UTF8')"
    )
    source = ", ".join(reason if name == "reason" else f"s.{name}" for name in _KEPT)
    if sqlite:
        raw = bind.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        raw.create_function("ts_series", len(NAMES), lambda *names: ids[names], deterministic=True)
        raw.create_function("ts_pack_text", 1, _pack, deterministic=True)
        op.execute(
            f"INSERT INTO scores_converted ({kept}, series_id) "
            f"SELECT {source}, ts_series({', '.join(f's.{name}' for name in NAMES)}) FROM scores s"
        )
    else:
        same = " AND ".join(
            f"coalesce(s.{name}, '{_NO_NAME}') = coalesce(n.{name}, '{_NO_NAME}')"
            if name in _NULLABLE
            else f"s.{name} = n.{name}"
            for name in NAMES
        )
        op.execute(
            f"INSERT INTO scores_converted ({kept}, series_id) "
            f"SELECT {source}, n.id FROM scores s JOIN score_series n ON {same}"
        )
    op.drop_table("scores")
    op.rename_table("scores_converted", "scores")
    if bind.dialect.name == "postgresql":
        op.execute("ALTER TABLE scores RENAME CONSTRAINT scores_converted_pkey TO scores_pkey")
    _indexes()


def downgrade() -> None:
    raise NotImplementedError("0024_score_series has no downgrade (see the module)")

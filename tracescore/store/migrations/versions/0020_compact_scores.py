"""Compact score rows (#49): ids as bytes, times as integers, long steps compressed.

``scores``, ``sampling_decisions`` and ``sampling_tallies`` kept their hex ids as text (32 and
16 characters, twice their bytes) and their times as datetimes (26 characters of text on
SQLite), in the rows and again in every index holding them. They become:

- ids (``id``, ``trace_id``, ``span_id``) their bytes (``BLOB`` / ``bytea``,
  ``column_types.HexId``);
- times (``created_at``, ``updated_at``, ``minute``) integer microseconds since the epoch
  (``column_types.UtcTime``);
- ``steps`` bytes: JSON text, zlib-compressed from 200 bytes (``column_types.PackedJSON``): a
  judge's prompts and verdicts and ``consistency``'s checks, the rows' largest values.

PostgreSQL converts each table with one ``ALTER TABLE`` (one rewrite, indexes rebuilt), then
compresses the long steps in batches in Python (it has no zlib in SQL). SQLite cannot change a
column's type: each table is copied into its new form, with the conversions as Python functions
registered on the connection, and its indexes made again.

A hex id that is not hex cannot be stored as bytes: such a row (no collector ever wrote one)
fails the upgrade, naming the table, rather than being dropped. The downgrade converts back.

Revision ID: 0020_compact_scores
Revises: 0019_packed_spans
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

from tracescore.store.column_types import PACK_FROM, pack_json, unpack_json, utc_micros

revision = "0020_compact_scores"
down_revision = "0019_packed_spans"
branch_labels = None
depends_on = None

IDS = {"scores": ("id", "trace_id", "span_id"), "sampling_decisions": ("id", "trace_id", "span_id")}
TIMES = {
    "scores": ("created_at", "updated_at"),
    "sampling_decisions": ("created_at",),
    "sampling_tallies": ("minute",),
}
INDEXES = {
    "scores": (
        ("ix_scores_binding_created", ("binding", "created_at")),
        ("ix_scores_scorer_created", ("scorer_id", "created_at")),
        ("ix_scores_created", ("created_at",)),
        ("ix_scores_trace", ("trace_id",)),
        ("ix_scores_agent_created", ("agent", "created_at")),
        ("ix_scores_status_created", ("status", "created_at")),
    ),
    "sampling_decisions": (
        ("ix_sampling_binding_created", ("binding", "created_at")),
        ("ix_sampling_created", ("created_at",)),
    ),
    "sampling_tallies": (),
}
STEPS_BATCH = 2_000


def _columns(table: str, compact: bool) -> list[sa.Column[Any]]:
    """The table's columns, in their compact form or their earlier one."""
    hex_id = sa.LargeBinary() if compact else None
    moment: sa.types.TypeEngine[Any] = sa.BigInteger() if compact else sa.DateTime()

    def hexid(name: str, length: int, **kw: Any) -> sa.Column[Any]:
        return sa.Column(name, hex_id if compact else sa.String(length), nullable=False, **kw)

    if table == "sampling_tallies":
        return [
            sa.Column("binding", sa.String(100), primary_key=True),
            sa.Column("minute", moment, primary_key=True),
            sa.Column("unsampled", sa.BigInteger(), nullable=False),
        ]
    if table == "sampling_decisions":
        return [
            hexid("id", 32, primary_key=True),
            hexid("trace_id", 32),
            hexid("span_id", 16),
            sa.Column("binding", sa.String(100), nullable=False),
            sa.Column("sampled", sa.Boolean(), nullable=False),
            sa.Column("created_at", moment, nullable=False),
        ]
    return [
        hexid("id", 32, primary_key=True),
        hexid("trace_id", 32),
        hexid("span_id", 16),
        sa.Column("binding", sa.String(100), nullable=False),
        sa.Column("scorer_id", sa.String(200), nullable=False),
        sa.Column("scorer_version", sa.String(50), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("score", sa.Float()),
        sa.Column("label", sa.String(100)),
        sa.Column("reason", sa.Text()),
        sa.Column("error", sa.Text()),
        sa.Column("steps", sa.LargeBinary() if compact else sa.JSON()),
        sa.Column("judge_model", sa.String(200)),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("run_kind", sa.String(10), nullable=False),
        sa.Column("service", sa.String(200)),
        sa.Column("agent", sa.String(200)),
        sa.Column("model", sa.String(200)),
        sa.Column("conversation_id", sa.String(200)),
        sa.Column("conversation_turns", sa.Integer()),
        sa.Column("created_at", moment, nullable=False),
        sa.Column("updated_at", moment, nullable=False),
    ]


# --- conversions, as SQLite functions (and PostgreSQL's steps pass) ----------------------------


def _unhex(table: str) -> Callable[[str | None], bytes | None]:
    def convert(value: str | None) -> bytes | None:
        if value is None:
            return None
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise ValueError(f"{table}: an id that is not hex: {value[:64]!r}") from None

    return convert


def _micros(value: str | None) -> int | None:
    return None if value is None else utc_micros(datetime.fromisoformat(value))


def _pack(value: str | bytes | None) -> bytes | None:
    return None if value is None else pack_json(orjson.loads(value))


def _hex(value: bytes | None) -> str | None:
    return None if value is None else bytes(value).hex()


def _time_text(value: int | None) -> str | None:
    """Microseconds as SQLite's datetime text (``YYYY-MM-DD HH:MM:SS.ffffff``)."""
    if value is None:
        return None
    moment = datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def _unpack(value: bytes | None) -> str | None:
    return None if value is None else orjson.dumps(unpack_json(value)).decode()


def _register(functions: dict[str, Callable[[Any], Any]]) -> None:
    raw = op.get_bind().connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    for name, function in functions.items():
        raw.create_function(name, 1, function, deterministic=True)


def _copy_sqlite(table: str, compact: bool, convert: dict[str, str]) -> None:
    """Copy ``table`` into its other form, each column through ``convert``'s SQL function."""
    new = f"{table}_converted"
    columns = _columns(table, compact)
    op.create_table(new, *columns)
    names = [column.name for column in columns]
    values = ", ".join(f"{convert[name]}({name})" if name in convert else name for name in names)
    op.execute(f"INSERT INTO {new} ({', '.join(names)}) SELECT {values} FROM {table}")
    op.drop_table(table)
    op.rename_table(new, table)
    _indexes(table)


def _indexes(table: str) -> None:
    for name, columns in INDEXES[table]:
        op.create_index(name, table, list(columns))
    if table == "scores":
        op.create_index(
            "ix_scores_conversation",
            "scores",
            ["conversation_id"],
            sqlite_where=sa.text("conversation_id IS NOT NULL"),
            postgresql_where=sa.text("conversation_id IS NOT NULL"),
        )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _register(
            {"ts_micros": _micros, "ts_pack": _pack}
            | {f"ts_unhex_{table}": _unhex(table) for table in IDS}
        )
        for table in TIMES:
            convert = dict.fromkeys(TIMES[table], "ts_micros")
            convert |= dict.fromkeys(IDS.get(table, ()), f"ts_unhex_{table}")
            if table == "scores":
                convert["steps"] = "ts_pack"
            _copy_sqlite(table, True, convert)
        return
    for table in TIMES:
        changes = [
            f"ALTER COLUMN {name} TYPE bytea USING decode({name}, 'hex')"
            for name in IDS.get(table, ())
        ] + [
            f"ALTER COLUMN {name} TYPE bigint USING (extract(epoch FROM {name}) * 1000000)::bigint"
            for name in TIMES[table]
        ]
        if table == "scores":
            changes.append("ALTER COLUMN steps TYPE bytea USING convert_to(steps::text, 'UTF8')")
        op.execute(f"ALTER TABLE {table} {', '.join(changes)}")
    _pack_long_steps()


def _pack_long_steps() -> None:
    """PostgreSQL's converted steps are their JSON text: the long ones are compressed here,
    in batches along the primary key."""
    bind = op.get_bind()
    scores = sa.table(
        "scores", sa.column("id", sa.LargeBinary()), sa.column("steps", sa.LargeBinary())
    )
    after = b""
    update = (
        scores.update()
        .where(scores.c.id == sa.bindparam("row_id"))
        .values(steps=sa.bindparam("packed"))
    )
    while True:
        rows = bind.execute(
            sa.select(scores.c.id, scores.c.steps)
            .where(scores.c.id > after, sa.func.octet_length(scores.c.steps) >= PACK_FROM)
            .order_by(scores.c.id)
            .limit(STEPS_BATCH)
        ).all()
        if not rows:
            return
        bind.execute(
            update, [{"row_id": row_id, "packed": _pack(bytes(steps))} for row_id, steps in rows]
        )
        after = rows[-1][0]


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _register({"ts_hex": _hex, "ts_time_text": _time_text, "ts_unpack": _unpack})
        for table in TIMES:
            convert = dict.fromkeys(TIMES[table], "ts_time_text")
            convert |= dict.fromkeys(IDS.get(table, ()), "ts_hex")
            if table == "scores":
                convert["steps"] = "ts_unpack"
            _copy_sqlite(table, False, convert)
        return
    bind = op.get_bind()
    scores = sa.table(
        "scores", sa.column("id", sa.LargeBinary()), sa.column("steps", sa.LargeBinary())
    )
    packed = bind.execute(
        sa.select(scores.c.id, scores.c.steps).where(sa.func.substr(scores.c.steps, 1, 1) == b"x")
    ).all()
    if packed:
        bind.execute(
            scores.update()
            .where(scores.c.id == sa.bindparam("row_id"))
            .values(steps=sa.bindparam("text")),
            [{"row_id": row_id, "text": _unpack(steps).encode()} for row_id, steps in packed],  # type: ignore[union-attr]
        )
    for table in TIMES:
        changes = [
            f"ALTER COLUMN {name} TYPE varchar({32 if name != 'span_id' else 16}) "
            f"USING encode({name}, 'hex')"
            for name in IDS.get(table, ())
        ] + [
            f"ALTER COLUMN {name} TYPE timestamp with time zone USING to_timestamp({name} / 1000000.0)"
            for name in TIMES[table]
        ]
        if table == "scores":
            changes.append("ALTER COLUMN steps TYPE json USING convert_from(steps, 'UTF8')::json")
        op.execute(f"ALTER TABLE {table} {', '.join(changes)}")

"""Compact column types (``store/column_types.py``) on both real databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, select
from sqlalchemy.exc import StatementError

from tracescore.store.column_types import HexId, PackedJSON, UtcTime, hex_text


def _ids_table() -> Table:
    return Table(
        "column_type_ids",
        MetaData(),
        Column("n", Integer, primary_key=True),
        Column("trace_id", HexId, nullable=True),
    )


def test_hex_ids_round_trip_as_bytes(empty_db_url: str) -> None:
    table = _ids_table()
    engine = create_engine(empty_db_url)
    table.metadata.create_all(engine)
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with engine.begin() as connection:
        connection.execute(
            table.insert(), [{"n": 1, "trace_id": trace_id}, {"n": 2, "trace_id": None}]
        )
        assert (
            connection.execute(select(table.c.n).where(table.c.trace_id == trace_id)).scalar_one()
            == 1
        )
        assert connection.execute(select(table.c.trace_id).order_by(table.c.n)).scalars().all() == [
            trace_id,
            None,
        ]
        raw = connection.exec_driver_sql("SELECT trace_id FROM column_type_ids WHERE n = 1")
        assert bytes(raw.scalar_one()) == bytes.fromhex(trace_id)  # 16 bytes, not 32 characters
    engine.dispose()


def test_a_non_hex_id_is_refused_naming_it(sqlite_url: str) -> None:
    table = _ids_table()
    engine = create_engine(sqlite_url)
    table.metadata.create_all(engine)
    with (
        engine.begin() as connection,
        pytest.raises(StatementError, match="not a hex id: 'trace-1'"),
    ):
        connection.execute(table.insert(), [{"n": 1, "trace_id": "trace-1"}])
    engine.dispose()


def _compact_table() -> Table:
    return Table(
        "column_type_compact",
        MetaData(),
        Column("n", Integer, primary_key=True),
        Column("trace_id", HexId, nullable=True),
        Column("at", UtcTime, nullable=True),
        Column("document", PackedJSON, nullable=True),
        Column("text_id", String(32), nullable=True),
    )


def test_times_are_integers_read_back_aware_and_documents_compressed_once_long(
    empty_db_url: str,
) -> None:
    table = _compact_table()
    engine = create_engine(empty_db_url)
    table.metadata.create_all(engine)
    moment = datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=UTC)
    in_paris = moment.astimezone(timezone(timedelta(hours=1)))
    long = {"prompt": "Rate the answer. " * 40, "calls": [1, 2, 3]}
    with engine.begin() as connection:
        connection.execute(
            table.insert(),
            [
                {"n": 1, "at": in_paris, "document": long},
                {"n": 2, "at": moment.replace(tzinfo=None), "document": {"short": True}},
                {"n": 3, "at": None, "document": None},
            ],
        )
        read = connection.execute(select(table.c.at, table.c.document).order_by(table.c.n)).all()
        later = list(
            connection.execute(
                select(table.c.n).where(table.c.at >= moment - timedelta(microseconds=1))
            ).scalars()
        )
        raw = connection.exec_driver_sql(
            "SELECT at, document FROM column_type_compact ORDER BY n"
        ).all()
    engine.dispose()
    assert [tuple(row) for row in read] == [(moment, long), (moment, {"short": True}), (None, None)]
    assert read[0].at.tzinfo == UTC
    assert sorted(later) == [1, 2]  # a naive time is UTC; an offset one is the same instant
    assert raw[0].at == raw[1].at == 1_796_518_923_456_789
    assert bytes(raw[0].document)[:1] == b"x" and len(raw[0].document) < len(long["prompt"]) // 4
    assert bytes(raw[1].document) == b'{"short":true}'


def test_a_text_id_table_joins_on_the_bytes_hex_text(empty_db_url: str) -> None:
    table = _compact_table()
    engine = create_engine(empty_db_url)
    table.metadata.create_all(engine)
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    with engine.begin() as connection:
        connection.execute(
            table.insert(),
            [
                {"n": 1, "trace_id": trace_id, "text_id": trace_id},
                {"n": 2, "trace_id": "ab" * 16, "text_id": "cd" * 16},
            ],
        )
        matched = connection.execute(
            select(table.c.n).where(table.c.text_id == hex_text(table.c.trace_id))
        ).scalars()
        assert list(matched) == [1]
    engine.dispose()

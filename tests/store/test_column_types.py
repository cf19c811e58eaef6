"""Compact column types (``store/column_types.py``) on both real databases."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, select
from sqlalchemy.exc import StatementError

from tracescore.store.column_types import HexId


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

"""table_of: the typed way every store reaches a row class's Core table."""

import pytest
from sqlalchemy import Table
from sqlmodel import SQLModel

from tracescore.store.table_of import table_of
from tracescore.store.tables import JournalRow, SpanRow


def test_a_row_class_gives_the_table_it_declares() -> None:
    spans = table_of(SpanRow)
    assert isinstance(spans, Table)
    assert spans.name == "spans"
    assert {column.name for column in spans.primary_key} == {"trace_id", "span_id"}
    assert spans is SQLModel.metadata.tables["spans"]


def test_the_journal_body_column_is_the_one_its_storage_rule_applies_to() -> None:
    assert table_of(JournalRow).c.body.nullable is False


def test_a_class_without_a_table_is_refused() -> None:
    class NotATable(SQLModel):
        name: str

    with pytest.raises(TypeError, match="NotATable is not mapped to a table"):
        table_of(NotATable)

"""A reason as the store keeps it (:mod:`tracescore.store.packed_text`): code scorers' reasons
shrink against the dictionary of their phrasings, any text comes back as it was written, and a
reason SQL matches by its start stays plain."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, insert, select

from tracescore.outcomes import FAILED_RUN_REASON
from tracescore.store.packed_text import PackedText, pack_text, starts_with, unpack_text

CODE_REASONS = [
    "the answer shares 37% of its character pairs with the question (a likeness of the two "
    "texts, not of the answer's quality)",
    "every check passed (grounding, contradiction, entities, non_answer, truncation, language, "
    "leak)",
    "all 6 keywords of the question are in the answer",
]


@pytest.mark.parametrize("reason", CODE_REASONS)
def test_a_code_scorers_reason_shrinks_to_half_or_less(reason: str) -> None:
    stored = pack_text(reason)

    assert unpack_text(stored) == reason
    assert len(stored) <= len(reason.encode()) / 2, (len(stored), len(reason))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "short",
        "La respuesta cita la política de devoluciones, pero inventa un número de pedido.",
        "回答は質問と関係がありません。" * 3,
        "a lone surrogate \udc80 and a NUL \x00 in a judge's words",
        "x" * 5000,
    ],
)
def test_any_text_comes_back_as_it_was_written(text: str) -> None:
    assert unpack_text(pack_text(text)) == text


def test_an_unknown_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown packed text format 9"):
        unpack_text(b"\x09abc")


def test_a_failed_runs_reason_stays_plain_so_sql_finds_it_by_its_start(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'reasons.db'}")
    table = Table(
        "reasons", MetaData(), Column("id", Integer, primary_key=True), Column("reason", PackedText)
    )
    table.metadata.create_all(engine)
    failed = f"{FAILED_RUN_REASON}: the weather tool timed out"
    with engine.begin() as connection:
        connection.execute(
            insert(table), [{"id": 1, "reason": failed}, {"id": 2, "reason": CODE_REASONS[0]}]
        )
        matched = list(
            connection.execute(
                select(table.c.id).where(starts_with(table.c.reason, FAILED_RUN_REASON))
            ).scalars()
        )
        read = {row.id: row.reason for row in connection.execute(select(table))}

    assert matched == [1]
    assert read == {1: failed, 2: CODE_REASONS[0]}

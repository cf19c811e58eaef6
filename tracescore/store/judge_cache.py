"""The verdict cache table: judge answers kept so identical judge work is never paid twice.

Rows are keyed by a digest of everything that determines the answer (scorer id and version,
judge model, instructions, rendered prompt and output schema), so every instance sharing the
database reuses them and they survive restarts. The judge's accepted text is stored rather than
a parsed object: it is re-validated against the step's schema when served.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from tracescore.store.aging import AgedRows
from tracescore.store.table_of import table_of


class JudgeVerdict(SQLModel, table=True):
    __tablename__ = "judge_verdicts"

    key: str = Field(primary_key=True, max_length=64)
    """sha256 hex digest of (scorer id, scorer version, model, instructions, prompt, schema)."""
    scorer_id: str = Field(index=True)
    scorer_version: str
    step: str
    model: str
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # Indexed: retention prunes the oldest verdicts first.
    created_at: datetime = Field(index=True, default_factory=lambda: datetime.now(UTC))


VERDICTS = table_of(JudgeVerdict)


# --- judge/cache: the verdict cache --------------------------------------------------------------


def verdict_database(url: str) -> Engine:
    """The database at ``url`` for a verdict cache of its own (not a running store's), its schema
    brought to this release's by the store's migrations like any store's: a cache no longer
    creates its table by itself, which left a database Alembic could not upgrade later."""
    from tracescore.store import migrate  # Alembic only where a cache opens its own database
    from tracescore.store.engine import make_engine
    from tracescore.store.metadata import store_metadata

    store_metadata()
    database = make_engine(url)
    migrate.upgrade(database)
    return database


def load_verdict(database: Engine, key: str) -> JudgeVerdict | None:
    with database.connect() as connection:
        row = connection.execute(select(VERDICTS).where(VERDICTS.c.key == key)).mappings().first()
    return None if row is None else JudgeVerdict.model_validate(dict(row))


def save_verdict(database: Engine, row: JudgeVerdict) -> None:
    """Store ``row`` unless a verdict of its key is stored already (another worker's, first)."""
    try:
        with database.begin() as connection:
            connection.execute(insert(VERDICTS), [row.model_dump()])
    except IntegrityError:
        pass


# --- offline/estimate: answers judges gave before ------------------------------------------------


def judged_with(database: Engine, scorer_id: str, limit: int) -> list[tuple[str, str]]:
    """The (scorer version, model) pairs the scorer's verdicts were given with, latest first."""
    with database.connect() as connection:
        rows = connection.execute(
            select(VERDICTS.c.scorer_version, VERDICTS.c.model)
            .where(VERDICTS.c.scorer_id == scorer_id)
            .group_by(VERDICTS.c.scorer_version, VERDICTS.c.model)
            .order_by(func.max(VERDICTS.c.created_at).desc())
            .limit(limit)
        )
        return [(version, model) for version, model in rows]


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    key: str
    text: str
    output_tokens: int


def stored_answers(database: Engine, keys: Sequence[str]) -> list[StoredAnswer]:
    """The verdicts stored under any of ``keys``, in no particular order."""
    with database.connect() as connection:
        rows = connection.execute(
            select(VERDICTS.c.key, VERDICTS.c.text, VERDICTS.c.output_tokens).where(
                VERDICTS.c.key.in_(list(keys))
            )
        )
        return [StoredAnswer(*row) for row in rows]


def paid_output_tokens(connection: Connection, scorer_id: str, step: str, limit: int) -> list[int]:
    """Output tokens of the step's latest ``limit`` paid verdicts, newest first."""
    return list(
        connection.scalars(
            select(VERDICTS.c.output_tokens)
            .where(
                (VERDICTS.c.scorer_id == scorer_id)
                & (VERDICTS.c.step == step)
                & (VERDICTS.c.output_tokens > 0)
            )
            .order_by(VERDICTS.c.created_at.desc())
            .limit(limit)
        )
    )


# --- retention/prune ---------------------------------------------------------------------------

VERDICTS_BY_AGE = AgedRows(VERDICTS, ("key",), "created_at")

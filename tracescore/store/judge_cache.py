"""The verdict cache table: judge answers kept so identical judge work is never paid twice.

Rows are keyed by a digest of everything that determines the answer (scorer id and version,
judge model, instructions, rendered prompt and output schema), so every instance sharing the
database reuses them and they survive restarts. The judge's accepted text is stored rather than
a parsed object: it is re-validated against the step's schema when served.
"""

from __future__ import annotations

from datetime import UTC, datetime

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


# --- retention/prune ---------------------------------------------------------------------------

VERDICTS_BY_AGE = AgedRows(table_of(JudgeVerdict), ("key",), "created_at")

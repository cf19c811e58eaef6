"""The ``rescore_jobs`` table: per binding, the scorer fingerprint last seen and the re-score
job it started (``rescore_on_change``, :mod:`tracescore.pipeline.rescore`).

One row per binding. Its ``fingerprint`` is the scorer version, rendered prompts and judge model
the binding had when the row was last written; a start that finds another one samples runs the
old version scored into ``runs`` and works through them, ``position`` and the counts advancing
in the same transaction as the scores they stand for. So a restart resumes at ``position`` and
a start that finds its own fingerprint ``done`` does nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from sqlalchemy import Column, Connection, Row, Text, select, update
from sqlmodel import Field, SQLModel

from tracescore.store.dialect import dialect_insert
from tracescore.store.table_of import table_of


class RescoreJobRow(SQLModel, table=True):
    """A binding's recorded scorer fingerprint and the re-score of its latest change."""

    __tablename__ = "rescore_jobs"

    binding: str = Field(primary_key=True, max_length=100)
    fingerprint: str = Field(max_length=64)
    scorer_version: str = Field(max_length=50)
    """The version the binding's scorer stamps on live scores under this fingerprint."""
    state: str = Field(max_length=20)
    """``recorded`` (the first fingerprint seen: nothing to compare), ``running`` or ``done``."""
    old_version: str | None = Field(default=None, max_length=50)
    new_version: str | None = Field(default=None, max_length=60)
    """The version the re-scored rows are stored under (beside ``old_version``'s)."""
    runs: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    """The sampled runs, ``[[trace_id, span_id], ...]`` as JSON, in scoring order."""
    position: int = 0
    """Runs of ``runs`` done (scored, skipped or missing)."""
    rescored: int = 0
    errored: int = 0
    skipped_budget: int = 0
    skipped_rate: int = 0
    missing: int = 0
    """Runs whose spans were gone (retention) or no longer held the run."""
    estimate_usd: float = 0.0
    started_at: float = 0.0
    updated_at: float = 0.0


RESCORE_JOBS = table_of(RescoreJobRow)
COUNTS = ("rescored", "errored", "skipped_budget", "skipped_rate", "missing")
"""The per-outcome counts a job keeps, each a column."""


@dataclass
class RescoreJob:
    """A ``rescore_jobs`` row, its runs decoded."""

    binding: str
    fingerprint: str
    scorer_version: str
    state: str
    old_version: str | None = None
    new_version: str | None = None
    runs: list[tuple[str, str]] = field(default_factory=list)
    position: int = 0
    rescored: int = 0
    errored: int = 0
    skipped_budget: int = 0
    skipped_rate: int = 0
    missing: int = 0
    estimate_usd: float = 0.0
    started_at: float = 0.0
    updated_at: float = 0.0

    def summary(self) -> dict[str, object]:
        """The job as the API and the compare page show it (without the run list)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "runs"}
        return {**shown, "sampled": len(self.runs)}


def _job(row: Row[Any]) -> RescoreJob:
    values = dict(row._mapping)
    values["runs"] = [(trace, span) for trace, span in json.loads(values["runs"])]
    return RescoreJob(**values)


def rescore_job(connection: Connection, binding: str) -> RescoreJob | None:
    """The binding's row, or None when no start with ``rescore_on_change`` has seen it."""
    row = connection.execute(select(RESCORE_JOBS).where(RESCORE_JOBS.c.binding == binding)).first()
    return _job(row) if row is not None else None


def rescore_jobs(connection: Connection, bindings: Sequence[str] | None = None) -> list[RescoreJob]:
    """Every binding's row (or those of ``bindings``), by binding name."""
    query = select(RESCORE_JOBS).order_by(RESCORE_JOBS.c.binding)
    if bindings is not None:
        query = query.where(RESCORE_JOBS.c.binding.in_(list(bindings)))
    return [_job(row) for row in connection.execute(query)]


def save_job(connection: Connection, job: RescoreJob) -> None:
    """Write the whole row (only the holder of the binding's re-score lease writes it)."""
    values = {f.name: getattr(job, f.name) for f in fields(job)}
    values["runs"] = json.dumps([list(run) for run in job.runs])
    statement = dialect_insert(connection)(RESCORE_JOBS).values(**values)
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["binding"],
            set_={name: value for name, value in values.items() if name != "binding"},
        )
    )


def advance_job(connection: Connection, job: RescoreJob, done_before: int) -> bool:
    """Write the job's progress if its row is still at ``done_before`` runs done under the same
    fingerprint; False when another process moved it on (it took the job over when this one's
    lease lapsed), and then nothing is written."""
    values = {
        f.name: getattr(job, f.name) for f in fields(job) if f.name not in ("binding", "runs")
    }
    c = RESCORE_JOBS.c
    statement = (
        update(RESCORE_JOBS)
        .where(
            c.binding == job.binding, c.fingerprint == job.fingerprint, c.position == done_before
        )
        .values(**values)
    )
    return connection.execute(statement).rowcount == 1

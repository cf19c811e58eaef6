"""The compare page and ``GET /api/compare``: ``tracescore compare`` for two scorer versions of
a binding, and the runs they disagree on most.

Without versions, a binding whose scorer changed and re-scored a sample of its runs
(``rescore_on_change``) is compared as its re-score left it: the old version (A) against the
re-scored one (B), with the re-score's progress and skips; any other binding, by its two most
recently scored versions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tracescore.offline.compare import Agreement, compare_versions
from tracescore.store import Connection, Database, connect
from tracescore.store.rescores import RescoreJob, rescore_jobs
from tracescore.store.score_reads import Disagreement, ScorerVersion, disagreements, scorer_versions

COMPARE_DAYS = 30
"""Versions scored within this many days are offered for comparison."""
DISAGREEMENTS = 25
"""Runs the page lists that the two versions scored furthest apart."""


@dataclass
class Comparison:
    """Which binding and versions are compared, and what is known of them."""

    versions: dict[str, list[ScorerVersion]]
    """Each binding's versions scored within :data:`COMPARE_DAYS`, oldest newest score first."""
    binding: str | None
    version_a: str | None
    version_b: str | None
    rescore: RescoreJob | None
    """The binding's re-score job, when it has one that re-scored under version B."""


def choose(
    connection: Connection, binding: str | None, version_a: str | None, version_b: str | None
) -> Comparison:
    """The binding and versions to compare: those given, else (see the module) a re-score's
    old and new versions, else the two most recently scored."""
    known = scorer_versions(connection, datetime.now(UTC) - timedelta(days=COMPARE_DAYS))
    versions: dict[str, list[ScorerVersion]] = defaultdict(list)
    for entry in known:
        versions[entry["binding"]].append(entry)
    jobs = {job.binding: job for job in rescore_jobs(connection) if job.new_version is not None}
    if binding is None:
        binding = next(iter(jobs), None)
        binding = binding or next(
            (name for name, found in versions.items() if len(found) > 1), None
        )
        binding = binding or next(iter(versions), None)
    job = jobs.get(binding or "")
    if version_a is None and version_b is None:
        recent = [entry["version"] for entry in versions.get(binding or "", [])]
        if job is not None:
            version_a, version_b = job.old_version, job.new_version
        elif len(recent) > 1:
            version_a, version_b = recent[-2], recent[-1]
    if job is not None and job.new_version != version_b:
        job = None
    return Comparison(dict(versions), binding, version_a, version_b, job)


def agreement_of(engine: Database, chosen: Comparison, threshold: float | None) -> Agreement | None:
    """The paired figures of the chosen versions (None when two are not chosen)."""
    if not (chosen.binding and chosen.version_a and chosen.version_b):
        return None
    return compare_versions(engine, chosen.binding, chosen.version_a, chosen.version_b, threshold)


def disagreeing(
    connection: Connection, chosen: Comparison, limit: int, offset: int = 0
) -> list[Disagreement]:
    """The chosen versions' paired runs, furthest apart first."""
    if not (chosen.binding and chosen.version_a and chosen.version_b):
        return []
    return disagreements(
        connection, chosen.binding, chosen.version_a, chosen.version_b, limit, offset
    )


def compare_page(
    engine: Database,
    binding: str | None,
    version_a: str | None,
    version_b: str | None,
    threshold: float | None,
) -> dict[str, Any]:
    """The page's data: the versions offered, the chosen pair's agreement, the runs they
    disagree on most and the binding's re-score."""
    with connect(engine) as connection:
        chosen = choose(connection, binding, version_a, version_b)
        rows = disagreeing(connection, chosen, DISAGREEMENTS)
    return {
        "versions": chosen.versions,
        "binding": chosen.binding,
        "version_a": chosen.version_a,
        "version_b": chosen.version_b,
        "threshold": threshold,
        "agreement": agreement_of(engine, chosen, threshold),
        "rows": rows,
        "rescore": chosen.rescore.summary() if chosen.rescore is not None else None,
        "compare_days": COMPARE_DAYS,
    }

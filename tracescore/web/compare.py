"""The compare page: ``tracescore compare`` for two scorer versions of a binding, and the runs
they disagree on most.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from tracescore.offline.compare import compare_versions
from tracescore.store import Database
from tracescore.store.score_reads import ScorerVersion, disagreements, scorer_versions

COMPARE_DAYS = 30
"""Versions scored within this many days are offered for comparison."""
DISAGREEMENTS = 25
"""Runs the page lists that the two versions scored furthest apart."""


def compare_page(
    engine: Database,
    binding: str | None,
    version_a: str | None,
    version_b: str | None,
    threshold: float | None,
) -> dict[str, Any]:
    """``tracescore compare`` for two versions of a binding, and the runs they disagree on most.

    Without versions, the binding's two most recently scored versions are compared (older as A).
    """
    now = datetime.now(UTC)
    with engine.connect() as connection:
        known = scorer_versions(connection, now - timedelta(days=COMPARE_DAYS))
        versions: dict[str, list[ScorerVersion]] = defaultdict(list)
        for entry in known:
            versions[entry["binding"]].append(entry)  # oldest newest score first
        if binding is None:
            binding = next((name for name, found in versions.items() if len(found) > 1), None)
            binding = binding or next(iter(versions), None)
        recent = [entry["version"] for entry in versions.get(binding or "", [])]
        if version_a is None and version_b is None and len(recent) > 1:
            version_a, version_b = recent[-2], recent[-1]
        rows = (
            disagreements(connection, binding, version_a, version_b, DISAGREEMENTS)
            if binding and version_a and version_b
            else []
        )
    agreement = (
        compare_versions(engine, binding, version_a, version_b, threshold)
        if binding and version_a and version_b
        else None
    )
    return {
        "versions": dict(versions),
        "binding": binding,
        "version_a": version_a,
        "version_b": version_b,
        "threshold": threshold,
        "agreement": agreement,
        "rows": rows,
        "compare_days": COMPARE_DAYS,
    }

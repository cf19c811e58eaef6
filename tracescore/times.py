"""The one way the REST API writes a time: RFC 3339 in UTC with ``Z``.

Apart from :mod:`tracescore.restapi` because the monitor's alert payloads and the feedback
reports write times too, and modules the scoring processes load must not load FastAPI.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def utc_text(moment: datetime | float | None) -> str | None:
    """A time as every ``/api/v1`` answer writes it (``2026-05-04T12:00:00.250000Z``), from
    epoch seconds (the tables' float columns) or a datetime (naive ones are UTC: SQLite hands
    stored times back so). One writer, so scores, feedback, summaries and traces no longer
    answer in three forms."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def with_utc_text(row: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """``row`` with its epoch-seconds fields ``names`` (``first_seen``...) as :func:`utc_text`:
    the tables keep floats, the answers say times one way."""
    return {**row, **{name: utc_text(row[name]) for name in names}}

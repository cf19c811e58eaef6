"""The overview's time range: presets, a custom range, the default chosen from the data, buckets.

A chart is only readable with enough points to show a trend and few enough to tell them apart,
so the bucket follows the range (30 to 120 points) instead of being fixed. The default range
follows the data: two minutes of demo traffic drawn over 24 hours would be one dot per scorer,
so the default is the shortest preset that holds everything scored in the last day.
Everything a view shows is in its URL (:class:`ViewState`), so a view can be shared.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

NICE_BUCKETS = [
    timedelta(seconds=s)
    for s in (
        1,
        2,
        5,
        10,
        15,
        30,
        60,
        120,
        300,
        600,
        900,
        1800,
        3600,
        7200,
        10800,
        21600,
        43200,
        86400,
    )
]
MAX_AUTO_POINTS = 120
"""The automatic bucket is the smallest round size giving at most this many points; consecutive
round sizes differ by at most 2.5×, so a chart gets 48 to 120 points (fewer only for ranges
under two minutes, at one point per second)."""
MAX_POINTS = 1440
"""The most points an explicit ``?bucket=`` may ask for."""
PRESETS: dict[str, timedelta] = {
    "5m": timedelta(minutes=5),
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}
RECENT = timedelta(hours=24)
"""Data older than this does not make the default range longer than 24 h."""
SPLITS = {"agent": "agent", "model": "model", "service": "service", "version": "scorer_version"}
"""``?split=`` values and the score column each one draws a line per value of."""


def pick_bucket(length: timedelta) -> timedelta:
    """The smallest round bucket that keeps a chart at :data:`MAX_AUTO_POINTS` points or fewer."""
    return next((b for b in NICE_BUCKETS if length / b <= MAX_AUTO_POINTS), NICE_BUCKETS[-1])


def default_window(now: datetime, oldest_recent: datetime | None, any_older: bool) -> str:
    """The preset shown without ``?window=``: the shortest holding the last day's scores.

    ``oldest_recent`` is the oldest score of the last :data:`RECENT`; ``any_older`` says whether
    there are scores before that (then the data is not "all recent" and 24 h is shown). With no
    score in the last day but some in the last week, the week is shown.
    """
    if oldest_recent is None:
        return "7d" if any_older else "24h"
    if any_older:
        return "24h"
    age = now - oldest_recent
    return next(name for name, length in PRESETS.items() if length >= age or name == "24h")


@dataclass(frozen=True, slots=True)
class Window:
    """The charted range ``[since, until)`` and its bucket size; both ends on bucket edges."""

    since: datetime
    until: datetime
    bucket: timedelta

    @property
    def points(self) -> int:
        return round((self.until - self.since) / self.bucket)

    @classmethod
    def between(cls, since: datetime, until: datetime, bucket: timedelta | None) -> Window:
        """The range widened to whole buckets (the SQL groups by epoch-aligned buckets)."""
        if until <= since:
            raise ValueError("the range must end after it starts")
        bucket = bucket or pick_bucket(until - since)
        if bucket < timedelta(seconds=1) or bucket.microseconds:
            raise ValueError("a bucket is a whole number of seconds")
        size = bucket.total_seconds()
        start = since.timestamp() // size * size
        end = -(-until.timestamp() // size) * size
        if (end - start) / size > MAX_POINTS:
            raise ValueError(f"a chart has at most {MAX_POINTS} buckets")
        return cls(datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC), bucket)

    @classmethod
    def ending_now(
        cls, length: timedelta, bucket: timedelta | None, now: datetime | None = None
    ) -> Window:
        """``length`` up to now, ending on the next bucket edge so the last bucket is whole."""
        now = now or datetime.now(UTC)
        bucket = bucket or pick_bucket(length)
        size = max(1.0, bucket.total_seconds())
        end = datetime.fromtimestamp((now.timestamp() // size + 1) * size, UTC)
        return cls.between(end - length, end, bucket)


MOMENT_PATTERN = r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d)?Z?)?"
"""What the custom-range form's inputs take (the browser checks it before sending): a date,
or a date and a 24-hour time, in UTC."""


def parse_moment(text: str) -> datetime:
    """An ISO date or datetime (``2026-05-04 12:00``, ``2026-05-04T12:00``, ``…Z``); without an
    offset it is UTC.

    The custom-range form's inputs send no offset (they show 24-hour UTC times, as every time
    on the pages is); the page says they are UTC.
    """
    moment = datetime.fromisoformat(text.strip())
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def iso(moment: datetime) -> str:
    """A UTC time as URLs carry it: second precision, ``Z``, nothing that needs escaping."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class ViewState:
    """What the overview's URL says: range, bucket, split, focused binding and list filters."""

    window: str | None = None
    since: str | None = None
    until: str | None = None
    bucket: str | None = None
    split: str | None = None
    binding: str | None = None
    scorer: str | None = None
    agent: str | None = None
    model: str | None = None

    def url(self, path: str = "/", **changes: str | None) -> str:
        """This view with ``changes`` applied (None removes a parameter), as a same-site URL."""
        state = replace(self, **changes)
        params = {f.name: getattr(state, f.name) for f in fields(state)}
        query = urlencode({key: value for key, value in params.items() if value})
        return f"{path}?{query}" if query else path

    def preset(self, name: str) -> str:
        """This view over the preset ``name`` (a custom range and explicit bucket dropped)."""
        return self.url(window=name, since=None, until=None, bucket=None)

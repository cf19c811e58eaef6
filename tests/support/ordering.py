"""Test files in the order ``--dist loadfile`` hands them out: the heaviest first.

xdist gives each pytest process a whole file at a time, taking the next in collection order
whenever one finishes, so a heavy file collected late ran alone at the end while the other
processes sat idle (the suite's tail was one process finishing its servers' tests). Files are
put in order of the services and browsers their tests start (the ``e2e`` and ``browser``
markers, which cost seconds apiece where other tests cost milliseconds), most first, and the
rest after them as collected: the longest jobs first, the short ones filling in at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

HEAVY_MARKERS = ("e2e", "browser", "pg_cluster")
"""Markers of a test that starts a process or a cluster of its own."""


def heaviest_files_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: files by their count of heavy tests, most first (ties and
    files with none keep the collection's order); tests within a file keep theirs."""
    weight: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        first_seen.setdefault(path, len(first_seen))
        if any(item.get_closest_marker(name) for name in HEAVY_MARKERS):
            weight[path] += 1
    items.sort(key=lambda item: _rank(item.nodeid.split("::", 1)[0], weight, first_seen))


def _rank(path: str, weight: Counter[str], first_seen: dict[str, int]) -> Sequence[int]:
    return (-weight[path], first_seen[path])

"""A small time-limited memo for the dashboard's aggregates.

Open overview pages re-fetch themselves whenever scores arrive, and every viewer asks for the
same trends; the aggregates behind them read every score of the window, so they are computed
once per key and shared for a few seconds instead of once per refresh per viewer. While one
request recomputes an expired value, the others get the previous one rather than starting the
same slow queries again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

T = TypeVar("T")


class ExpiringCache:
    """Values kept for ``ttl`` seconds each; the least recently stored go beyond ``size``."""

    def __init__(self, size: int = 32, clock: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._computing: set[Hashable] = set()
        self._lock = threading.Lock()

    def get(self, key: Hashable, ttl: float, compute: Callable[[], T]) -> T:
        """The value of ``key`` if younger than ``ttl``, else ``compute()`` (stored).

        An expired value is still returned while another caller is computing its successor.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and (self._clock() - entry[0] < ttl or key in self._computing):
                # Stored by a ``compute`` for the same key: the caller's key names its type.
                return cast(T, entry[1])
            self._computing.add(key)
        try:
            value = compute()  # outside the lock: a slow query must not hold up other pages
        finally:
            with self._lock:
                self._computing.discard(key)
        with self._lock:
            # Aged from when it was ready: a compute slower than ``ttl`` is still reused.
            self._entries[key] = (self._clock(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

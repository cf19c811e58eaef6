"""Answers that every open tab asks for, computed once per interval and shared.

Each open page polls ``/ui/live`` every second and re-fetches itself whenever the version it
reads moves; under steady ingest that is every poll. Computed per request, 200 tabs meant 200
version queries a second and a fresh overview render per re-fetch, all in the process that
acknowledges ingest (acks p99 ×10 measured). Here a value is computed at most once per ``ttl``
by one request (in a thread or a reader process), while the others asking meanwhile await that
same computation on the event loop: no thread, query or render of their own.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class SharedValues:
    """Values kept ``ttl`` seconds each (aged from when they were ready), computed by one
    caller at a time per key; the least recently stored go beyond ``size``. For one event
    loop: a service process's."""

    def __init__(self, ttl: float, size: int = 64, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    async def get(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> T:
        """``key``'s value if younger than ``ttl``, else the one ``compute()`` gives (awaited
        once for every caller waiting: a thread's or a process's work). An exception reaches
        every caller and is not kept."""
        entry = self._entries.get(key)
        if entry is not None and self._clock() - entry[0] < self._ttl:
            cached: T = entry[1]
            return cached
        running = self._running.get(key)
        if running is None:
            running = self._running[key] = asyncio.ensure_future(self._compute(key, compute))
        # shielded: a caller that goes away (a closed tab) must not cancel the others' answer
        value: T = await asyncio.shield(running)
        return value

    async def _compute(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> T:
        try:
            value = await compute()
        finally:
            del self._running[key]
        self._entries[key] = (self._clock(), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return value

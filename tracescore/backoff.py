"""Exponential, capped backoff for loops that poll a database, logging state changes only.

A background loop that polls every 100 ms and logs a traceback on each failed poll writes
thousands of lines a second while the database is down, burying the one line that says what
happened. With a :class:`Backoff` the loop waits 1, 2, 4 … ``cap`` seconds between tries, and
the log says twice: when the failures start (with the first error) and when they end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from tracescore.store.outage import database_unavailable

log = logging.getLogger(__name__)


class Backoff:
    """The failure state of one loop: :meth:`failed` and :meth:`succeeded` after each try,
    :meth:`waiting` / :meth:`remaining` to know whether (and how long) to hold off."""

    def __init__(self, what: str, *, first: float = 1.0, cap: float = 30.0) -> None:
        self.what = what
        """Names the loop and what it talks to in the log lines (``"promoter: the database"``)."""
        self.first = first
        self.cap = cap
        self.failures = 0
        """Consecutive failed tries (0: healthy)."""
        self._retry_at = 0.0
        self._since = 0.0

    def failed(self, error: BaseException) -> float:
        """Record a failed try; returns the delay before the next one."""
        now = time.monotonic()
        if self.failures == 0:
            self._since = now
            # The first line only: a driver's message goes on with hints and links (one event,
            # one line). A failure that is no outage (a bug) gets its traceback, once: a retry
            # will not fix it, and one line would hide where it is.
            reason = next(iter(str(error).splitlines()), "")
            log.error(
                "%s is unavailable (%s: %s); retrying with backoff",
                self.what,
                type(error).__name__,
                reason,
                exc_info=None if database_unavailable(error) else error,
            )
        # At most 64 doublings: any delay has long reached the cap by then, and 2**1024 no longer
        # converts to a float, which would end the loop after some hours of outage at the cap.
        delay = min(self.first * 2.0 ** min(self.failures, 64), self.cap)
        self.failures += 1
        self._retry_at = now + delay
        return delay

    def succeeded(self) -> None:
        """Record a successful try (logs the recovery after failures)."""
        if self.failures:
            log.warning(
                "%s is available again after %.1f s (%d failed tries)",
                self.what,
                time.monotonic() - self._since,
                self.failures,
            )
            self.failures = 0
            self._retry_at = 0.0

    def remaining(self) -> float:
        """Seconds until the next try is due (0 when healthy or due now)."""
        return max(self._retry_at - time.monotonic(), 0.0)

    def waiting(self) -> bool:
        """Whether the next try is not due yet."""
        return self.remaining() > 0


async def repeat(
    step: Callable[[], object],
    interval: float,
    backoff: Backoff,
    wake: asyncio.Event | None = None,
) -> None:
    """Run the blocking ``step`` in a thread every ``interval`` seconds (or as soon as ``wake``
    is set) until cancelled; while it fails, wait ``backoff``'s growing delay instead, with its
    two log lines per outage."""
    while True:
        try:
            await asyncio.to_thread(step)
        except Exception as exc:  # noqa: BLE001 - the loop must outlive any one failure
            await asyncio.sleep(backoff.failed(exc))
            continue
        backoff.succeeded()
        if wake is None:
            await asyncio.sleep(interval)
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), interval)
        wake.clear()

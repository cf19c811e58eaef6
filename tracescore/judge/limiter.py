"""Per-judge pacing: a cap on calls in flight plus request and token budgets per minute.

One limiter is shared by every scorer that uses a judge. Judge calls run on the judge loop, but
a limiter does not depend on that: its state sits behind a thread lock and waiters are woken on
their own loop, so it stays correct for callers on any loop or thread, where a loop-bound
``asyncio.Semaphore`` would fail. Token use is only known after a call, so a
call reserves its estimate up front and settles the difference afterwards; an underestimate
leaves the bucket in debt and delays later calls, which is what a provider's TPM limit does too.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

# A wait this short is rounding left by the refill arithmetic, not budget: taking the call then
# keeps a clock that has not visibly moved (a simulated one, or a coarse one) from spinning.
_NEGLIGIBLE_WAIT = 1e-6


class _Bucket:
    """A token bucket refilled continuously at ``per_minute / 60`` per second."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = per_minute
        self.level = per_minute
        self.rate = per_minute / 60.0
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` fits (a call larger than the whole bucket waits for a full one)."""
        missing = min(amount, self.capacity) - self.level
        return max(0.0, missing / self.rate)


@dataclass
class Lease:
    """A granted call; set ``tokens`` to the real usage so the token budget is settled."""

    reserved_tokens: int
    tokens: int | None = None


class Limiter:
    """A judge's pacing. ``clock`` and ``sleep`` are the monotonic clock and the wait the budgets
    use; tests pass a simulated pair to check pacing exactly instead of timing it."""

    def __init__(
        self,
        concurrency: int,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.concurrency = concurrency
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._in_flight = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        now = clock()
        self._requests = _Bucket(requests_per_minute, now) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, now) if tokens_per_minute else None
        self._slot_seconds = 0.0
        self._stamp = now

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def slot_seconds(self) -> float:
        """Slot-seconds held so far (over wall time x concurrency: how busy the limit was kept)."""
        with self._lock:
            self._count_slot_time()
            return self._slot_seconds

    def _count_slot_time(self) -> None:
        now = self._clock()
        self._slot_seconds += self._in_flight * (now - self._stamp)
        self._stamp = now

    @asynccontextmanager
    async def lease(self, estimated_tokens: int) -> AsyncIterator[Lease]:
        """Wait for the rate budgets, then for a free slot; hold the slot for the block."""
        await self._take_budget(estimated_tokens)
        await self._acquire_slot()
        lease = Lease(estimated_tokens)
        try:
            yield lease
        finally:
            self._release_slot()
            if self._tokens is not None and lease.tokens is not None:
                with self._lock:
                    self._tokens.level -= lease.tokens - lease.reserved_tokens

    async def _take_budget(self, tokens: int) -> None:
        while True:
            with self._lock:
                now = self._clock()
                buckets = [(b, n) for b, n in ((self._requests, 1), (self._tokens, tokens)) if b]
                for bucket, _ in buckets:
                    bucket.refill(now)
                wait = max((bucket.wait_for(n) for bucket, n in buckets), default=0.0)
                if wait < _NEGLIGIBLE_WAIT:
                    for bucket, n in buckets:
                        bucket.level -= n
                    return
            await self._sleep(wait)

    async def _acquire_slot(self) -> None:
        with self._lock:
            if self._in_flight < self.concurrency and not self._waiters:
                self._count_slot_time()
                self._in_flight += 1
                return
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                if (loop, waiter) in self._waiters:
                    self._waiters.remove((loop, waiter))
                    raise
            if waiter.done() and not waiter.cancelled():
                self._release_slot()  # the slot was handed over just before the cancel
            raise

    def _release_slot(self) -> None:
        """Hand the slot straight to the oldest waiter, or free it."""
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    if loop is _running_loop():
                        loop.call_soon(self._wake, waiter)  # no self-pipe write needed
                    else:
                        loop.call_soon_threadsafe(self._wake, waiter)
                    return
                except RuntimeError:  # that waiter's loop is closed
                    continue
            self._count_slot_time()
            self._in_flight -= 1

    def _wake(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled():
            self._release_slot()
        else:
            waiter.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None

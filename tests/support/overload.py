"""Drive a ``tracescore serve`` process harder than it can ingest, and watch its memory.

Shared by ``tests/system/test_reliability_backpressure.py`` (seconds) and ``benchmarks/backpressure.py``
(a calibration run, then 60 s at twice the sustainable rate). Load is *open-loop* at a given
rate: requests leave on schedule whether or not earlier ones were answered, as independent
exporters behave, so an overloaded server sees a growing crowd rather than a polite client
slowing down. The server's resident memory is sampled throughout, and its kernel-kept peak
(``VmHWM``) read at the end.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

MAX_CLIENT_IN_FLIGHT = 512
"""Requests the load generator keeps open at once (beyond it, it counts a client-side drop)."""


def proc_status_mb(pid: int, key: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no {key} for process {pid}")


@dataclass
class Overload:
    statuses: Counter[int] = field(default_factory=Counter)
    retry_after: Counter[str | None] = field(default_factory=Counter)
    """``Retry-After`` values of the refusals (429/503)."""
    acked_spans: int = 0
    sent_spans: int = 0
    client_dropped: int = 0
    transport_errors: Counter[str] = field(default_factory=Counter)
    """Requests that got no HTTP answer, by exception type."""
    elapsed: float = 0.0
    rss_samples: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0

    @property
    def acked_per_second(self) -> float:
        return self.acked_spans / self.elapsed if self.elapsed else 0.0


class _RssSampler(threading.Thread):
    def __init__(self, pid: int, into: list[float], every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.into, self.every = pid, into, every
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.every):
            try:
                self.into.append(proc_status_mb(self.pid, "VmRSS"))
            except (OSError, ValueError):
                return


async def _drive(
    base_url: str,
    body: Callable[[int], bytes],
    spans_per_request: int,
    seconds: float,
    rate: float | None,
    concurrency: int,
    result: Overload,
) -> None:
    limits = httpx.Limits(
        max_connections=MAX_CLIENT_IN_FLIGHT, max_keepalive_connections=MAX_CLIENT_IN_FLIGHT
    )
    in_flight = asyncio.Semaphore(MAX_CLIENT_IN_FLIGHT)
    counter = iter(range(1 << 62))
    async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:

        async def send() -> None:
            result.sent_spans += spans_per_request
            try:
                response = await client.post(
                    "/v1/traces",
                    content=body(next(counter)),
                    headers={"Content-Type": "application/x-protobuf"},
                )
            except httpx.TransportError as exc:
                result.transport_errors[type(exc).__name__] += 1
                return
            finally:
                in_flight.release()
            result.statuses[response.status_code] += 1
            if response.status_code == 200:
                result.acked_spans += spans_per_request
            elif response.status_code in (429, 503):
                result.retry_after[response.headers.get("retry-after")] += 1

        deadline = time.monotonic() + seconds
        if rate is None:  # closed loop: ``concurrency`` clients back to back

            async def client_loop() -> None:
                while time.monotonic() < deadline:
                    await in_flight.acquire()
                    await send()

            await asyncio.gather(*(client_loop() for _ in range(concurrency)))
            return
        tasks: set[asyncio.Task[None]] = set()
        interval, next_at = spans_per_request / rate, time.monotonic()
        while next_at < deadline:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += interval
            if in_flight.locked():
                result.client_dropped += 1
                continue
            await in_flight.acquire()
            task = asyncio.create_task(send())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)


def overload(
    base_url: str,
    pid: int,
    body: Callable[[int], bytes],
    *,
    spans_per_request: int,
    seconds: float,
    rate: float | None = None,
    concurrency: int = 16,
) -> Overload:
    """Send ``body(n)`` requests for ``seconds``: at ``rate`` spans/s (open loop) or, without a
    rate, from ``concurrency`` back-to-back clients (closed loop, to find the sustainable rate)."""
    result = Overload()
    sampler = _RssSampler(pid, result.rss_samples)
    sampler.start()
    started = time.monotonic()
    try:
        asyncio.run(_drive(base_url, body, spans_per_request, seconds, rate, concurrency, result))
    finally:
        result.elapsed = time.monotonic() - started
        sampler.stopping.set()
        sampler.join()
    result.peak_rss_mb = proc_status_mb(pid, "VmHWM")
    return result

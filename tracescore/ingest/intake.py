"""What both OTLP transports do with an export request: admit, check, store, acknowledge.

The transports (``http.py``, ``grpc.py``) only translate between the wire and this module:
:class:`Busy` becomes HTTP 503 / gRPC UNAVAILABLE (retryable, with a delay), :class:`DecodeError`
HTTP 400 / INVALID_ARGUMENT, :class:`StoreUnavailable` HTTP 503 / UNAVAILABLE.

A protobuf request is screened (parsed, ids and timestamps checked, see
:mod:`tracescore.ingest.screen`) and its body committed to the ingest journal; then it is
acknowledged, and the :class:`~tracescore.ingest.unpack.Unpacker` decodes it into rows. That
keeps the acknowledgement at a few milliseconds for a thousand spans. An OTLP/JSON request is
decoded in full before it is journaled (only a full decode can tell it is valid), and decoded
again by the unpacker, which stores it: the rows' inserts stay off this process.

The work runs in a small thread pool, never on the event loop. At most ``max_pending``
requests are admitted at once, and none while more than ``max_journal_bytes`` of this
collector's journaled bodies wait to be unpacked: a request beyond either is refused (OTLP/HTTP
asks :meth:`Intake.check_room` before reading a body too), which keeps memory bounded at about
``max_pending × max_body_bytes`` and the unpacking lag bounded however hard clients push. A
request is admitted with its body already received, so slow senders never hold a slot.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from tracescore import metrics
from tracescore.backoff import Backoff
from tracescore.helper_processes import stop_leftovers
from tracescore.ingest.decode import Decoded, Receipt, decode_logs, decode_metrics, decode_traces
from tracescore.ingest.screen import Screened, screen_logs, screen_traces
from tracescore.ingest.unpack import Unpacker, UnpackReport, UnpackSettings
from tracescore.store import SpanStore
from tracescore.store.outage import database_unavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 1
_BACKLOG_REFRESH_SECONDS = 0.5
_UNPACKER_CHECK_SECONDS = 1.0


class Busy(Exception):
    """Too many export requests in flight; the client should retry after a delay."""


class StoreUnavailable(Exception):
    """The database write failed; nothing of the request was stored, the client may retry."""


class Intake:
    """Admission control plus check-and-store, shared by the HTTP and gRPC transports."""

    def __init__(
        self,
        store: SpanStore,
        max_pending: int,
        *,
        threads: int = 4,
        max_attribute_chars: int | None = None,
        max_journal_bytes: int = 256 * 1024 * 1024,
        unpackers: int = 1,
        shutdown_timeout: float = 10.0,
    ) -> None:
        self.store = store
        self.max_pending = max_pending
        self.max_journal_bytes = max_journal_bytes
        self.in_flight = 0
        self.owner = uuid.uuid4().hex
        """This collector's name on its journal entries."""
        self._url = store.engine.url.render_as_string(hide_password=False)
        self.shutdown_timeout = shutdown_timeout
        self.unpackers = [
            Unpacker(
                UnpackSettings(
                    self._url,
                    self.owner,
                    max_attribute_chars,
                    shard=shard,
                    shards=unpackers,
                    shutdown_timeout=shutdown_timeout,
                    max_clock_skew=store.rules.max_clock_skew,
                ),
                on_report=_count_report,
            )
            for shard in range(unpackers)
        ]
        self.journal_backlog = 0
        """Bytes journaled here and not unpacked yet (as of the last look, plus what came since)."""
        self._backlog_checked = 0.0
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ingest")
        self._closing = threading.Event()
        self._json_decoding = threading.Lock()
        """One OTLP/JSON decode at a time: each holds the GIL throughout, so a second in parallel
        gains nothing, yet holds its own ~25 MB of parsed 1000-span request (measured: 16
        clients of 1000-span JSON peak at 314 MB RSS with it, 342 MB without, same throughput)."""
        self._outage = Backoff("ingest: the database")
        """Only for its log lines: the exporters retry, this process does not."""
        self._watchdog = threading.Thread(
            target=self._watch_unpackers, name="unpacker-watchdog", daemon=True
        )

    def start(self) -> None:
        """Start unpacking, beginning with whatever an earlier run left in the journal (after
        ending any unpacker an earlier collector on this store left running)."""
        stop_leftovers(self._url, self.shutdown_timeout)
        for unpacker in self.unpackers:
            unpacker.start()
        self._watchdog.start()

    def _watch_unpackers(self) -> None:
        """Replace unpackers that died, every second until the intake closes."""
        while not self._closing.wait(_UNPACKER_CHECK_SECONDS):
            for unpacker in self.unpackers:
                try:
                    unpacker.revive()
                except Exception:
                    log.exception("could not start a new unpacker; trying again in a second")

    def check_room(self) -> None:
        """Raise Busy if a request arriving now would not be admitted: OTLP/HTTP asks before it
        reads a body, so an overloaded collector refuses without receiving megabytes first."""
        if self.in_flight >= self.max_pending:
            raise Busy(f"{self.in_flight} export requests already in progress")
        if self.journal_backlog > self.max_journal_bytes and not self._backlog_shrank():
            raise Busy(
                f"{self.journal_backlog // 2**20} MiB of acknowledged requests still to unpack"
            )

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Hold one of the ``max_pending`` slots (on the event loop thread) or raise Busy.

        Callers enter it with the whole request in hand (gRPC's server reads the message first;
        OTLP/HTTP reads the body under its own deadline first), so a slot is only ever held
        by work this process does, never by a client that is slow to send."""
        self.check_room()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1

    async def traces(self, body: bytes, *, json: bool) -> Receipt:
        return await self._run(self._journal_json if json else self._journal, "traces", body)

    async def logs(self, body: bytes, *, json: bool) -> Receipt:
        return await self._run(self._journal_json if json else self._journal, "logs", body)

    async def metrics(self, body: bytes, *, json: bool) -> Receipt:
        """Metrics are accepted (so SDKs that send them see success) and dropped once valid."""
        return await self._run(_check_metrics, body, json)

    async def _run(self, work: Callable[..., Receipt], *args: object) -> Receipt:
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)

    def _journal(self, signal: str, body: bytes) -> Receipt:
        screened = _SCREENS[signal](body)
        self._keep(signal, screened.body, screened.receipt, json=False)
        return screened.receipt

    def _journal_json(self, signal: str, body: bytes) -> Receipt:
        """OTLP/JSON is decoded in full before the acknowledgement, since nothing less tells a
        parseable body is valid OTLP (and which records to reject); the unpacker decodes it
        again (the same records) and stores them, off this process's GIL."""
        with self._json_decoding:
            receipt = _DECODERS[signal](body, json=True).receipt()
        self._keep(signal, body, receipt, json=True)
        return receipt

    def _keep(self, signal: str, body: bytes, receipt: Receipt, *, json: bool) -> None:
        """Journal a checked request that holds records, and wake its unpacker."""
        if receipt.spans or receipt.logs:
            with self._storing(receipt):
                entry = self.store.journal.append(signal, body, self.owner, json=json)
                self._count_backlog(len(entry.body))
            self.unpackers[self.store.journal.shard_of(entry.seq, len(self.unpackers))].notify()

    @contextmanager
    def _storing(self, receipt: Receipt) -> Iterator[None]:
        """Turn a failed journal write into :class:`StoreUnavailable` (503 / UNAVAILABLE). An
        outage is logged when it starts and when it ends, not with a traceback per refused
        request (clients retry every second or so); any other failure with its traceback."""
        try:
            yield
        except Exception as exc:
            if database_unavailable(exc):
                self._outage.failed(exc)
            else:
                log.exception("storing %d spans / %d logs failed", receipt.spans, receipt.logs)
            raise StoreUnavailable(f"storage failed: {type(exc).__name__}") from exc
        self._outage.succeeded()

    def _backlog_shrank(self) -> bool:
        """Look again (at most every half second) whether the unpacker caught up."""
        if time.monotonic() - self._backlog_checked >= _BACKLOG_REFRESH_SECONDS:
            self._count_backlog(0)
        return self.journal_backlog <= self.max_journal_bytes

    def _count_backlog(self, added: int) -> None:
        now = time.monotonic()
        if now - self._backlog_checked < _BACKLOG_REFRESH_SECONDS:
            self.journal_backlog += added
        else:
            self._backlog_checked = now
            self.journal_backlog = self.store.journal.backlog(self.owner)
        metrics.journal_backlog.set(self.journal_backlog)

    def wind_down(self) -> None:
        """Tell the unpackers to finish this collector's entries and exit (the service is
        stopping): their ``shutdown_timeout`` runs from now, while the service winds down the
        rest, instead of from when :meth:`close` gets to them."""
        for unpacker in self.unpackers:
            unpacker.wind_down()

    def close(self) -> None:
        self.wind_down()
        self._executor.shutdown(wait=True)
        self._closing.set()
        if self._watchdog.is_alive():
            self._watchdog.join()
        for unpacker in self.unpackers:
            unpacker.stop()


def _count_report(report: UnpackReport) -> None:
    metrics.journal_quarantined.inc(report.quarantined)
    metrics.text_replaced.labels("ingest").inc(report.text_replaced)
    metrics.future_span_times.inc(report.future_span_times)


def _check_metrics(body: bytes, json: bool) -> Receipt:
    return decode_metrics(body, json=json).receipt()


_SCREENS: dict[str, Callable[[bytes], Screened]] = {"traces": screen_traces, "logs": screen_logs}
_DECODERS: dict[str, Callable[..., Decoded]] = {"traces": decode_traces, "logs": decode_logs}

"""The trace queue (``store/trace_queue.py``) on real databases: readiness rules, rescoring,
leases and their renewal, concurrent claimers, the sampling rule's promotion, the hooks it
tells, the backlog counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.store_spans import full_span
from tracescore.spans import LogRecord, Resource, Scope, Span
from tracescore.store import ReadinessRules, SpanStore, open_store
from tracescore.store.leased_queue import TraceState
from tracescore.store.trace_queue import SamplingRule, count_in_states

RULES = ReadinessRules(idle_timeout=5.0, max_wait=60.0, max_attempts=2)


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    opened = open_store(db_url, RULES)
    yield opened
    opened.close()


def _trace(trace_id: str, *, root: bool = True, children: int = 1) -> list[Span]:
    spans = [full_span(f"{n + 2:016x}", "0000000000000001") for n in range(children)]
    if root:
        spans.append(full_span("0000000000000001"))
    for span in spans:
        span.trace_id = trace_id
    return spans


def test_ready_after_idle_timeout_once_the_root_arrived(store: SpanStore) -> None:
    store.write(_trace("a" * 32))
    now = time.time()
    assert store.queue.claim("w", 10, 30, now=now + 4) == []
    (claim,) = store.queue.claim("w", 10, 30, now=now + 6)
    assert (claim.trace_id, claim.span_count, claim.owner) == ("a" * 32, 2, "w")
    assert store.trace_summary("a" * 32).state == "claimed"


def test_without_root_ready_only_after_max_wait(store: SpanStore) -> None:
    store.write(_trace("b" * 32, root=False))
    now = time.time()
    assert store.queue.claim("w", 10, 30, now=now + 30) == []
    assert store.queue.promote(now=now + 61) == 1
    assert store.trace_summary("b" * 32).state == "ready"
    assert [c.trace_id for c in store.queue.claim("w", 10, 30, now=now + 61)] == ["b" * 32]


def test_new_span_resets_the_idle_clock(store: SpanStore) -> None:
    store.write(_trace("c" * 32))
    time.sleep(0.05)
    late = full_span("00000000000000ff", "0000000000000001")
    late.trace_id = "c" * 32
    store.write([late])
    last_seen = store.trace_summary("c" * 32).last_seen
    assert store.queue.claim("w", 10, 30, now=last_seen + 4.99) == []
    assert len(store.queue.claim("w", 10, 30, now=last_seen + 5)) == 1


def test_complete_marks_scored_and_late_span_triggers_rescore(store: SpanStore) -> None:
    store.write(_trace("d" * 32))
    (claim,) = store.queue.claim("w", 10, 30, now=time.time() + 6)
    store.queue.complete([claim])
    summary = store.trace_summary("d" * 32)
    assert (summary.state, summary.scored_generation) == ("scored", claim.generation)
    assert store.queue.claim("w", 10, 30, now=time.time() + 1000) == []

    late = full_span("00000000000000aa", "0000000000000001")
    late.trace_id = "d" * 32
    store.write([late])
    assert store.trace_summary("d" * 32).state == "pending"
    (again,) = store.queue.claim("w", 10, 30, now=time.time() + 6)
    assert again.generation > claim.generation and again.span_count == 3


def test_span_arriving_during_scoring_sends_trace_back_to_pending(store: SpanStore) -> None:
    store.write(_trace("e" * 32))
    (claim,) = store.queue.claim("w", 10, 30, now=time.time() + 6)
    late = full_span("00000000000000bb", "0000000000000001")
    late.trace_id = "e" * 32
    store.write([late])
    assert store.trace_summary("e" * 32).state == "claimed"
    store.queue.complete([claim])
    assert store.trace_summary("e" * 32).state == "pending"
    assert store.queue.claim("w", 10, 30, now=time.time() + 1) == []
    (again,) = store.queue.claim("w", 10, 30, now=time.time() + 6)
    assert again.span_count == 3


def test_expired_lease_is_reclaimed_and_the_stale_claim_cannot_complete(store: SpanStore) -> None:
    store.write(_trace("f" * 32))
    now = time.time() + 6
    (first,) = store.queue.claim("worker-1", 10, lease_seconds=10, now=now)
    assert store.queue.claim("worker-2", 10, lease_seconds=10, now=now + 9) == []
    (second,) = store.queue.claim("worker-2", 10, lease_seconds=10, now=now + 11)
    assert second.trace_id == first.trace_id and second.token != first.token
    store.queue.complete([first])  # stale: changes nothing
    assert store.trace_summary("f" * 32).state == "claimed"
    store.queue.complete([second])
    assert store.trace_summary("f" * 32).state == "scored"


def test_release_gives_back_and_repeated_errors_park_the_trace(store: SpanStore) -> None:
    store.write(_trace("1" * 32))
    now = time.time() + 6
    (claim,) = store.queue.claim("w", 10, 30, now=now)
    store.queue.release(claim)  # shutdown: not an attempt
    (claim,) = store.queue.claim("w", 10, 30, now=now)
    store.queue.release(claim, "judge timed out")
    summary = store.trace_summary("1" * 32)
    assert (summary.state, summary.last_error) == ("ready", "judge timed out")
    (claim,) = store.queue.claim("w", 10, 30, now=now)
    store.queue.release(claim, "judge timed out again")
    assert store.trace_summary("1" * 32).state == "failed"
    assert store.queue.claim("w", 10, 30, now=now + 1000) == []


def test_claim_respects_limit(store: SpanStore) -> None:
    for n in range(5):
        store.write(_trace(f"{n + 10:032x}"))
    now = time.time() + 6
    assert len(store.queue.claim("w", 2, 30, now=now)) == 2
    assert len(store.queue.claim("w", 10, 30, now=now)) == 3
    assert store.queue.claim("w", 10, 30, now=now) == []


def test_concurrent_claimers_never_share_a_trace(pg_url: str) -> None:
    setup = open_store(pg_url, RULES)
    trace_ids = [f"{n + 1:032x}" for n in range(120)]
    for trace_id in trace_ids:
        setup.write(_trace(trace_id))
    now = time.time() + 6
    stores = [open_store(pg_url, RULES, create=False) for _ in range(6)]
    claimed: list[list[str]] = [[] for _ in stores]
    start = threading.Barrier(len(stores))

    def claimer(index: int) -> None:
        start.wait()
        while batch := stores[index].queue.claim(f"w{index}", 3, 30, now=now):
            claimed[index].extend(c.trace_id for c in batch)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [t for per_worker in claimed for t in per_worker]
    assert sorted(everything) == trace_ids  # each claimed exactly once
    assert sum(1 for per_worker in claimed if per_worker) > 1  # they really competed
    for opened in (setup, *stores):
        opened.close()


def test_a_retry_of_stored_spans_does_not_send_a_scored_trace_back(store: SpanStore) -> None:
    spans = _trace("e" * 32)
    now = time.time()
    store.write(spans, received_at=now - 10)
    (claim,) = store.queue.claim("w", 10, 30, now=now)
    store.queue.complete([claim], now=now)
    # An exporter resends the request whose acknowledgement it lost: nothing new is stored.
    store.write(spans, received_at=now + 1)
    summary = store.trace_summary("e" * 32)
    assert (summary.state, summary.generation, summary.span_count) == ("scored", 1, 2)
    # A span it had not sent before does reopen it, for rescoring.
    late = _trace("e" * 32, root=False, children=2)[1:]
    store.write(late, received_at=now + 2)
    summary = store.trace_summary("e" * 32)
    assert (summary.state, summary.generation, summary.span_count) == ("pending", 2, 3)


def _log(trace_id: str, event_name: str, time_ns: int) -> LogRecord:
    return LogRecord(
        time_ns=time_ns,
        observed_time_ns=time_ns,
        trace_id=trace_id,
        span_id="0000000000000002",
        event_name=event_name,
        severity_number=9,
        severity_text="INFO",
        body="",
        attributes={},
        resource=Resource(attributes={"service.name": "chat"}),
        scope=Scope(name="app"),
    )


def test_an_evaluation_record_does_not_reopen_a_scored_trace_but_a_late_message_does(
    store: SpanStore,
) -> None:
    """A verdict on a trace (human feedback, a re-emitted score) is stored without sending the
    trace back to be scored; a late record of the run itself (a GenAI message event) is not."""
    now = time.time()
    store.write(_trace("f" * 32), received_at=now - 10)
    (claim,) = store.queue.claim("w", 10, 30, now=now)
    store.queue.complete([claim], now=now)
    store.write(
        [], [_log("f" * 32, "gen_ai.evaluation.result", time.time_ns())], received_at=now + 1
    )
    assert store.trace_summary("f" * 32).state == "scored"
    assert [r.event_name for r in store.load_trace("f" * 32).logs] == ["gen_ai.evaluation.result"]
    store.write([], [_log("f" * 32, "gen_ai.choice", time.time_ns())], received_at=now + 2)
    assert store.trace_summary("f" * 32).state == "pending"


def test_a_renewed_lease_is_held_past_its_first_expiry(store: SpanStore) -> None:
    store.write(_trace("d" * 32))
    now = time.time() + 6
    claims = store.queue.claim("w", 10, 30, now=now)
    assert store.queue.renew(claims, 100, now=now + 20) == 1
    assert store.queue.claim("other", 10, 30, now=now + 50) == []  # past the first lease
    (again,) = store.queue.claim("other", 10, 30, now=now + 121)
    assert again.trace_id == "d" * 32
    assert store.queue.renew(claims, 100, now=now + 122) == 0  # lost: nothing to renew
    assert store.queue.complete(claims, now=now + 123) == 1  # one lost claim, changing nothing
    assert store.trace_summary("d" * 32).state == TraceState.CLAIMED


def test_promotion_with_a_sampling_rule_finishes_unsampled_traces_and_tells_how_many(
    store: SpanStore,
) -> None:
    promoted: list[int] = []
    skipped: list[int] = []
    store.queue.on_promoted = promoted.append
    store.queue.on_skipped = skipped.append
    store.queue.sampling = SamplingRule(lambda trace_id: trace_id.startswith("e"), ("judged",))
    store.write(_trace("e" * 32))
    store.write(_trace("f" * 32))
    assert store.queue.promote(now=time.time() + 6) == 2
    assert (promoted, skipped) == ([2], [1])
    assert store.trace_summary("e" * 32).state == TraceState.READY
    assert store.trace_summary("f" * 32).state == TraceState.SCORED
    assert [c.trace_id for c in store.queue.claim("w", 10, 30, now=time.time() + 6)] == ["e" * 32]


def test_parking_a_trace_tells_why_and_its_error_is_stored_even_with_a_nul(
    store: SpanStore,
) -> None:
    failed: list[tuple[str, int]] = []
    store.queue.on_failed = lambda reason, count: failed.append((reason, count))
    store.write(_trace("9" * 32))
    now = time.time() + 6
    for attempt in range(RULES.max_attempts):
        (claim,) = store.queue.claim("w", 10, 30, now=now + attempt)
        store.queue.release(claim, error="span text quoted: a\x00b")
    summary = store.trace_summary("9" * 32)
    assert summary.state == TraceState.FAILED and failed == [("errors", 1)]
    assert summary.last_error is not None and "\x00" not in summary.last_error
    assert summary.last_error.startswith("span text quoted: a")


def test_the_backlog_counts_only_the_states_asked_for(store: SpanStore) -> None:
    for trace_id in ("1" * 32, "2" * 32, "3" * 32):
        store.write(_trace(trace_id))
    store.queue.claim("w", 1, 30, now=time.time() + 6)  # promotes all three, claims one
    counts = count_in_states(store.engine, [TraceState.READY, TraceState.CLAIMED, "pending"])
    assert counts == {TraceState.READY: 2, TraceState.CLAIMED: 1}

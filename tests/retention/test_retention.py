"""Retention on real SQLite files and the real PostgreSQL server: a pass removes exactly the
expired rows of each kind; pruned traces are never scored again; one replica prunes at a time;
``tracescore db prune``; a running service pruning while spans keep arriving over OTLP/HTTP."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

from tests.support.agent_otlp import AgentTrace, agent_trace, export_logs_request, export_request
from tests.support.server_process import start_server
from tracescore import metrics
from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import Pruner
from tracescore.retention.task import RetentionLeader
from tracescore.spans import LogRecord, Resource, Scope, Span
from tracescore.store import SpanStore, open_store
from tracescore.store.alerts import AlertEventRow, AlertStateRow
from tracescore.store.judge_cache import JudgeVerdict
from tracescore.store.leases import acquire_lease
from tracescore.store.scores import (
    SamplingDecisionRow,
    SamplingTallyRow,
    ScoreRow,
    upsert_scores,
)
from tracescore.store.tables import LogRow, SpanRow, TraceRow

DAY = 86400.0
NOW = time.time()
OLD = NOW - 10 * DAY
"""Older than the tests' 7-day retention."""
RECENT = NOW - DAY
EVERY_KIND = RetentionConfig(
    spans="7d",
    logs="7d",
    scores="7d",
    sampling_decisions="7d",
    judge_cache="7d",
    alerts="7d",
    batch_size=2,  # several batches per kind
)

SPANS, LOGS, TRACES = SpanRow.__table__, LogRow.__table__, TraceRow.__table__  # type: ignore[attr-defined]
SCORES, DECISIONS = ScoreRow.__table__, SamplingDecisionRow.__table__  # type: ignore[attr-defined]
TALLIES, VERDICTS = SamplingTallyRow.__table__, JudgeVerdict.__table__  # type: ignore[attr-defined]
EVENTS, STATES = AlertEventRow.__table__, AlertStateRow.__table__  # type: ignore[attr-defined]

_RESOURCE, _SCOPE = Resource({"service.name": "retention-test"}), Scope("test")

OLD_SCORED, RECENT_SCORED, OLD_PENDING, STRADDLING = "a" * 32, "b" * 32, "c" * 32, "d" * 32


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _span(trace_id: str, span_id: str, ended: float, parent: str | None = None) -> Span:
    return Span(
        trace_id, span_id, parent, "step", 1, _ns(ended) - 1000, _ns(ended), {}, _RESOURCE, _SCOPE
    )


def _log(at: float, trace_id: str | None, body: str) -> LogRecord:
    return LogRecord(
        _ns(at), _ns(at), trace_id, None, "event", 9, "INFO", body, {}, _RESOURCE, _SCOPE
    )


def _trace(trace_id: str, *ended: float) -> list[Span]:
    """A root ending last and one child per further end time."""
    root = f"{1:016x}"
    return [_span(trace_id, root, max(ended))] + [
        _span(trace_id, f"{n + 2:016x}", end, root) for n, end in enumerate(ended[1:])
    ]


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


def _seed(store: SpanStore) -> None:
    """Data of every kind on both sides of a 7-day cut (see the assertions for what is which)."""
    store.write(
        _trace(OLD_SCORED, OLD, OLD)
        + _trace(RECENT_SCORED, RECENT)
        + _trace(STRADDLING, OLD, RECENT),
        [
            _log(OLD, OLD_SCORED, "old of old"),
            _log(OLD, RECENT_SCORED, "old of recent"),
            _log(OLD, None, "old, no trace"),
            _log(RECENT, None, "recent, no trace"),
        ],
        received_at=NOW - 100,
    )
    claims = store.queue.claim("worker", 10, 60, now=NOW)
    assert len(claims) == 3
    store.queue.complete(claims, now=NOW)
    # Arrived just now: not complete yet, so kept whatever its spans' age.
    store.write(
        _trace(OLD_PENDING, OLD), [_log(OLD, OLD_PENDING, "old of pending")], received_at=NOW
    )

    def at(seconds: float) -> datetime:
        return datetime.fromtimestamp(seconds, UTC)

    with store.write_transaction() as conn:
        upsert_scores(
            conn,
            [
                {
                    "id": f"5{n}",  # hex: score ids are stored as bytes
                    "trace_id": OLD_SCORED,
                    "span_id": "1" * 16,
                    "binding": "b",
                    "scorer_id": "x",
                    "scorer_version": "1",
                    "status": "ok",
                    "score": 1.0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cost_usd": 0.0,
                    "latency_ms": 0.0,
                    "run_kind": "agent",
                    "created_at": at(created),
                    "updated_at": at(created),
                }
                for n, created in enumerate([OLD, OLD - 1, OLD - 2, OLD - 3, OLD - 4, RECENT])
            ],
        )
        conn.execute(
            insert(DECISIONS),
            [
                {
                    "id": f"d{n}",
                    "trace_id": OLD_SCORED,
                    "span_id": "1" * 16,
                    "binding": "b",
                    "sampled": True,
                    "created_at": at(created),
                }
                for n, created in enumerate([OLD, OLD - 1, OLD - 2, RECENT])
            ],
        )
        conn.execute(
            insert(TALLIES),
            [
                {"binding": "b", "minute": at(minute), "unsampled": 3}
                for minute in (OLD, OLD - 60, RECENT)
            ],
        )
        conn.execute(
            insert(VERDICTS),
            [
                {
                    "key": f"v{n}",
                    "scorer_id": "x",
                    "scorer_version": "1",
                    "step": "s",
                    "model": "m",
                    "text": "{}",
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cost_usd": 0.0,
                    "created_at": at(created),
                }
                for n, created in enumerate([OLD, OLD - 1, RECENT])
            ],
        )
        conn.execute(
            insert(EVENTS),
            [
                {
                    "key": "k",
                    "rule": "r",
                    "segment": {},
                    "status": "resolved",
                    "at": moment,
                    "payload": {},
                    "pending": pending,
                    "pending_channels": ["hook"] if pending else [],
                    "attempts": 1,
                }
                for moment, pending in [
                    (OLD, False),
                    (OLD - 1, False),
                    (OLD, True),
                    (RECENT, False),
                ]
            ],
        )
        conn.execute(
            insert(STATES),
            [
                {
                    "key": key,
                    "rule": "r",
                    "segment": {},
                    "state": state,
                    "since": OLD,
                    "evaluated_at": evaluated,
                    "summary": "",
                    "notified": False,
                    "version": 1,
                }
                for key, state, evaluated in [
                    ("ok-gone", "ok", OLD),
                    ("ok-seen", "ok", RECENT),
                    ("firing", "firing", OLD),
                ]
            ],
        )


def _column(engine: Engine, column: Any, *where: Any) -> set[Any]:
    with engine.connect() as conn:
        return set(conn.execute(select(column).where(*where)).scalars())


def _traces(engine: Engine) -> dict[str, tuple[str, int, int]]:
    """Each trace's state, span count and log count as the queue records them."""
    with engine.connect() as conn:
        columns = (TRACES.c.trace_id, TRACES.c.state, TRACES.c.span_count, TRACES.c.log_count)
        rows = conn.execute(select(*columns))
        return {trace_id: (state, spans, logs) for trace_id, state, spans, logs in rows}


def _span_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(
            conn.execute(select(SPANS.c.trace_id, func.count()).group_by(SPANS.c.trace_id)).all()
        )


def test_a_pass_removes_exactly_the_expired_rows_of_each_kind(store: SpanStore) -> None:
    _seed(store)
    report = Pruner(store.write_transaction, EVERY_KIND).run(NOW)

    assert report.complete
    assert report.removed == {
        "spans": 2,
        "logs": 3,
        "scores": 5,
        "sampling_decisions": 5,
        "judge_cache": 2,
        "alerts": 3,
    }
    engine = store.engine
    # The old scored trace lost its spans, not its newest score; a trace with one recent span
    # keeps every span; a trace still to be scored keeps its old spans and log record.
    assert _span_counts(engine) == {RECENT_SCORED: 1, STRADDLING: 2, OLD_PENDING: 1}
    assert _traces(engine) == {
        OLD_SCORED: ("pruned", 0, 0),
        RECENT_SCORED: ("scored", 1, 0),
        STRADDLING: ("scored", 2, 0),
        OLD_PENDING: ("pending", 1, 1),
    }
    assert _column(engine, LOGS.c.body) == {'"recent, no trace"', '"old of pending"'}
    assert _column(engine, SCORES.c.id) == {"55"}
    assert _column(engine, DECISIONS.c.id) == {"d3"}
    (minute,) = _column(engine, TALLIES.c.minute)
    assert abs(minute.replace(tzinfo=UTC).timestamp() - RECENT) < 1
    assert _column(engine, VERDICTS.c.key) == {"v2"}
    assert _column(engine, EVENTS.c.at) == {
        OLD,
        RECENT,
    }  # the undelivered old one and the recent one
    assert _column(engine, EVENTS.c.pending, EVENTS.c.at == OLD) == {True}
    assert _column(engine, STATES.c.key) == {"ok-seen", "firing"}

    again = Pruner(store.write_transaction, EVERY_KIND).run(NOW)
    assert set(again.removed.values()) == {0}


def test_kinds_without_a_retention_are_kept(store: SpanStore) -> None:
    _seed(store)
    report = Pruner(store.write_transaction, RetentionConfig(scores="7d")).run(NOW)

    assert report.removed == {"scores": 5}
    assert _span_counts(store.engine) == {
        OLD_SCORED: 2,
        RECENT_SCORED: 1,
        STRADDLING: 2,
        OLD_PENDING: 1,
    }
    assert len(_column(store.engine, LOGS.c.id)) == 5
    assert len(_column(store.engine, VERDICTS.c.key)) == 3


def test_records_arriving_for_a_pruned_trace_never_requeue_it(store: SpanStore) -> None:
    _seed(store)
    Pruner(store.write_transaction, EVERY_KIND).run(NOW)

    # An exporter's retry of a pruned span, a straggler span of the pruned trace, and a retry
    # of a stored span of a trace that lost an old log record.
    store.write([_span(OLD_SCORED, f"{1:016x}", OLD)], received_at=NOW + 1)
    store.write([_span(OLD_SCORED, "f" * 16, OLD, f"{1:016x}")], received_at=NOW + 1)
    store.write(_trace(RECENT_SCORED, RECENT), received_at=NOW + 1)

    claims = store.queue.claim("worker", 10, 60, now=NOW + 3600)
    assert [claim.trace_id for claim in claims] == [OLD_PENDING]  # only the one never scored
    traces = _traces(store.engine)
    assert traces[OLD_SCORED][0] == "pruned"
    assert traces[RECENT_SCORED] == ("scored", 1, 0)
    assert _column(store.engine, SCORES.c.id, SCORES.c.trace_id == OLD_SCORED) == {"55"}


def test_tombstones_go_one_retention_after_their_spans(store: SpanStore) -> None:
    _seed(store)
    pruner = Pruner(store.write_transaction, EVERY_KIND)
    pruner.run(NOW)
    store.write([_span(OLD_SCORED, "f" * 16, OLD, f"{1:016x}")], received_at=NOW + 1)  # a straggler

    assert pruner.run(NOW + 2 * DAY).removed.get("traces", 0) == 0  # 12 days: not yet twice 7
    assert _traces(store.engine)[OLD_SCORED][0] == "pruned"

    report = pruner.run(NOW + 8 * DAY)  # the old trace's spans ended 18 days before, others 9

    assert report.removed["traces"] == 1
    traces = _traces(store.engine)
    assert OLD_SCORED not in traces
    assert traces[RECENT_SCORED] == traces[STRADDLING] == ("pruned", 0, 0)
    assert OLD_SCORED not in _span_counts(store.engine)  # the straggler went with its tombstone


def test_data_imported_long_after_the_fact_keeps_its_tombstone(store: SpanStore) -> None:
    ancient = "9" * 32
    store.write(_trace(ancient, NOW - 30 * DAY), received_at=NOW - 100)
    store.queue.complete(store.queue.claim("worker", 10, 60, now=NOW), now=NOW)
    pruner = Pruner(store.write_transaction, RetentionConfig(spans="7d"))

    assert pruner.run(NOW).removed == {"spans": 1}
    assert _traces(store.engine)[ancient] == ("pruned", 0, 0)  # arrived a moment ago
    store.write(_trace(ancient, NOW - 30 * DAY), received_at=NOW + 1)  # the exporter retries
    assert store.queue.claim("worker", 10, 60, now=NOW + 3600) == []

    assert pruner.run(NOW + 7 * DAY + 2).removed == {"spans": 1, "traces": 1}
    assert ancient not in _traces(store.engine)


def test_sqlite_file_gives_freed_pages_back(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'big.db'}")
    noise = random.Random(7)  # text compression cannot shrink (span attributes are packed)
    for batch in range(20):
        store.write(
            [
                Span(
                    f"{batch:04x}{n:028x}",
                    f"{s + 1:016x}",
                    None,
                    "step",
                    1,
                    _ns(OLD) - 1000,
                    _ns(OLD),
                    {"padding": noise.randbytes(1000).hex()},
                    _RESOURCE,
                    _SCOPE,
                )
                for n in range(50)
                for s in range(10)
            ],
            received_at=NOW - 100,
        )
    store.queue.complete(store.queue.claim("worker", 10_000, 60, now=NOW), now=NOW)

    def pages() -> tuple[int, int]:
        with store.engine.connect() as conn:
            return (
                conn.exec_driver_sql("PRAGMA page_count").scalar_one(),
                conn.exec_driver_sql("PRAGMA freelist_count").scalar_one(),
            )

    before, _ = pages()
    config = RetentionConfig(spans="7d", batch_size=500)
    report = RetentionLeader(store, config, "me", clock=lambda: NOW).run_once()

    assert report is not None and report.removed["spans"] == 10_000
    after, free = pages()
    assert free == 0
    assert after < before / 4, (before, after)
    store.close()


def test_one_replica_prunes_per_interval(store: SpanStore) -> None:
    _seed(store)
    clock = [NOW]
    config = RetentionConfig(spans="7d", interval="1h", leader_lease="1m")
    first, second = (
        RetentionLeader(store, config, owner, clock=lambda: clock[0]) for owner in ("a", "b")
    )
    with store.write_transaction() as conn:  # the alert evaluator's lease is another lease
        assert acquire_lease(conn, "someone-else", NOW, 3600, "alerts")

    def removed() -> float:
        value = metrics.REGISTRY.get_sample_value(
            "tracescore_retention_removed_total", {"kind": "spans"}
        )
        return value or 0.0

    removed_before = removed()

    report = first.run_once()
    assert report is not None and report.removed == {"spans": 2}
    assert removed() == removed_before + 2
    assert (
        metrics.REGISTRY.get_sample_value("tracescore_retention_last_pass_timestamp_seconds") == NOW
    )

    store.write(_trace("e" * 32, OLD), received_at=NOW - 100)
    store.queue.complete(store.queue.claim("worker", 10, 60, now=NOW), now=NOW)
    clock[0] = NOW + 1800  # half an interval later: nobody prunes, not even the holder
    assert first.run_once() is None and second.run_once() is None
    assert _span_counts(store.engine)["e" * 32] == 1

    clock[0] = NOW + 3601  # due: whoever looks first prunes, once
    report = second.run_once()
    assert report is not None and report.removed == {"spans": 1}
    assert first.run_once() is None


def test_a_pass_stopped_midway_hands_the_lease_over(store: SpanStore) -> None:
    _seed(store)
    config = RetentionConfig(spans="7d", interval="1h")
    first, second = (
        RetentionLeader(store, config, owner, clock=lambda: NOW) for owner in ("a", "b")
    )
    first.stopping.set()  # the service is stopping before its first batch

    report = first.run_once()
    assert report is not None and not report.complete and report.removed == {"spans": 0}
    report = second.run_once()  # at once, not a lease or an interval later
    assert report is not None and report.complete and report.removed == {"spans": 2}


def test_db_prune_prints_what_it_removed(store: SpanStore, tmp_path: Path) -> None:
    _seed(store)
    config = tmp_path / "retention.yaml"
    config.write_text("retention:\n  spans: 7d\n  logs: 7d\n  scores: 7d\n")

    url = store.engine.url.render_as_string(hide_password=False)

    def prune(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tracescore.cli", "db", "prune", "--db", url, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    done = prune("--config", str(config))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:6] == [
        "spans: 2 removed",
        "logs: 3 removed",
        "scores: 5 removed",
        "sampling_decisions: kept forever",
        "judge_cache: kept forever",
        "alerts: kept forever",
    ]
    assert lines[-1].startswith("took ")
    assert _traces(store.engine)[OLD_SCORED][0] == "pruned"

    assert prune("--config", str(config)).stdout.splitlines()[:3] == [
        "spans: 0 removed",
        "logs: 0 removed",
        "scores: 0 removed",
    ]
    nothing = prune()
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing to prune")
    config.write_text("retention:\n  span: 7d\n")
    bad = prune("--config", str(config))
    assert bad.returncode == 2 and "retention.span" in bad.stderr


def _aged(trace: AgentTrace, seconds: float) -> AgentTrace:
    """The same trace, every timestamp ``seconds`` earlier."""
    shift = _ns(seconds)
    for span in trace.spans:
        span.start_time_unix_nano -= shift
        span.end_time_unix_nano -= shift
    for record in trace.logs:
        record.time_unix_nano -= shift
        record.observed_time_unix_nano -= shift
    return trace


def _send(base_url: str, traces: list[AgentTrace]) -> None:
    """Each trace's logs and spans, on one client (``httpx.post`` builds one, with its SSL
    context, per call: ~25 ms of CPU each, 72 times here)."""
    headers = {"Content-Type": "application/x-protobuf"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        for trace in traces:
            logs = client.post("/v1/logs", content=export_logs_request(trace.logs))
            assert logs.status_code == 200
            spans = client.post("/v1/traces", content=export_request(trace.spans))
            assert spans.status_code == 200


def test_a_running_service_prunes_while_spans_arrive(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(22)
    old = [_aged(agent_trace(rng), 1.5 * DAY) for _ in range(12)]  # pruned, tombstones kept
    fresh = [agent_trace(rng) for _ in range(24)]
    config = {
        "retention": {"spans": "1d", "logs": "1d", "interval": 1},
        "workers": {"processes": 1},
    }
    with start_server(tmp_path, db_url=db_url, config=config, idle_timeout=0.3) as server:
        _send(server.base_url, old)
        sender = threading.Thread(target=_send, args=(server.base_url, fresh))
        sender.start()  # fresh traces keep arriving while the old ones are pruned
        sender.join(timeout=120)
        engine = open_store(db_url).engine
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            traces = _traces(engine)
            if (
                len(traces) == 36
                and all(traces[t.trace_id][0] == "pruned" for t in old)
                and all(traces[t.trace_id][0] == "scored" for t in fresh)
            ):
                break
            time.sleep(0.3)
        client = server.http
        exposition = client.get("/metrics").text
        gone = client.get(f"/api/traces/{old[0].trace_id}")
        runs_gone = client.get(f"/api/traces/{old[0].trace_id}/runs")
        kept = client.get("/api/scores", params={"trace_id": old[0].trace_id})
        live = client.get(f"/api/traces/{fresh[0].trace_id}")

    # A pruned trace's page says what became of it and where its scores are.
    assert gone.status_code == 410 and "removed by retention" in gone.json()["detail"]
    assert f"/api/scores?trace_id={old[0].trace_id}" in gone.json()["detail"]
    assert (runs_gone.status_code, runs_gone.json()) == (410, gone.json())  # its runs too
    assert kept.status_code == 200 and kept.json()["items"]
    assert {item["trace_id"] for item in kept.json()["items"]} == {old[0].trace_id}
    assert live.status_code == 200 and len(live.json()["spans"]) == 4
    traces = _traces(engine)
    assert {t.trace_id: traces[t.trace_id] for t in old} == {
        t.trace_id: ("pruned", 0, 0) for t in old
    }
    # (Not their log_count: a log record stored concurrently with its trace's spans may go
    # uncounted on PostgreSQL, each write counting before the other commits; the rows are there.)
    assert {t.trace_id: traces[t.trace_id][:2] for t in fresh} == {
        t.trace_id: ("scored", 4) for t in fresh
    }
    assert _span_counts(engine) == {t.trace_id: 4 for t in fresh}
    assert _column(engine, LOGS.c.trace_id) == {t.trace_id for t in fresh}
    # The old traces were scored before their spans went, and keep their scores.
    assert _column(engine, SCORES.c.trace_id) == {t.trace_id for t in old + fresh}
    assert 'tracescore_retention_removed_total{kind="spans"} 48.0' in exposition
    assert 'tracescore_retention_removed_total{kind="logs"} 12.0' in exposition
    assert "tracescore_retention_last_pass_timestamp_seconds" in exposition
    assert "tracescore_retention_last_pass_duration_seconds" in exposition
    engine.dispose()

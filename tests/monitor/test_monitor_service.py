"""Monitoring inside real ``tracescore serve`` processes: ingest counters, API, alert task."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.support.paths import CAPTURES
from tests.support.score_streams import Drop, insert_rows, stream
from tests.support.server_process import start_server, wait_for
from tests.support.webhook_receiver import webhook_receiver
from tracescore import metrics
from tracescore.config import parse_config
from tracescore.ingest.decode import decode_traces
from tracescore.monitor.alerts import LEASE_NAME
from tracescore.monitor.tasks import sample_trace_states
from tracescore.service import Service
from tracescore.store import open_store
from tracescore.store.leases import lease_expiry

CAPTURE = CAPTURES / "mastra" / "plain_chat" / "0001"


def _metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_two_served_instances_one_evaluator_metrics_and_api(tmp_path: Path, pg_url: str) -> None:
    """Two ``tracescore serve`` on one PostgreSQL database: ingest counters, the API, and alert
    rules evaluated by one instance only, handed over on a graceful stop without re-firing."""
    now = datetime.now(UTC)
    store = open_store(pg_url)
    # Two hours of history; the last 10 minutes of agent "sales" dropped by 0.2.
    insert_rows(
        store.engine,
        stream(
            random.Random(4),
            now - timedelta(hours=2),
            now,
            per_minute=4,
            agents=["support", "sales"],
            drops={"sales": [Drop(now - timedelta(minutes=10), 0.2)]},
            scorer_id="synthetic-quality",
        ),
    )
    with webhook_receiver() as hook:
        config = {
            "monitor": {"evaluation_interval": 0.2, "gauge_interval": 0.2},
            "alerts": {
                "channels": [{"name": "hook", "type": "webhook", "url": hook.url}],
                "rules": [
                    {
                        "name": "quality-drop",
                        "type": "regression",
                        "scorer": "synthetic-quality",
                        "window": "10m",
                        "baseline": "1h",
                        "segment_by": ["agent"],
                        "min_delta": 0.1,
                    }
                ],
            },
        }
        with (
            start_server(tmp_path / "a", db_url=pg_url, config=config) as first,
            start_server(tmp_path / "b", db_url=pg_url, config=config) as second,
        ):
            spans = len(decode_traces(CAPTURE.with_suffix(".pb").read_bytes(), json=False).spans)
            response = first.http.post(
                "/v1/traces",
                content=CAPTURE.with_suffix(".json").read_bytes(),
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200
            with grpc.insecure_channel(first.grpc_endpoint) as channel:
                export = channel.unary_unary(
                    "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
                )
                export(CAPTURE.with_suffix(".pb").read_bytes(), timeout=10)
                try:
                    export(b"\xff\xff not protobuf", timeout=10)
                except grpc.RpcError as exc:
                    assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
            bad = first.http.post(
                "/v1/traces",
                content=b"{",
                headers={"Content-Type": "application/json"},
            )
            assert bad.status_code == 400

            wait_for(hook.received, 30, "a webhook delivery")
            time.sleep(1.5)  # several more rounds on both instances
            texts = [server.http.get("/metrics", timeout=30).text for server in (first, second)]
            rounds = [_metric(text, "tracescore_alert_evaluations_total") for text in texts]
            lead = 0 if rounds[0] > rounds[1] else 1
            leader, follower = (first, second) if lead == 0 else (second, first)
            assert rounds[lead] >= 5 and rounds[1 - lead] == 0, "only the lease holder evaluates"

            leader.stop()  # a graceful stop releases the lease: the other instance takes over
            wait_for(
                lambda: (
                    _metric(
                        follower.http.get("/metrics", timeout=30).text,
                        "tracescore_alert_evaluations_total",
                    )
                    >= 3
                ),
                30,
                "the follower evaluating",
            )
            alerts = follower.http.get("/api/alerts", timeout=30).json()
            scores = follower.http.get(
                "/api/scores",
                params={"scorer": "synthetic-quality", "limit": 5},
                timeout=30,
            ).json()
        (fired,) = hook.received()  # one notification across both instances and the handover

    text = texts[0]
    assert _metric(text, "tracescore_spans_received_total", transport="http") == spans
    assert _metric(text, "tracescore_spans_received_total", transport="grpc") == spans
    requests = "tracescore_export_requests_total"
    assert _metric(text, requests, transport="http", signal="traces", outcome="ok") == 1
    assert _metric(text, requests, transport="http", signal="traces", outcome="invalid") == 1
    assert _metric(text, requests, transport="grpc", signal="traces", outcome="invalid") == 1
    assert _metric(text, requests, transport="grpc", signal="traces", outcome="ok") == 1
    assert _metric(texts[lead], "tracescore_alerts_firing", rule="quality-drop") == 1
    assert "tracescore_traces" in {f.name for f in text_string_to_metric_families(text)}
    assert fired["status"] == "firing" and fired["segment"] == {"agent": "sales"}
    assert alerts["firing"] == 1 and [e["status"] for e in alerts["events"]] == ["firing"]
    assert len(scores["items"]) == 5 and scores["next_cursor"]
    # The last instance's graceful stop released the alerts lease too (beside the leases of
    # retention and the feedback scan, other tasks of the same table).
    with store.engine.connect() as connection:
        expires_at = lease_expiry(connection, LEASE_NAME)
    store.close()
    assert expires_at == 0.0


def test_backlog_gauges_follow_trace_states(sqlite_url: str) -> None:
    store = Service(parse_config(f"store: {sqlite_url}")).store  # counts promotions, as served
    try:
        decoded = decode_traces(CAPTURE.with_suffix(".pb").read_bytes(), json=False)
        store.write(decoded.spans)
        sample_trace_states(store.engine)
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "pending"}) == 1
        assert metrics.REGISTRY.get_sample_value("tracescore_queue_depth") == 0
        ready_before = metrics.REGISTRY.get_sample_value("tracescore_traces_ready_total")
        assert store.queue.promote(now=time.time() + 3600) == 1
        assert (
            metrics.REGISTRY.get_sample_value("tracescore_traces_ready_total") == ready_before + 1
        )
        sample_trace_states(store.engine)
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "pending"}) == 0
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "ready"}) == 1
        assert metrics.REGISTRY.get_sample_value("tracescore_queue_depth") == 1
    finally:
        store.close()

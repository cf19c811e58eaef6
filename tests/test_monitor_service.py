"""Monitoring inside the real ``tracescore serve`` process: ingest counters, API, alert task."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import grpc
import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from tests.conftest import CAPTURES
from tests.score_streams import Drop, insert_rows, stream
from tests.server_process import start_server
from tests.webhook_receiver import webhook_receiver
from tracescore.ingest.decode import decode_traces
from tracescore.monitor import metrics
from tracescore.monitor.tasks import sample_trace_states
from tracescore.store import open_store
from tracescore.store.alerts import AlertLeaderRow

CAPTURE = CAPTURES / "mastra" / "plain_chat" / "0001"


def _metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_served_metrics_api_and_alerts(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'tracescore.db'}"
    now = datetime.now(timezone.utc)
    store = open_store(db_url)
    # Two hours of history; the last 10 minutes of agent "sales" dropped by 0.2.
    insert_rows(
        store.engine,
        stream(random.Random(4), now - timedelta(hours=2), now, per_minute=4, agents=["support", "sales"],
               drops={"sales": [Drop(now - timedelta(minutes=10), 0.2)]}, scorer_id="synthetic-quality"),
    )  # fmt: skip
    with webhook_receiver() as hook:
        config = {
            "monitor": {"evaluation_interval": 0.2, "gauge_interval": 0.2},
            "alerts": {
                "channels": [{"name": "hook", "type": "webhook", "url": hook.url}],
                "rules": [{"name": "quality-drop", "type": "regression", "scorer": "synthetic-quality",
                           "window": "10m", "baseline": "1h", "segment_by": ["agent"], "min_delta": 0.1}],
            },
        }  # fmt: skip
        with start_server(tmp_path / "server", db_url=db_url, config=config) as server:
            spans = len(decode_traces(CAPTURE.with_suffix(".pb").read_bytes(), json=False).spans)
            response = httpx.post(
                f"{server.base_url}/v1/traces", content=CAPTURE.with_suffix(".json").read_bytes(),
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            assert response.status_code == 200
            with grpc.insecure_channel(server.grpc_endpoint) as channel:
                export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
                export(CAPTURE.with_suffix(".pb").read_bytes(), timeout=10)
                try:
                    export(b"\xff\xff not protobuf", timeout=10)
                except grpc.RpcError as exc:
                    assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
            bad = httpx.post(
                f"{server.base_url}/v1/traces", content=b"{", headers={"Content-Type": "application/json"}
            )
            assert bad.status_code == 400

            deadline = time.monotonic() + 20
            while not hook.received() and time.monotonic() < deadline:
                time.sleep(0.1)
            text = httpx.get(f"{server.base_url}/metrics").text
            alerts = httpx.get(f"{server.base_url}/api/alerts").json()
            scores = httpx.get(
                f"{server.base_url}/api/scores", params={"scorer": "synthetic-quality", "limit": 5}
            ).json()
        (fired,) = hook.received()

    assert _metric(text, "tracescore_spans_received_total", transport="http") == spans
    assert _metric(text, "tracescore_spans_received_total", transport="grpc") == spans
    requests = "tracescore_export_requests_total"
    assert _metric(text, requests, transport="http", signal="traces", outcome="ok") == 1
    assert _metric(text, requests, transport="http", signal="traces", outcome="invalid") == 1
    assert _metric(text, requests, transport="grpc", signal="traces", outcome="invalid") == 1
    assert _metric(text, requests, transport="grpc", signal="traces", outcome="ok") == 1
    assert _metric(text, "tracescore_alerts_firing", rule="quality-drop") == 1
    assert _metric(text, "tracescore_alert_evaluations_total") >= 1
    assert "tracescore_traces" in {f.name for f in text_string_to_metric_families(text)}
    assert fired["status"] == "firing" and fired["segment"] == {"agent": "sales"}
    assert alerts["firing"] == 1 and alerts["events"][0]["status"] == "firing"
    assert len(scores["items"]) == 5 and scores["next_cursor"]
    # A graceful stop released the evaluator lease for the next instance.
    with store.engine.connect() as connection:
        (expires_at,) = connection.execute(select(AlertLeaderRow.__table__.c.expires_at)).one()
    store.close()
    assert expires_at == 0.0


def test_backlog_gauges_follow_trace_states(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        decoded = decode_traces(CAPTURE.with_suffix(".pb").read_bytes(), json=False)
        store.write(decoded.spans)
        sample_trace_states(store.engine)
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "pending"}) == 1
        assert metrics.REGISTRY.get_sample_value("tracescore_queue_depth") == 0
        assert store.promote_ready(now=time.time() + 3600) == 1
        sample_trace_states(store.engine)
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "pending"}) == 0
        assert metrics.REGISTRY.get_sample_value("tracescore_traces", {"state": "ready"}) == 1
        assert metrics.REGISTRY.get_sample_value("tracescore_queue_depth") == 1
    finally:
        store.close()

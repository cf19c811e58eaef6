"""PostgreSQL restarted under load: ingest answers 503 with ``Retry-After`` while the database
is down, recovers by itself when it is back, and loses nothing it acknowledged.

Runs on a private throwaway cluster (``tests/support/throwaway_pg.py``), never on the shared server.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.agent_otlp import AgentTrace, agent_trace, export_request
from tests.support.server_process import start_server, wait_for
from tests.support.throwaway_pg import ThrowawayPostgres
from tracescore.store import open_store

pytestmark = pytest.mark.pg_cluster
DOWN_SECONDS = 2.0
# A claim whose completion the outage swallowed is retaken when its lease expires.
CONFIG = {"workers": {"poll_interval": 0.05}, "assembly": {"lease_seconds": 3}}


class Exporter(threading.Thread):
    """One trace per request, as fast as answered; records every status and what was acked."""

    def __init__(self, base_url: str) -> None:
        super().__init__(daemon=True)
        self.base_url = base_url
        self.acknowledged: list[AgentTrace] = []
        self.statuses: Counter[int] = Counter()
        self.retry_after: set[str | None] = set()
        self.stopping = threading.Event()

    def run(self) -> None:
        rng = random.Random(5)
        with httpx.Client(base_url=self.base_url, timeout=10) as client:
            while not self.stopping.is_set():
                trace = agent_trace(rng)
                response = client.post(
                    "/v1/traces",
                    content=export_request(trace.spans),
                    headers={"Content-Type": "application/x-protobuf"},
                )
                self.statuses[response.status_code] += 1
                if response.status_code == 200:
                    self.acknowledged.append(trace)
                else:
                    self.retry_after.add(response.headers.get("retry-after"))
                    time.sleep(0.05)
                time.sleep(0.01)


def test_postgres_restart_means_503_retry_after_then_recovery_without_loss(tmp_path: Path) -> None:
    with (
        ThrowawayPostgres() as postgres,
        start_server(tmp_path, db_url=postgres.url, config=CONFIG) as server,
    ):
        exporter = Exporter(server.base_url)
        exporter.start()
        try:
            wait_for(lambda: len(exporter.acknowledged) >= 20, 30, "exports before the restart")
            postgres.stop()
            wait_for(
                lambda: exporter.statuses[503] >= 3, 15, "503 answers while the database is down"
            )
            assert httpx.get(f"{server.base_url}/healthz", timeout=5).status_code == 200
            time.sleep(DOWN_SECONDS)
            acknowledged_while_down = len(exporter.acknowledged)
            postgres.start()
            wait_for(
                lambda: len(exporter.acknowledged) >= acknowledged_while_down + 20, 30, "recovery"
            )
        finally:
            exporter.stopping.set()
            exporter.join()
        traces = exporter.acknowledged
        settling = open_store(postgres.url, create=False)
        assert settling.journal.settle(timeout=30), (
            "acknowledged requests still waiting in the journal"
        )
        settling.close()
        engine = create_engine(postgres.url)

        def stored() -> set[tuple[str, str]]:
            with engine.connect() as connection:
                return {
                    (bytes(t).hex(), bytes(s).hex())  # ids are stored as bytes
                    for t, s in connection.execute(text("SELECT trace_id, span_id FROM spans"))
                }

        def scored() -> set[str]:
            with engine.connect() as connection:
                scores = connection.execute(text("SELECT trace_id FROM scores")).scalars()
                return {bytes(trace_id).hex() for trace_id in scores}  # stored as bytes

        try:
            sent = {(t.trace_id, span.span_id.hex()) for t in traces for span in t.spans}
            assert sent <= stored(), f"{len(sent - stored())} acknowledged spans lost"
            # Background work (assembly, scoring) came back too, not only the receiver.
            wait_for(
                lambda: {t.trace_id for t in traces} <= scored(),
                60,
                "every acknowledged trace scored",
            )
        finally:
            engine.dispose()
    assert set(exporter.statuses) == {200, 503}, exporter.statuses
    assert exporter.retry_after == {"1"}
    print(
        f"\nstore restart: {exporter.statuses[200]} exports acknowledged, {exporter.statuses[503]} "
        f"answered 503 + Retry-After while PostgreSQL was down; {len(sent)} acknowledged spans, all stored"
    )

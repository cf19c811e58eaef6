"""PostgreSQL down under a running ``tracescore serve``, seen from the read side: the REST API and
the dashboard answer 503 with ``Retry-After`` (not 500, not a dropped connection), the
background loops (promoter, queue gauges, alert rounds, scoring worker, unpacker) back off and
log when the outage starts and when it ends rather than a traceback per poll (ingest, which
answers 503 too, likewise per outage, not per request), and everything
answers again once the database is back.

Runs on a private throwaway cluster (``tests/support/throwaway_pg.py``), never on the shared server.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import httpx
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import start_server, wait_for
from tests.support.throwaway_pg import ThrowawayPostgres
from tracescore.web.live import VERSION_TTL
from tracescore.web.router import OVERVIEW_TTL

pytestmark = pytest.mark.pg_cluster
OUTAGE_SECONDS = 5.0
SHARED_FOR = max(OVERVIEW_TTL, VERSION_TTL)
"""How long the overview and the live version are shared between tabs once read: answers read
before the stop may be served that long into the outage, from memory, never longer."""
# Every loop polls fast, so a loop that logs per poll would write hundreds of lines.
CONFIG = {
    "workers": {"poll_interval": 0.05},
    "monitor": {"evaluation_interval": 0.1, "gauge_interval": 0.1},
    "alerts": {
        "rules": [
            {
                "name": "errors",
                "type": "error_rate",
                "binding": "tone",
                "above": 0.5,
                "window": "10m",
            }
        ]
    },
}
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def read_routes(trace_id: str) -> list[str]:
    return [
        "/api/traces",
        f"/api/traces/{trace_id}",
        f"/api/traces/{trace_id}/runs",
        "/api/scores",
        "/api/scores/summary",
        "/api/coverage",
        "/api/alerts",
        "/",
        f"/ui/traces/{trace_id}",
        f"/ui/live?trace={trace_id}",
        "/ui/alerts",
        "/ui/runs?since=2026-01-01T00:00Z",
        "/ui/compare",
    ]


def _scored(client: httpx.Client, trace_id: str) -> bool:
    response = client.get(f"/api/traces/{trace_id}")
    return response.status_code == 200 and response.json()["summary"]["state"] == "scored"


def test_reads_answer_503_and_loops_log_state_changes_only_while_postgres_is_down(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    with (
        ThrowawayPostgres() as postgres,
        start_server(tmp_path, db_url=postgres.url, config=CONFIG) as server,
    ):
        client = server.http
        before = agent_trace(rng)
        assert (
            client.post(
                "/v1/traces", content=export_request(before.spans), headers=PROTOBUF
            ).status_code
            == 200
        )
        wait_for(lambda: _scored(client, before.trace_id), 60, "the first trace scored")
        routes = read_routes(before.trace_id)
        healthy = {route: client.get(route).status_code for route in routes}
        assert set(healthy.values()) == {200}, healthy

        log_before = len(server.output().splitlines())
        postgres.stop()
        stopped = time.monotonic()
        answers: dict[str, set[tuple[int, str | None]]] = {
            route: set() for route in [*routes, "/v1/traces"]
        }
        while time.monotonic() - stopped < OUTAGE_SECONDS:
            for route in routes:
                asked = time.monotonic()
                response = client.get(route)  # a dropped connection raises here
                seen = (response.status_code, response.headers.get("retry-after"))
                if seen == (200, None) and asked - stopped < SHARED_FOR:
                    continue  # a page or live version many tabs share, read before the stop
                answers[route].add(seen)
            response = client.post(
                "/v1/traces", content=export_request(agent_trace(rng).spans), headers=PROTOBUF
            )
            answers["/v1/traces"].add((response.status_code, response.headers.get("retry-after")))
            time.sleep(0.2)
        outage_log = server.output().splitlines()[log_before:]

        postgres.start()
        after = agent_trace(rng)
        wait_for(
            lambda: (
                client.post(
                    "/v1/traces", content=export_request(after.spans), headers=PROTOBUF
                ).status_code
                == 200
            ),
            30,
            "ingest back",
        )
        wait_for(
            lambda: _scored(client, after.trace_id), 60, "a trace sent after the outage scored"
        )
        recovered = {route: client.get(route).status_code for route in routes}
        # The loops' "available again" lines, each written at its next poll after the return.
        wait_for(
            lambda: server.output().count("available again") >= 3,
            10,
            lambda: f"three loops' 'available again' lines in {server.output()[-4000:]}",
        )

    refused = {route: seen for route, seen in answers.items() if seen != {(503, "1")}}
    assert not refused, refused
    assert set(recovered.values()) == {200}, recovered
    text = "\n".join(outage_log)
    # One line when each loop's failures start (promoter, gauges, alert rounds, worker, unpacker),
    # one for reads and one for ingest, none per poll or per refused request: bounded, whatever
    # the poll intervals and however many requests come.
    assert len(outage_log) <= 12, text
    assert "Traceback" not in text, text
    print(
        f"\nPostgreSQL down {OUTAGE_SECONDS:g} s: {len(routes)} read routes answered 503 + Retry-After "
        f"every time; {len(outage_log)} log lines meanwhile:\n" + text
    )

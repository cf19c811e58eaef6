"""Alert-driven sampling on a running service (issue 37, item 3): a binding sampling 10 % with
``boost: {rate: 1.0, while: quality-low}`` judges every run while that alert fires (evaluated by
the service itself from the stored scores) and falls back to its rate once it resolves; the
coverage API counts each phase's share. A binding boosted alike but limited to 5 runs a minute
samples as many and scores no more than its limit lets it."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.score_streams import insert_rows, score_row
from tests.support.server_process import ServerProcess, start_server, wait_for
from tracescore.store import open_store

PER_PHASE = 40
BOOST_REFRESH = 0.5
"""``workers.boost_refresh``: how stale each process's firing state may be (default 3 s)."""
CONFIG = {
    "monitor": {"evaluation_interval": 0.2},
    "workers": {"boost_refresh": BOOST_REFRESH},
    "scorers": [
        {
            "name": "judged",
            "scorer": "completeness",
            "sampling": {"rate": 0.1, "boost": {"rate": 1.0, "while": "quality-low"}},
        },
        {
            "name": "capped",
            "scorer": "completeness",
            "sampling": {"rate": 0.1, "boost": {"rate": 1.0, "while": "quality-low"}},
            "limits": {"per_minute": 5},
        },
    ],
    "alerts": {
        "channels": [{"name": "log", "type": "log"}],
        "rules": [
            {
                "name": "quality-low",
                "type": "threshold",
                "scorer": "synthetic-quality",
                "below": 0.5,
                "window": "1h",
                "min_samples": 1,
            }
        ],
    },
}


def _coverage(server: ServerProcess, binding: str = "judged") -> dict[str, Any]:
    """The binding's coverage entry; empty before the service has decided any of its runs."""
    found = server.http.get("/api/coverage", params={"binding": binding}).json()["bindings"]
    assert len(found) <= 1, found
    return dict(found[0]) if found else {}


def _firing(server: ServerProcess) -> int:
    return int(server.http.get("/api/alerts").json()["firing"])


def _phase(server: ServerProcess, rng: random.Random, before: int) -> int:
    """Send a phase's traces; once all are decided, how many of them the binding sampled."""
    for _ in range(PER_PHASE):
        trace = agent_trace(rng)
        response = server.http.post(
            "/v1/traces",
            content=export_request(trace.spans),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code == 200
    eligible = before + PER_PHASE
    wait_for(lambda: _coverage(server).get("eligible") == eligible, 60, f"{eligible} eligible runs")
    return int(_coverage(server)["sampled"])


def _quality(engine: Any, *scores: float) -> None:
    now = datetime.now(UTC)
    insert_rows(engine, [score_row(now, s, scorer_id="synthetic-quality") for s in scores])


def test_a_firing_alert_raises_the_judged_share_and_its_resolution_lowers_it(
    tmp_path: Path,
) -> None:
    rng = random.Random(3)
    with start_server(tmp_path, config=CONFIG) as server:
        store = open_store(server.db_url)
        try:
            calm = _phase(server, rng, 0)

            _quality(store.engine, 0.1)  # the mean falls below 0.5: the rule fires
            wait_for(lambda: _firing(server) == 1, 60, "the rule firing")
            time.sleep(BOOST_REFRESH + 1.5)  # every process has read the firing state
            boosted = _phase(server, rng, PER_PHASE) - calm

            _quality(store.engine, *[0.9] * 9)  # the mean recovers: the rule resolves
            wait_for(lambda: _firing(server) == 0, 60, "the rule resolved")
            time.sleep(BOOST_REFRESH + 1.5)
            after = _phase(server, rng, 2 * PER_PHASE) - calm - boosted
            wait_for(
                lambda: _coverage(server, "capped").get("eligible") == 3 * PER_PHASE,
                60,
                "every run eligible for the capped binding",
            )
            capped = _coverage(server, "capped")
        finally:
            store.close()
    assert calm <= PER_PHASE // 4  # about a tenth
    assert boosted == PER_PHASE  # every run judged while the alert fires
    assert after <= PER_PHASE // 4
    assert capped["sampled"] == calm + boosted + after  # the same rates, boosted alike
    assert capped["statuses"].get("skipped_rate", 0) > 0  # ... but its limit still applies
    assert capped["scored"] < capped["sampled"]

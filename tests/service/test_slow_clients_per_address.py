"""300 stalled uploads from one address, reopened as soon as they are cut, do not starve the
OTLP/HTTP exports of another client (issue 33, item 4: 14 of 19 valid exports answered 503).

The stallers come from 127.0.0.2 (Linux routes the whole 127.0.0.0/8 to loopback: the client
socket is bound to it), the valid exports from 127.0.0.1. One address may hold only its share
of the body readers, and a pool at least half taken cuts stalled bodies after a shorter grace.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import httpx

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import start_server, wait_for
from tests.support.stallers import PROTOBUF, Stallers

STALLERS = 300
ATTACKER = "127.0.0.2"


def test_stallers_from_one_address_leave_other_clients_exporting(tmp_path: Path) -> None:
    with start_server(tmp_path) as server:
        stallers = Stallers(server.http_port, ATTACKER, STALLERS)
        stallers.start()
        try:
            # Held stallers are cut after the pressed grace (1.5 s) and reopened at once: the
            # exports below span three such rounds.
            wait_for(lambda: stallers.cut > 0, 30, "a held staller cut", every=0.05)
            rng = random.Random(4)
            statuses = []
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                for _ in range(20):
                    response = client.post(
                        "/v1/traces",
                        content=export_request(agent_trace(rng).spans),
                        headers={"Content-Type": PROTOBUF},
                    )
                    statuses.append(response.status_code)
                    time.sleep(0.25)
        finally:
            stallers.stop()
        assert statuses == [200] * 20, statuses
        # The address's share was taken and the rest refused at once; held ones were cut early.
        assert stallers.refused >= STALLERS - 128, stallers.refused
        assert stallers.cut > 0

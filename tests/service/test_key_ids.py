"""A key written ``id:secret`` keeps working while someone guesses keys from its address
(issue 46, item 6: after 25 wrong keys from an address, a valid ``POST /v1/traces`` and a valid
Langfuse export from it got 429 for a minute, and slow uploads from that address cost its
exporter 14 of 19 exports).

Wrong keys naming no configured id are counted per address, wrong secrets of a key id per key
id; a request with a key id takes that key's share of the body readers, not its address's.
Clients come from distinct loopback addresses (Linux routes all of 127.0.0.0/8 locally).
"""

from __future__ import annotations

import base64
import random
import secrets
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.server_process import ServerProcess, start_server
from tests.support.stallers import PROTOBUF, Stallers
from tracescore.ingest.http import LANGFUSE_TRACES_PATH

EXPORTER = f"exporter:{secrets.token_hex(16)}"
LANGFUSE = f"pk-lf-project:sk-lf-{secrets.token_hex(16)}"
STALLER = f"staller:{secrets.token_hex(16)}"
TARGET = f"target:{secrets.token_hex(16)}"
LEGACY = f"tsk-legacy-{secrets.token_hex(12)}"
LIMIT = 5
READERS = 8
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = {
        "server": {
            "api_keys": [EXPORTER, LANGFUSE, STALLER, TARGET, LEGACY],
            "auth_failures": LIMIT,
            "auth_failure_window": 60.0,
            "max_pending_requests": 2,
            "max_body_readers": READERS,
        }
    }
    with start_server(tmp_path_factory.mktemp("key-ids"), config=config) as process:
        yield process


def _export(client: httpx.Client, authorization: str, path: str = "/v1/traces") -> int:
    body = export_request(agent_trace(random.Random(46)).spans)
    headers = {"Authorization": authorization, "Content-Type": PROTOBUF}
    return client.post(path, content=body, headers=headers).status_code


def _basic(key: str) -> str:
    return "Basic " + base64.b64encode(key.encode()).decode()


def test_a_valid_key_id_keeps_working_while_its_address_guesses(server: ServerProcess) -> None:
    guesser = "127.0.0.1"  # where the gRPC client below comes from too
    with server.client_from(guesser) as client:
        guesses = [_export(client, f"Bearer {secrets.token_hex(16)}") for _ in range(25)]
        assert guesses == [401] * LIMIT + [429] * (25 - LIMIT)
        # Keys with an id are judged by their id's count: the exporter and the Langfuse SDK
        # (whose public key is the id) still send from the guessing address.
        assert _export(client, f"Bearer {EXPORTER}") == 200
        assert _export(client, _basic(LANGFUSE), LANGFUSE_TRACES_PATH) == 200
        assert (
            client.get(
                "/api/v1/traces", headers={"Authorization": f"Bearer {EXPORTER}"}
            ).status_code
            == 200
        )
        # A key without id is no different from a guess: the address is refused unchecked.
        assert _export(client, f"Bearer {LEGACY}") == 429
    body = export_request(agent_trace(random.Random(46)).spans)
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        export = channel.unary_unary(TRACE_EXPORT)
        export(body, metadata=[("authorization", f"Bearer {EXPORTER}")], timeout=10)
        with pytest.raises(grpc.RpcError) as refused:
            export(body, metadata=[("authorization", f"Bearer {LEGACY}")], timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_wrong_secrets_of_a_key_id_are_counted_against_that_id(server: ServerProcess) -> None:
    key_id = TARGET.split(":")[0]
    wrong = f"Bearer {key_id}:{secrets.token_hex(16)}"
    with server.client_from("127.0.0.8") as first, server.client_from("127.0.0.9") as second:
        statuses = [_export(client, wrong) for client in (first, second) * 4]
        # Spread over two addresses, the id's guesses are still counted together.
        assert statuses == [401] * LIMIT + [429] * 3
        assert _export(second, f"Bearer {TARGET}") == 429  # refused unchecked: guesses tell nothing
        # Neither address is refused for other keys, nor for guesses naming no id.
        assert _export(first, f"Bearer {EXPORTER}") == 200
        assert _export(second, f"Bearer {secrets.token_hex(16)}") == 401
    assert f"key {key_id}: {LIMIT} failed key checks" in server.output()


def test_slow_uploads_of_one_key_leave_another_key_its_share_from_the_same_address(
    server: ServerProcess,
) -> None:
    shared = "127.0.0.10"
    stallers = Stallers(
        server.http_port, shared, 3 * READERS, f"Authorization: Bearer {STALLER}\r\n"
    )
    stallers.start()
    try:
        time.sleep(2)  # every staller has been answered or is held by now
        with server.client_from(shared) as exporter:
            statuses = []
            for _ in range(10):
                statuses.append(_export(exporter, f"Bearer {EXPORTER}"))
                time.sleep(0.3)
    finally:
        stallers.stop()
    assert statuses == [200] * 10
    # The staller's key held its half of the readers and was refused the rest at once.
    assert stallers.refused >= 2 * READERS, stallers.refused

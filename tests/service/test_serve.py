"""``tracescore serve`` as a real process: config errors, crash and restart, PostgreSQL, the
read API, and the in-process ``Service`` hooks other stages use."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson
from fastapi import APIRouter

from tests.support.server_process import ServerProcess, free_port, start_server, wait_for
from tracescore.config import Config, ServerConfig
from tracescore.service import Service
from tracescore.store import open_store


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracescore.cli", "serve", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_config_errors_print_the_problem_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("server:\n  http_port: 99999\n")
    result = _serve("--config", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "server.http_port (line 2)" in result.stderr

    result = _serve("--idle-timeout", "-1", cwd=tmp_path)
    assert (result.returncode, "invalid --idle-timeout" in result.stderr) == (2, True)
    result = _serve("--config", "missing.yaml", cwd=tmp_path)
    assert (result.returncode, "cannot read config file" in result.stderr) == (2, True)
    result = _serve("--db", "mysql://db/x", cwd=tmp_path)
    assert (result.returncode, "invalid database URL" in result.stderr) == (2, True)
    assert not (tmp_path / "tracescore.db").exists()


def test_default_store_is_tracescore_db_in_the_working_directory(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracescore.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--http-port",
            str(port),
            "--grpc-port",
            str(free_port()),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=1) as client:
            while True:
                try:
                    health = client.get(f"http://127.0.0.1:{port}/healthz").json()
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and process.poll() is None
                    time.sleep(0.05)
        assert health["database"] == "sqlite"
        assert (tmp_path / "tracescore.db").exists()
    finally:
        process.terminate()
        assert process.wait(15) == 0


def _spans_request(trace_id: str, span_ids: list[str], *, root: str | None = None) -> bytes:
    spans = [
        {
            "traceId": trace_id,
            "spanId": span_id,
            "parentSpanId": root or "f" * 16,
            "name": "step",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000500000000",
        }
        for span_id in span_ids
    ]
    if root:
        spans.append(
            {
                "traceId": trace_id,
                "spanId": root,
                "name": "agent",
                "startTimeUnixNano": "1700000000000000000",
                "endTimeUnixNano": "1700000001000000000",
            }
        )
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "restart"}}]}
    return orjson.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}
    )


# Once ready, the scoring pipeline that ``serve`` runs may claim and score the trace at once.
ASSEMBLED = ("ready", "claimed", "scored")


def _wait_for_state(
    server: ServerProcess, trace_id: str, states: tuple[str, ...], timeout: float = 10
) -> dict:
    last = [""]
    # A read's own timeout is generous: the first one on a loaded two-core machine, with the
    # service's processes still starting, took over 5 s (the state is what is tested). One
    # client for every look: ``httpx.get`` builds one, SSL context included, ~25 ms of CPU.
    with httpx.Client(base_url=server.base_url, timeout=60) as client:

        def in_state() -> dict | None:
            response = client.get(f"/api/traces/{trace_id}")
            last[0] = response.text[:500]
            if response.status_code == 200 and response.json()["summary"]["state"] in states:
                return dict(response.json())
            return None

        found = wait_for(in_state, timeout, lambda: f"{trace_id} {states} ({last[0]})", every=0.05)
    return dict(found)


def test_kill_9_mid_stream_loses_no_acknowledged_span_and_assembly_resumes(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'crash.db'}"
    streamed, finished = "a" * 32, "b" * 32
    server = start_server(tmp_path / "first", db_url=db_url, idle_timeout=1.0)
    acknowledged: list[str] = []
    stop = threading.Event()

    def stream() -> None:
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            for batch in range(10_000):
                ids = [f"{batch + 1:08x}{n:08x}" for n in range(20)]
                try:
                    response = client.post(
                        "/v1/traces",
                        content=_spans_request(streamed, ids),
                        headers={"Content-Type": "application/json"},
                    )
                except httpx.TransportError:
                    return
                if response.status_code == 200:
                    acknowledged.extend(ids)
                if stop.is_set():
                    return

    # A complete trace, acknowledged but not yet idle long enough when the crash comes.
    httpx.post(
        f"{server.base_url}/v1/traces",
        content=_spans_request(finished, ["1" * 16], root="2" * 16),
        headers={"Content-Type": "application/json"},
    ).raise_for_status()
    streamer = threading.Thread(target=stream)
    streamer.start()
    while len(acknowledged) < 200:
        time.sleep(0.01)
    server.kill()  # the service and its unpacker: what was acknowledged waits in the journal
    stop.set()
    streamer.join()

    with start_server(tmp_path / "second", db_url=db_url, idle_timeout=1.0) as restarted:
        store = open_store(db_url, create=False)
        trace = store.load_trace(streamed)  # once the new collector has adopted the journal
        store.close()
        assert trace is not None
        stored = {s.span_id for s in trace.spans}
        assert set(acknowledged) <= stored
        _wait_for_state(restarted, finished, ASSEMBLED)  # resumes from the stored state
        assert _wait_for_state(restarted, streamed, ("pending",))["summary"]["has_root"] is False
        httpx.post(
            f"{restarted.base_url}/v1/traces",
            content=_spans_request(streamed, [], root="f" * 16),
            headers={"Content-Type": "application/json"},
        ).raise_for_status()
        document = _wait_for_state(restarted, streamed, ASSEMBLED)
        assert document["summary"]["span_count"] == len(stored) + 1


def test_serves_postgresql_by_plain_url_and_reads_traces_back(tmp_path: Path, pg_url: str) -> None:
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    trace_id = "C0FFEE" + "0" * 25 + "1"
    with start_server(tmp_path, db_url=plain) as server:
        body = _spans_request(trace_id, ["00000000000000AB"], root="00000000000000CD")
        response = httpx.post(
            f"{server.base_url}/v1/traces",
            content=body,
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code == 200
        document = _wait_for_state(server, trace_id.lower(), ASSEMBLED)
        assert document["trace_id"] == trace_id.lower()
        assert {(s["span_id"], s["parent_span_id"]) for s in document["spans"]} == {
            ("00000000000000cd", None),
            ("00000000000000ab", "00000000000000cd"),
        }
        assert document["spans"][0]["resource"] == {"service.name": "restart"}

        listed = httpx.get(f"{server.base_url}/api/traces", params={"service": "restart"}).json()
        assert [t["trace_id"] for t in listed["traces"]] == [trace_id.lower()]
        none = httpx.get(f"{server.base_url}/api/traces", params={"service": "other"}).json()
        assert none == {"traces": []}
        later = httpx.get(f"{server.base_url}/api/traces", params={"since": time.time() + 60})
        assert later.json() == {"traces": []}
        assert httpx.get(f"{server.base_url}/api/traces/{'d' * 32}").status_code == 404
        assert httpx.get(f"{server.base_url}/api/traces/not-an-id").status_code == 422
        assert server.stop() == 0


def test_service_runs_extra_routers_and_background_tasks(tmp_path: Path) -> None:
    config = Config(
        store=f"sqlite:///{tmp_path / 'svc.db'}",
        server=ServerConfig(host="127.0.0.1", http_port=free_port(), grpc_port=free_port()),
    )
    service = Service(config)
    router = APIRouter()

    @router.get("/extra")
    async def extra() -> dict[str, int]:
        return {"ticks": ticks}

    ticks = 0
    cancelled = threading.Event()

    async def ticker() -> None:
        nonlocal ticks
        try:
            while True:
                ticks += 1
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    service.app.include_router(router)
    service.add_background(ticker)
    thread = threading.Thread(target=service.run)
    thread.start()
    base = f"http://127.0.0.1:{config.server.http_port}"
    deadline = time.monotonic() + 20
    with httpx.Client(timeout=1) as client:
        while True:
            try:
                if client.get(f"{base}/extra").json()["ticks"] > 2:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.05)
    service.stop()
    thread.join(15)
    assert not thread.is_alive() and cancelled.is_set()

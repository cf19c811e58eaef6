"""Open tabs share what they poll: one version query per interval and one overview render per
version, however many tabs ask (issue 33, item 3: 200 tabs made a query per poll and a render
per re-fetch in the process that acknowledges ingest)."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from tests.support.web_traces import agent_trace_json
from tracescore.config import parse_config
from tracescore.ingest.unpack import drain
from tracescore.service import compose_app, create_app
from tracescore.store import open_store
from tracescore.web.readers import PAGE_PROCESS_AFTER
from tracescore.web.shared import SharedValues


def test_a_value_is_computed_once_for_every_caller_waiting_and_again_when_old() -> None:
    now = itertools.count()
    calls: list[int] = []

    async def compute() -> int:
        calls.append(1)
        await asyncio.sleep(0)  # the others ask meanwhile
        return len(calls)

    async def main() -> None:
        shared = SharedValues(ttl=5, clock=lambda: float(next(now)))
        assert await asyncio.gather(*(shared.get("k", compute) for _ in range(50))) == [1] * 50
        assert await shared.get("k", compute) == 1  # still young
        for _ in range(10):
            next(now)
        assert await shared.get("k", compute) == 2  # older than ttl: computed again

        async def fails() -> int:
            raise RuntimeError("database down")

        with pytest.raises(RuntimeError):
            await shared.get("other", fails)
        assert await shared.get("other", compute) == 3  # the failure was not kept

    asyncio.run(main())


def test_polls_and_reloads_of_many_tabs_cost_one_query_and_one_render(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'live.db'}")
    # overviews rendered in a thread (read_processes 0), where this test sees their queries
    app = create_app(parse_config("server: {read_processes: 0}"), store)
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as tabs:
            posted = await tabs.post(
                "/v1/traces",
                content=agent_trace_json("ab" * 16),
                headers={"content-type": "application/json"},
            )
            assert posted.status_code == 200
            drain(store)
            event.listen(store.engine, "before_cursor_execute", count)
            polls = await asyncio.gather(*(tabs.get("/ui/live") for _ in range(40)))
            assert {poll.status_code for poll in polls} == {200}
            assert len({poll.json()["version"] for poll in polls}) == 1
            assert len(statements) == 1  # one version query for the 40 tabs
            pages = await asyncio.gather(*(tabs.get("/") for _ in range(20)))
            assert {page.status_code for page in pages} == {200}
            assert len({page.text for page in pages}) == 1  # the same render for every tab
            # a render reads the firing alerts once (its other reads are cached for longer)
            assert sum("FROM alert_states" in sql for sql in statements) == 1

    asyncio.run(main())
    store.close()


def test_the_overview_moves_to_a_process_of_its_own_once_it_is_asked_for_again_and_again(
    tmp_path: Path,
) -> None:
    """The first renders are done here, in a thread; then the overview's process starts and
    renders the overview there: its queries are no longer this process's."""
    store = open_store(f"sqlite:///{tmp_path / 'pages.db'}")
    parts = compose_app(parse_config("{}"), store)
    app = parts.app
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    client = TestClient(app)
    views = (f"/?agent=a{n}" for n in itertools.count())  # a new view: rendered, not shared
    try:
        for _ in range(PAGE_PROCESS_AFTER):
            assert client.get(next(views)).status_code == 200
        assert sum("FROM alert_states" in sql for sql in statements) == PAGE_PROCESS_AFTER
        deadline = time.monotonic() + 180  # a loaded machine starts a process slowly
        while True:
            del statements[:]
            page = client.get(next(views))
            assert page.status_code == 200 and "Overview" in page.text
            if not any("FROM alert_states" in sql for sql in statements):
                break  # rendered in the overview's process
            assert time.monotonic() < deadline, "the overview's process never took over"
            time.sleep(0.5)
        assert client.get("/?split=nonsense").status_code == 422  # errors come back too
    finally:
        parts.reads.close()
        store.close()

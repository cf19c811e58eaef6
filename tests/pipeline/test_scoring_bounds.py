"""One big or slow trace cannot stall scoring (issue 33, item 1): leases are renewed while a
batch is scored and re-claimed a bounded number of times, a completion dropped for a lost lease
is counted, a run's text is cut to the input budget (the cut recorded on its scores), and a
synchronous scorer past its time budget is interrupted into an ``error`` score."""

from __future__ import annotations

import asyncio
import random
import time

from sqlalchemy import create_engine, text

from tests.support.agent_otlp import agent_trace, export_request
from tests.support.owners import ended_owner
from tests.support.paths import CAPTURES
from tests.support.server_process import start_server, wait_for
from tracescore import metrics
from tracescore.config import parse_config
from tracescore.ingest.decode import decode_traces
from tracescore.owners import owner_id
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import ReadinessRules, open_store
from tracescore.store.column_types import unpack_json

WEATHERBOT_CAPTURE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"
"""WeatherBot's agent turn: the spinning scorer's victim."""
RULES = ReadinessRules(idle_timeout=0.0, max_wait=60.0, max_attempts=3)
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliett",
    "kilo",
    "lima",
]


def _words(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        out.append(rng.choice(WORDS))
        size += len(out[-1]) + 1
    return " ".join(out)


def _store_with_agent_traces(db_url: str, *cities: str):
    store = open_store(db_url, RULES)
    rng = random.Random(7)
    for city in cities:
        trace = agent_trace(rng, city)
        store.write(decode_traces(export_request(trace.spans), json=False).spans, [])
    return store


def _trace_row(store, trace_id: str):
    with store.engine.connect() as connection:
        return connection.execute(
            text("SELECT state, attempts, last_error FROM traces WHERE trace_id = :t"),
            {"t": bytes.fromhex(trace_id)},
        ).one()


ANSWER = "scorers:\n  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n"


def _failed_metric(reason: str) -> float:
    return (
        metrics.REGISTRY.get_sample_value("tracescore_traces_failed_total", {"reason": reason})
        or 0.0
    )


def _score_one_batch(store, config_yaml: str):
    """The rows of one batch of every ready trace scored with ``config_yaml``'s bindings, the
    seconds it took, and its claims."""
    worker = build_worker(parse_config(config_yaml).scoring(), store)
    claims = store.queue.claim(worker.owner, 10, 30, now=time.time() + 1)
    started = time.perf_counter()
    rows = asyncio.run(worker.process_batch(claims))
    return rows, time.perf_counter() - started, claims


def test_an_expiring_lease_is_claimed_at_most_max_attempts_times_then_the_trace_fails(
    db_url: str,
) -> None:
    store = _store_with_agent_traces(db_url, "Paris")
    build_worker(
        parse_config(ANSWER).scoring(), store
    )  # it counts the queue's failures in the metrics
    counted = _failed_metric("lease_expired")
    now = time.time() + 1
    claims = [
        store.queue.claim(f"w{n}", 10, 30, now=now + 31 * n) for n in range(RULES.max_attempts)
    ]
    assert [len(c) for c in claims] == [1] * RULES.max_attempts  # each holder "died": lease expired
    assert store.queue.claim("next", 10, 30, now=now + 31 * RULES.max_attempts) == []
    summary = store.trace_summary(claims[0][0].trace_id)  # what /api/traces/{id} and the list show
    assert summary is not None and summary.state == "failed"
    assert (
        summary.last_error is not None
        and "claimed 3 times and never finished" in summary.last_error
    )
    assert _failed_metric("lease_expired") == counted + 1


def test_a_renewed_lease_is_not_claimed_again_and_a_lost_one_is_not_completed(db_url: str) -> None:
    store = _store_with_agent_traces(db_url, "Paris", "Rome")
    now = time.time() + 1
    claims = store.queue.claim("slow", 10, 30, now=now)
    assert len(claims) == 2
    assert store.queue.renew(claims[:1], 30, now=now + 20) == 1
    (taken,) = store.queue.claim("other", 10, 30, now=now + 40)  # the unrenewed one only
    assert taken.trace_id == claims[1].trace_id
    assert store.queue.complete(claims) == 1  # the lost one is dropped, and said to be
    assert _trace_row(store, claims[0].trace_id).state == "scored"
    assert _trace_row(store, claims[1].trace_id).state == "claimed"


def test_claims_of_a_process_that_has_ended_are_freed_and_a_live_ones_are_not(
    db_url: str,
) -> None:
    """What a scoring worker does as it starts: the traces a killed service's processes held
    are claimable at once, not after their lease; a live holder's stay its own."""
    store = _store_with_agent_traces(db_url, "Paris", "Rome")
    now = time.time() + 1
    gone = ended_owner()
    (killed,) = store.queue.claim(gone, 1, 60, now=now)
    (alive,) = store.queue.claim(owner_id(), 1, 60, now=now)
    assert store.queue.claim("restarted", 10, 60, now=now + 1) == []
    assert store.queue.expire_ended_claims() == 1
    (taken,) = store.queue.claim("restarted", 10, 60, now=now + 1)
    assert taken.trace_id == killed.trace_id != alive.trace_id
    assert store.queue.expire_ended_claims() == 0


def test_a_starting_worker_scores_at_once_what_an_ended_process_had_claimed(
    sqlite_url: str,
) -> None:
    store = _store_with_agent_traces(sqlite_url, "Paris")
    gone = ended_owner()
    (killed,) = store.queue.claim(gone, 1, 3600, now=time.time() + 1)  # an hour's lease
    worker = build_worker(parse_config(ANSWER).scoring(), store)

    async def run_until_scored() -> str:
        running = asyncio.create_task(worker.run())
        try:
            for _ in range(100):
                if (state := _trace_row(store, killed.trace_id).state) == "scored":
                    return state
                await asyncio.sleep(0.1)
            return state
        finally:
            running.cancel()

    assert asyncio.run(run_until_scored()) == "scored"


def test_a_run_beyond_the_input_budget_is_scored_on_its_cut_text_and_the_cut_is_recorded(
    sqlite_url: str,
) -> None:
    big = _words(random.Random(1), 300_000)
    store = _store_with_agent_traces(sqlite_url, big, "Paris")
    rows, seconds, _ = _score_one_batch(
        store,
        "scorers:\n  - {name: diff, scorer: textual-difference}\n  - {name: complete, scorer: completeness}\n"
        "workers: {budget: {max_chars: 20000}}\n",
    )
    assert seconds < 60.0  # a stall, not a speed: whole, textual-difference alone took minutes
    by_size = {row["binding"]: row for row in rows if row["steps"].get("input_cut")}
    assert set(by_size) == {"diff", "complete"} and len(rows) == 4
    cut = by_size["diff"]["steps"]["input_cut"]
    assert (
        cut["max_chars"] == 20_000
        and cut["input_chars"] > 300_000
        and cut["output_chars"] > 300_000
    )
    assert all(row["status"] == "ok" for row in rows)


def test_a_scorer_past_its_time_budget_gives_an_error_score_and_the_batch_goes_on(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url, RULES)
    from tracescore.ingest.files import load_traces

    for trace in load_traces([WEATHERBOT_CAPTURE]):
        store.write(trace.spans, trace.logs)
    rng = random.Random(3)
    store.write(
        decode_traces(export_request(agent_trace(rng, "Rome").spans), json=False).spans, []
    )  # WeatherBot too
    rows, seconds, claims = _score_one_batch(
        store,
        "scorers:\n  - {name: spin, scorer: 'tests.support.custom_scorers:spinning_for_weatherbot', target: trace}\n"
        "  - {name: diff, scorer: textual-difference, target: trace}\n"
        "workers: {budget: {scorer_seconds: 0.5}}\n",
    )
    assert seconds < 60.0  # a stall, not a speed: two runs, 0.5 s each, not 60 s each
    spins = [row for row in rows if row["binding"] == "spin"]
    assert len(spins) == 2 and all(row["status"] == "error" for row in spins)
    assert all("time budget is 0.5 s" in row["error"] for row in spins)
    assert [row["status"] for row in rows if row["binding"] == "diff"] == ["ok", "ok"]
    assert {_trace_row(store, claim.trace_id).state for claim in claims} == {"scored"}


def test_a_batch_longer_than_its_lease_keeps_it(sqlite_url: str) -> None:
    store = _store_with_agent_traces(sqlite_url, "Paris")
    config = parse_config(
        "scorers:\n  - {name: spin, scorer: 'tests.support.custom_scorers:spinning_for_weatherbot', target: trace,"
        " options: {seconds: 2.5}}\nworkers: {poll_interval: 0.05}\nassembly: {lease_seconds: 0.6}\n"
    )
    worker = build_worker(config.scoring(), store)

    async def go() -> list:
        task = asyncio.create_task(worker.run())
        await asyncio.sleep(1.8)  # three leases into the 3 s scorer
        taken = await asyncio.to_thread(store.queue.claim, "other", 10, 30)
        (trace_id,) = await asyncio.to_thread(_trace_ids, store)
        while (await asyncio.to_thread(_trace_row, store, trace_id)).state != "scored":
            await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return taken

    assert asyncio.run(go()) == []


def _trace_ids(store) -> list[str]:
    with store.engine.connect() as connection:
        return [
            bytes(row[0]).hex() for row in connection.execute(text("SELECT trace_id FROM traces"))
        ]


BIG_CONFIG = """
scorers:
  - {name: completeness, scorer: completeness}
  - {name: diff, scorer: textual-difference}
  - {name: similarity, scorer: content-similarity}
  - {name: keywords, scorer: keyword-coverage}
  - {name: tone, scorer: tone}
workers: {processes: 2, poll_interval: 0.1}
assembly: {lease_seconds: 10, max_trace_bytes: 16777216}
"""
"""Two processes scoring; the big traces (~7 MB of prompts and answers) are read whole, as a
deployment of long-context agents configures: at the default 2 MiB their runs would be read in
part and left unscored with the cut as reason (tests/store/test_trace_cut.py)."""


def test_two_big_traces_do_not_stall_the_small_ones_on_a_running_service(
    db_url: str, tmp_path
) -> None:
    rng = random.Random(11)
    big = [agent_trace(rng, _words(rng, 900_000)) for _ in range(2)]
    small = [agent_trace(rng, f"City{n}") for n in range(20)]
    with start_server(tmp_path / "server", db_url=db_url, config=BIG_CONFIG) as server:
        engine = create_engine(db_url)

        def post(trace) -> None:
            response = server.http.post(
                "/v1/traces",
                content=export_request(trace.spans),
                headers={"Content-Type": "application/x-protobuf"},
                timeout=60,
            )
            assert response.status_code == 200, response.text

        def scored(traces) -> bool:
            ids = {trace.trace_id for trace in traces}
            with engine.connect() as connection:
                states = {
                    bytes(trace_id).hex(): state
                    for trace_id, state in connection.execute(
                        text("SELECT trace_id, state FROM traces")
                    )
                }
            return all(states.get(trace_id) in ("scored", "failed") for trace_id in ids)

        for trace in big:
            post(trace)
        wait_for(
            lambda: _states(engine, big) <= {"claimed", "scored", "failed"},
            60,
            "the big traces claimed",
        )
        started = time.monotonic()
        for trace in small:
            post(trace)
        # Behind the big ones they waited minutes; within a minute is beside them.
        wait_for(lambda: scored(small), 60, "the small traces scored")
        small_seconds = time.monotonic() - started
        print(f"{len(small)} small traces scored in {small_seconds:.1f} s beside the big ones")
        wait_for(lambda: scored(big), 120, "the big traces scored or failed")
        time.sleep(3)  # room for a wrongful re-claim to show
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT trace_id, binding, status, steps FROM scores JOIN score_series ON score_series.id = scores.series_id"
                    " WHERE trace_id IN (:a, :b)"
                ),
                {"a": bytes.fromhex(big[0].trace_id), "b": bytes.fromhex(big[1].trace_id)},
            ).all()
            claims = {
                bytes(trace_id).hex(): attempts
                for trace_id, attempts in connection.execute(
                    text("SELECT trace_id, attempts FROM traces")
                )
            }
        engine.dispose()
    assert _states(create_engine(db_url), big) == {"scored"}
    assert len(rows) == 2 * 5 and {row.status for row in rows} == {"ok"}
    for row in rows:
        steps = unpack_json(row.steps)
        assert (
            steps["input_cut"]["max_chars"] == 100_000
            and steps["input_cut"]["output_chars"] > 900_000
        )
    assert all(claims[trace.trace_id] == 0 for trace in big)  # completed: no attempt left counting


def _states(engine, traces) -> set[str]:
    ids = {trace.trace_id for trace in traces}
    with engine.connect() as connection:
        return {
            state
            for trace_id, state in connection.execute(text("SELECT trace_id, state FROM traces"))
            if bytes(trace_id).hex() in ids
        }


def test_a_completion_dropped_for_a_lost_lease_is_counted(sqlite_url: str) -> None:
    store = _store_with_agent_traces(sqlite_url, "Paris")
    worker = build_worker(parse_config(ANSWER).scoring(), store)
    dropped = metrics.REGISTRY.get_sample_value("tracescore_stale_completions_total") or 0.0
    now = time.time() + 1
    claims = store.queue.claim(worker.owner, 10, 30, now=now)
    (taken,) = store.queue.claim("other", 10, 30, now=now + 31)  # the lease ran out meanwhile

    asyncio.run(worker.process_batch(claims))

    assert metrics.REGISTRY.get_sample_value("tracescore_stale_completions_total") == dropped + 1
    assert _trace_row(store, taken.trace_id).state == "claimed"  # still the other worker's

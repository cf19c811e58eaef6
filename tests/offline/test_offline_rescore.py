"""``tracescore rescore`` and ``compare`` on a real store holding the captured traces.

The LLM scorer is the prebuilt faithfulness scorer (claims, verdicts, reason: three judge calls),
answered by the scripted OpenAI-compatible judge server over HTTP under model names litellm
prices, so the dry-run estimate is checked against what litellm actually charged.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from tests.support.judge_server import JudgeServer, json_reply, text_reply
from tests.support.otlp_receiver import otlp_receiver
from tests.support.paths import CAPTURES
from tracescore.cli import app
from tracescore.extract import extract_runs
from tracescore.extract.content import awaits_tool_results, has_content
from tracescore.ingest.files import load_traces
from tracescore.spans import Trace
from tracescore.store import open_store
from tracescore.store.scores import SCORES

runner = CliRunner()
HERE = "tests.support.custom_scorers"


# ----------------------------------------------------------------------------- scorers bound by tests


CLAIMS = {
    "claims": [
        "The current temperature in the city is 21 degrees Celsius.",
        "The sky is mostly sunny with a few clouds in the afternoon.",
        "There is no rain expected for the rest of the day.",
    ]
}
VERDICTS = {
    "verdicts": [
        {
            "verdict": "yes",
            "reason": "The weather tool result gives a temperature of 21 degrees for the city.",
        },
        {
            "verdict": "yes",
            "reason": "The tool result reports sunny conditions, which matches the claim.",
        },
        {"verdict": "unsure", "reason": "The context says nothing about rain later in the day."},
    ]
}
REASON = (
    "The answer states the temperature and the sky conditions, which the weather tool result "
    "supports, but nothing in the context backs the claim that no rain is expected later in the "
    "day, so two of the three claims are supported."
)


# ----------------------------------------------------------------------------- helpers

_CAPTURED = [extract_runs(trace) for trace in load_traces([CAPTURES])]
STORED = len(_CAPTURED)
TRACES = sum(1 for runs in _CAPTURED if runs)  # Mastra 0.x also sends run-less root traces
RUNS = sum(run.primary for runs in _CAPTURED for run in runs)  # one score per binding each
SCORED = sum(
    run.primary and has_content(run) and not awaits_tool_results(run)
    for runs in _CAPTURED
    for run in runs
)
"""Runs scored ``ok``; the others carry no content (capture off) or are a loop's tool-call-only
step (a raw client's first call, in a trace of its own), and are ``not_scorable``."""


def _populate(url: str) -> str:
    """``url`` once its store holds every captured trace (``STORED``; ``RUNS`` primary runs)."""
    store = open_store(url)
    for trace in load_traces([CAPTURES]):
        store.write(trace.spans, trace.logs)
    store.close()
    return url


@pytest.fixture
def stored(sqlite_url: str) -> str:
    return _populate(sqlite_url)


def _config(
    tmp_path: Path,
    scorers: list[dict],
    judge_url: str | None = None,
    model: str = "openai/gpt-4o-mini",
) -> Path:
    config: dict = {"scorers": scorers}
    if judge_url is not None:
        config["judges"] = {"default": {"model": model, "api_base": judge_url}}
    path = tmp_path / f"config-{len(list(tmp_path.glob('config-*')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _rescore(db: str, config: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["rescore", "--db", db, "--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


def _rows(db: str) -> list[dict]:
    engine = create_engine(db)
    with engine.connect() as connection:
        rows = [dict(r._mapping) for r in connection.execute(select(SCORES))]
    engine.dispose()
    return rows


def _key(row: dict) -> tuple:
    return row["id"], row["binding"], row["scorer_version"], row["score"], row["status"]


# ----------------------------------------------------------------------------- tests


def test_rescore_twice_is_idempotent(tmp_path: Path, db_url: str) -> None:
    stored = _populate(db_url)
    config = _config(
        tmp_path,
        [
            {"name": "completeness", "scorer": "completeness"},
            {"name": "length", "scorer": f"{HERE}:answer_length"},
        ],
    )
    code, _, err = _rescore(stored, config, "--since", "1d")
    assert code == 0, err
    first = _rows(stored)
    assert len(first) == 2 * RUNS
    assert f"{2 * RUNS} scores stored for {TRACES} of the {STORED} traces in the window" in err
    code, _, err = _rescore(stored, config, "--since", "1d")
    assert code == 0 and f"0 scores stored for 0 of the {STORED} traces in the window" in err
    assert sorted(map(_key, _rows(stored))) == sorted(map(_key, first))
    code, _, err = _rescore(stored, config, "--since", "1d", "--force")
    assert code == 0 and f"{2 * RUNS} scores stored" in err
    again = _rows(stored)
    assert sorted(map(_key, again)) == sorted(map(_key, first))
    assert {r["id"]: r["created_at"] for r in again} == {r["id"]: r["created_at"] for r in first}


def test_since_window_and_binding_selection(tmp_path: Path, stored: str) -> None:
    config = _config(
        tmp_path,
        [{"name": "completeness", "scorer": "completeness"}, {"name": "tone", "scorer": "tone"}],
    )
    code, out, _ = _rescore(stored, config, "--dry-run", "--since", "2020-01-01T00:00:00")
    assert code == 0 and f"{TRACES} traces, {2 * RUNS} runs to score" in out
    code, out, _ = _rescore(stored, config, "--dry-run", "--binding", "tone")
    assert code == 0 and f"{RUNS} runs to score" in out and "completeness" not in out
    # Stored traces were last active just now: nothing in a window that ended before.
    code, out, _ = _rescore(stored, config, "--dry-run", "--since", "0s")
    assert code == 0 and "0 traces, 0 runs" in out
    for args in (["--binding", "nope"], ["--since", "yesterday"]):
        code, _, err = _rescore(stored, config, *args)
        assert code == 2, (args, err)


def test_bumped_version_is_stored_beside_the_old_and_compared(tmp_path: Path, stored: str) -> None:
    def binding(version: str, per_char: float) -> list[dict]:
        return [
            {
                "name": "length",
                "scorer": f"{HERE}:answer_length",
                "threshold": 0.5,
                "options": {"version": version, "per_char": per_char},
            }
        ]

    assert _rescore(stored, _config(tmp_path, binding("1", 0.005)))[0] == 0
    assert _rescore(stored, _config(tmp_path, binding("2", 0.02)))[0] == 0
    rows = _rows(stored)
    by_version = {
        v: {(r["trace_id"], r["span_id"]): r for r in rows if r["scorer_version"] == v}
        for v in ("1", "2")
    }
    assert len(rows) == 2 * RUNS and by_version["1"].keys() == by_version["2"].keys()
    result = runner.invoke(
        app,
        [
            "compare",
            "--db",
            stored,
            "--binding",
            "length",
            "--versions",
            "1",
            "2",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    pairs = [(by_version["1"][k]["score"], by_version["2"][k]["score"]) for k in by_version["1"]]
    assert report["n_paired"] == RUNS
    assert report["mean_difference"] == pytest.approx(statistics.fmean(b - a for a, b in pairs))
    assert report["pearson"] == pytest.approx(statistics.correlation(*zip(*pairs, strict=True)))
    same = sum((a >= 0.5) == (b >= 0.5) for a, b in pairs)
    assert report["label_agreement"] == pytest.approx(same / RUNS) and same < RUNS
    text = runner.invoke(
        app, ["compare", "--db", stored, "--binding", "length", "--versions", "1", "2"]
    )
    assert f"paired: {RUNS}" in text.stdout and "pearson r" in text.stdout
    missing = runner.invoke(
        app, ["compare", "--db", stored, "--binding", "length", "--versions", "1", "9"]
    )
    assert missing.exit_code == 1 and "no run was scored by both versions" in missing.stderr


def _judge_server() -> JudgeServer:
    server = JudgeServer().start()
    server.script("FaithfulnessClaims", json_reply(CLAIMS))
    server.script("FaithfulnessVerdicts", json_reply(VERDICTS))
    server.default = text_reply(REASON)
    return server


FAITHFULNESS = [{"name": "faithfulness", "scorer": "faithfulness"}]


def _estimate_and_spend(
    db: str, config: Path, server: JudgeServer, *args: str
) -> tuple[float, float]:
    """The dry run's estimate, then what the real run spent (scores' cost_usd)."""
    before_rows = {r["id"]: r["cost_usd"] for r in _rows(db)}
    requests = server.count
    # Every distinct run priced: this checks the pricing, not the sample's extrapolation.
    sample = ("--estimate-sample", str(RUNS))
    code, out, err = _rescore(db, config, "--dry-run", *sample, "--format", "json", *args)
    assert code == 0, err
    assert server.count == requests  # the estimate called no judge
    estimate = json.loads(out)
    assert estimate["runs"] == RUNS
    code, _, err = _rescore(db, config, *args)
    assert code == 0, err
    rows = _rows(db)
    assert sorted(r["status"] for r in rows) == ["not_scorable"] * (RUNS - SCORED) + ["ok"] * SCORED
    spent = sum(r["cost_usd"] for r in rows) - (sum(before_rows.values()) if not args else 0.0)
    return estimate["cost_usd"], spent


def test_dry_run_estimate_matches_the_judge_spend(tmp_path: Path, stored: str) -> None:
    server = _judge_server()
    try:
        # No past judge calls: every step priced on the scorer's sketched answers (claims from
        # the answer's sentences, a verdict per claim, a reason of two or three sentences).
        config = _config(tmp_path, FAITHFULNESS, server.base_url)
        estimate, spent = _estimate_and_spend(stored, config, server)
        assert spent > 0
        assert estimate == pytest.approx(spent, rel=0.2)
        # Same runs, same judge: every request is in the verdict cache, so nothing is paid.
        estimate, spent = _estimate_and_spend(stored, config, server, "--force")
        assert estimate == spent == 0.0
        # Another priced model: nothing cached; the stored answers to the same prompts stand in
        # for the new model's, with their output tokens.
        other = _config(tmp_path, FAITHFULNESS, server.base_url, model="openai/gpt-4o")
        estimate, spent = _estimate_and_spend(stored, other, server, "--force")
        assert spent > 0
        assert estimate == pytest.approx(spent, rel=0.2)
    finally:
        server.stop()


def _store_copies(url: str, traces: list[Trace], copies: int) -> str:
    """``url`` once its store holds ``copies`` copies of each trace, each under its own id."""
    store = open_store(url)
    for copy in range(copies):
        for trace in traces:
            trace_id = f"{copy:08x}{trace.trace_id[8:]}"
            store.write(
                [dataclasses.replace(span, trace_id=trace_id) for span in trace.spans],
                [dataclasses.replace(log, trace_id=trace_id) for log in trace.logs],
            )
    store.close()
    return url


def test_copies_of_a_run_are_priced_once_as_the_verdict_cache_serves_them(tmp_path: Path) -> None:
    # Two WeatherBot turns (different answers and contexts), each stored 100 times: 200 runs,
    # more than the 100 a dry run renders. The verdict cache answers every copy's requests, so
    # the real run pays for two runs; the estimate once extrapolated the 100 sampled runs (both
    # turns, the other copies free) to 200, twice what is paid.
    turns = load_traces(
        [
            CAPTURES / "pydantic-ai" / "tool_call",
            CAPTURES / "openinference-openai-agents" / "tool_call",
        ]
    )
    server = _judge_server()
    try:
        config = _config(tmp_path, FAITHFULNESS, server.base_url)
        estimated, spent = [], []
        for copies in (1, 100):
            db = _store_copies(f"sqlite:///{tmp_path / f'copies-{copies}.db'}", turns, copies)
            code, out, err = _rescore(db, config, "--dry-run", "--format", "json")
            assert code == 0, err
            assert json.loads(out)["runs"] == 2 * copies
            estimated.append(json.loads(out)["cost_usd"])
            # One trace at a time: copies in flight together would each miss the cache.
            code, _, err = _rescore(db, config, "--concurrency", "1")
            assert code == 0, err
            spent.append(sum(r["cost_usd"] for r in _rows(db)))
        assert spent[1] == pytest.approx(spent[0]) and spent[0] > 0
        assert estimated[1] == pytest.approx(estimated[0])
        assert estimated[0] == pytest.approx(spent[0], rel=0.2)
    finally:
        server.stop()


def test_max_cost_stops_before_the_budget(tmp_path: Path, stored: str) -> None:
    server = _judge_server()
    try:
        config = _config(tmp_path, FAITHFULNESS, server.base_url)
        code, out, _ = _rescore(stored, config, "--dry-run", "--format", "json")
        budget = json.loads(out)["cost_usd"] / 3
        code, _, err = _rescore(stored, config, "--max-cost", f"{budget:.8f}", "--concurrency", "1")
        assert code == 0, err
        assert "--max-cost budget" in err
        rows = sorted(_rows(stored), key=lambda r: r["created_at"])
        spent = sum(r["cost_usd"] for r in rows)
        assert 0 < len(rows) < RUNS
        # One trace at a time: each was started while the spend, plus the mean cost of a trace
        # so far, stayed under the budget; so before the last one the spend was under it.
        assert spent - rows[-1]["cost_usd"] < budget
        assert spent <= budget * 1.5
        # The rest is scored by the next run, without the budget.
        code, _, err = _rescore(stored, config)
        assert code == 0 and len(_rows(stored)) == RUNS
    finally:
        server.stop()


def test_rescored_scores_are_re_emitted_to_the_configured_endpoint(
    tmp_path: Path, stored: str
) -> None:
    with otlp_receiver() as receiver:
        config = tmp_path / "export.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "scorers": [{"name": "completeness", "scorer": "completeness"}],
                    "export": {"otlp_endpoint": receiver.endpoint, "batch_delay": 0.1},
                }
            )
        )
        code, _, err = _rescore(stored, config, "--no-emit")
        assert code == 0, err
        code, _, err = _rescore(stored, config, "--force")
        assert code == 0, err
        receiver.wait_for(spans=SCORED, logs=SCORED, timeout=15)
    rows = {(r["trace_id"], r["span_id"]) for r in _rows(stored) if r["status"] == "ok"}
    assert {(s.trace_id, s.parent_span_id) for s in receiver.spans} == rows
    assert len(receiver.spans) == SCORED  # nothing from the --no-emit run

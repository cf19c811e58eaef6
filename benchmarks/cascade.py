"""A cascade on a realistic stream: the share of judge calls it saves and the bad runs it still
judges (issue 37's goal: >= 90 % of the bad runs judged for <= 25 % of the judge calls of
judging every run).

The stream is the demo's (``tracescore demo``'s three agents, their spans as the demo sends
them, over OTLP/HTTP to a running ``tracescore serve``), with answers drawn 78 % good, 12 %
partial (vague but not wrong) and 10 % bad. A bad answer is, as in the demo, a refusal or an
empty pleasantry; a share of them (``--fabricated``, default 5 %) is instead the good
answer with a fabricated claim appended: fluent and on topic, which no lexical scorer can see.

Two bindings judge with answer-relevancy, each on a scripted judge of its own
(``tests/support/judge_server.py``, the truth: it finds a run irrelevant exactly when its answer
is bad): ``judge-all`` on every run, the baseline; ``judge-after`` only ``after`` the cheap code
scorer ``completeness`` scored the run below ``--below`` (0.25), plus ``--explore`` (0.05) of
the others. The threshold was set before measuring, from the scorer's meaning (a quarter of the
question's words covered). Prints the cheap stage's precision and recall, the cascade's judge
calls against the baseline's, and the bad runs it judged, overall and per kind of failure.

``--stream consistency`` sends instead the stream of issue 47
(``tests/support/consistency_stream.py``: four agents, 0–4 tool calls, six kinds of bad run in
varied wording, small talk and honest tool failures among the good runs; ``--split tune`` or
``held``, whose wordings and entities differ), with the ``consistency`` scorer upstream
(``after: {binding: consistency, below: 1, explore: 0.05}``). Each run's kind is the generator's;
per kind it prints how many runs the cheap stage flagged and the judge saw, and per check the
precision of its flags; then the scorer's recall and precision, scored directly, on the held-out
runs written apart from the stream (``tests/support/consistency_heldout.py``).

    python benchmarks/cascade.py
    python benchmarks/cascade.py --traces 2000 --explore 0.1 --fabricated 0.2
    python benchmarks/cascade.py --stream consistency --split held --traces 1500
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sqlalchemy import text  # noqa: E402

from tests.support import consistency_heldout, consistency_stream  # noqa: E402
from tests.support.judge_server import JudgeServer, json_reply  # noqa: E402
from tests.support.server_process import start_server  # noqa: E402
from tracescore.extract import extract_runs  # noqa: E402
from tracescore.offline import demo  # noqa: E402
from tracescore.scorers import registry  # noqa: E402
from tracescore.scorers.code.consistency import CHECKS  # noqa: E402
from tracescore.scorers.scorer_run import ScorerRun  # noqa: E402
from tracescore.scorers.utils import get_assistant_message  # noqa: E402
from tracescore.store import open_store  # noqa: E402

FABRICATION = " This was independently confirmed by the 2031 regional audit."
"""Appended to a good answer: a claim nothing in the run supports."""
BAD_VERDICT = "BAD-ANSWER-VERDICT"
"""The statement the truth judge extracts from a bad answer, which its next steps match."""
REFUSALS = {agent.name: agent.turns(random.Random(0)).bad for agent in demo.AGENTS}
"""The demo's bad answer of each agent (one fixed text per agent)."""


class Stream(demo.DemoSender):
    """The demo's sender with the benchmark's answer mix (no drop: the mix is steady)."""

    def __init__(self, endpoint: str, seed: int, fabricated: float) -> None:
        super().__init__(endpoint, seed=seed, drop_after=float("inf"))
        self.fabricated = fabricated

    def quality(self, agent: demo.Agent) -> str:
        return self.rng.choices(("good", "partial", "bad"), (0.78, 0.12, 0.10))[0]


def _fabricating(agent: demo.Agent, share: float, rng: random.Random) -> demo.Agent:
    """``agent`` whose bad answer is, ``share`` of the time, its good one plus a fabrication."""

    def turns(turn_rng: random.Random) -> demo.Turn:
        turn = agent.turns(turn_rng)
        if rng.random() < share:
            return dataclasses.replace(turn, bad=turn.good + FABRICATION)
        return turn

    return dataclasses.replace(agent, turns=turns)


def _truth_judge() -> JudgeServer:
    """A judge that finds an answer irrelevant exactly when it is bad: every step of a bad
    run (its answer, then the statement extracted from it, is in each prompt) gets an answer
    each step reads (a step ignores the other's key)."""
    server = JudgeServer().start()
    server.script("AnswerStatements", json_reply({"statements": ["The answer gives the facts."]}))
    server.script("RelevancyResults", json_reply({"results": [{"result": "yes", "reason": "ok"}]}))
    verdict = json_reply(
        {
            "statements": [BAD_VERDICT],
            "results": [{"result": "no", "reason": "it does not answer"}],
        }
    )
    for marker in [*REFUSALS.values(), FABRICATION.strip(), BAD_VERDICT]:
        server.script(marker, verdict)
    return server


def _config(
    all_judge: JudgeServer, cascade_judge: JudgeServer, cheap: str, below: float, explore: float
) -> dict[str, Any]:
    def judge(server: JudgeServer) -> dict[str, Any]:
        return {"model": "openai/judge", "api_base": server.base_url, "cache": False}

    return {
        "judges": {"all": judge(all_judge), "cascade": judge(cascade_judge)},
        "scorers": [
            {"name": cheap, "scorer": cheap},
            {"name": "judge-all", "scorer": "answer-relevancy", "judge": "all"},
            {
                "name": "judge-after",
                "scorer": "answer-relevancy",
                "judge": "cascade",
                "after": {"binding": cheap, "below": below, "explore": explore},
            },
        ],
        "workers": {"concurrency": 32},
    }


def _kinds(db_url: str) -> dict[str, str]:
    """Each stored trace's answer kind: ``fabricated``, ``refusal`` or ``fine``, read from its
    rebuilt run, as the scorers read it."""
    store = open_store(db_url)
    try:
        with store.engine.connect() as connection:
            ids = [
                row[0] for row in connection.execute(text("SELECT DISTINCT trace_id FROM scores"))
            ]
        kinds = {}
        for trace_id, trace in store.load_traces(ids).items():
            (run,) = [run for run in extract_runs(trace) if run.primary]
            answer = get_assistant_message(ScorerRun.of(run).output) or ""
            kinds[trace_id] = (
                "fabricated"
                if FABRICATION.strip() in answer
                else "refusal"
                if answer in REFUSALS.values()
                else "fine"
            )
        return kinds
    finally:
        store.close()


def _rows(db_url: str) -> list[Any]:
    store = open_store(db_url)
    try:
        with store.engine.connect() as connection:
            return list(
                connection.execute(
                    text(
                        "SELECT trace_id, binding, status, score, label, steps FROM scores"
                        " JOIN score_series ON score_series.id = scores.series_id"
                    )
                )
            )
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", choices=("demo", "consistency"), default="demo")
    parser.add_argument("--split", choices=consistency_stream.SPLITS, default="tune")
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--below", type=float, default=None, help="0.25 (demo), 1 (consistency)")
    parser.add_argument("--explore", type=float, default=0.05)
    parser.add_argument("--fabricated", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    consistency = args.stream == "consistency"
    args.cheap = "consistency" if consistency else "completeness"
    if args.below is None:
        args.below = 1.0 if consistency else 0.25

    rng = random.Random(f"{args.seed}-fabricated")  # not the sender's sequence: independent
    demo.AGENTS = tuple(_fabricating(agent, args.fabricated, rng) for agent in demo.AGENTS)
    all_judge, cascade_judge = _truth_judge(), _truth_judge()
    config = _config(all_judge, cascade_judge, args.cheap, args.below, args.explore)
    with (
        tempfile.TemporaryDirectory() as workdir,
        start_server(Path(workdir), config=config, scoring_processes=None) as server,
    ):
        sender = Stream(server.base_url, args.seed, args.fabricated)
        sent: dict[str, str] = {}
        if consistency:
            for run in consistency_stream.stream(args.split, args.traces, args.seed):
                sent[sender.send_turn(run.agent, run.turn, run.answer, run.finish_reason)] = (
                    run.kind
                )
        else:
            for _ in range(args.traces):
                sender.send_one()
        sender.shutdown()
        deadline = time.monotonic() + 900
        while True:
            counts = Counter(row.binding for row in _rows(server.db_url))
            if all(
                counts[name] >= args.traces for name in (args.cheap, "judge-all", "judge-after")
            ):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"not every run scored after 15 minutes: {dict(counts)}")
            time.sleep(1.0)
        rows = _rows(server.db_url)
        kinds = _stream_kinds(sent) if consistency else _kinds(server.db_url)
    all_judge.stop()
    cascade_judge.stop()
    report(rows, kinds, all_judge.count, cascade_judge.count, args)
    if consistency:
        report_checks(rows, kinds, args.cheap)
        report_heldout()


def _stream_kinds(sent: dict[str, str]) -> dict[str, str]:
    """The generator's kind of each sent trace, its good kinds all ``fine`` (what ``report``
    reads), the good kinds' own names kept in :func:`report_checks`."""
    return {
        trace: kind if kind in consistency_stream.BAD_KINDS else f"fine:{kind}"
        for trace, kind in sent.items()
    }


def report_checks(rows: list[Any], kinds: dict[str, str], cheap: str) -> None:
    """Per kind of run, how many the cheap stage flagged; per check, its flags' precision."""
    labels = {row.trace_id: row.label or "" for row in rows if row.binding == cheap}
    flagged = {trace for trace, label in labels.items() if label not in ("", "ok")}
    print(f"{cheap} per kind of run (flagged = sent to the judge by the cascade):")
    for kind in sorted(set(kinds.values())):
        of_kind = {t for t, k in kinds.items() if k == kind}
        print(
            f"  {kind}: flagged {len(of_kind & flagged)} of {len(of_kind)} ({len(of_kind & flagged) / len(of_kind):.1%})"
        )
    print("per check: runs it flagged, and the share of them that are bad (precision):")
    for check in CHECKS:
        by_check = {t for t, label in labels.items() if check in label.split("+")}
        bad = {t for t in by_check if not kinds[t].startswith("fine")}
        print(f"  {check}: {len(by_check)}, precision {len(bad) / max(1, len(by_check)):.1%}")


def report_heldout() -> None:
    """The ``consistency`` scorer on the held-out runs, per kind, its recall and precision."""
    held = consistency_heldout.runs()
    tally = consistency_heldout.tally(registry.get("consistency").factory(), held)
    print(f"held-out runs ({len(held)}, {consistency_heldout.FIXTURE.name}), scored directly:")
    for kind in sorted(tally.seen):
        print(f"  {kind}: flagged {tally.flagged[kind]} of {tally.seen[kind]}")
    print(
        f"  recall {tally.recall:.1%}, precision {tally.precision:.1%}, "
        f"good runs flagged {tally.good_flagged:.1%}"
    )
    for miss in tally.missed:
        print(f"  wrong: {miss}")


def report(
    rows: list[Any],
    kinds: dict[str, str],
    all_calls: int,
    cascade_calls: int,
    args: argparse.Namespace,
) -> None:
    by = {(row.trace_id, row.binding): row for row in rows}
    traces = sorted(kinds)
    bad = {t for t in traces if not kinds[t].startswith("fine")}
    truth = {t for t in traces if by[t, "judge-all"].score == 0.0}
    flagged = {t for t in traces if (by[t, args.cheap].score or 0.0) < args.below}
    judged = {t for t in traces if by[t, "judge-after"].status == "ok"}
    explored = {t for t in judged if t not in flagged}
    caught = judged & bad
    print(
        f"{len(traces)} runs, {len(bad)} bad ({len(bad) / len(traces):.1%}): "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(Counter(kinds[t] for t in bad).items()))
    )
    print(
        f"the truth judge on every run found {len(truth)} irrelevant, {len(truth ^ bad)} of them not bad or bad ones missed"
    )
    print(
        f"cheap stage ({args.cheap} below {args.below:g}): flagged {len(flagged)} "
        f"({len(flagged) / len(traces):.1%}), precision {len(flagged & bad) / max(1, len(flagged)):.1%}, "
        f"recall {len(flagged & bad) / max(1, len(bad)):.1%}"
    )
    print(
        f"explored: {len(explored)} of the {len(traces) - len(flagged)} unflagged runs (explore {args.explore:g})"
    )
    print(
        f"judge calls: {cascade_calls} with the cascade, {all_calls} judging every run: "
        f"{cascade_calls / all_calls:.1%} ({len(judged)} of {len(traces)} runs judged)"
    )
    print(f"bad runs judged: {len(caught)} of {len(bad)}: {len(caught) / max(1, len(bad)):.1%}")
    for kind in sorted({kinds[t] for t in bad}):
        of_kind = {t for t in bad if kinds[t] == kind}
        print(f"  {kind}: {len(of_kind & judged)} of {len(of_kind)}")


if __name__ == "__main__":
    main()

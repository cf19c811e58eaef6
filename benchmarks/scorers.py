"""Milliseconds per case for each code scorer, on short and on 10k-character runs.

    python benchmarks/scorers.py                 # tracescore only
    python benchmarks/scorers.py --vs-mastra     # also Mastra's own scorers, and the speed ratio
    python benchmarks/scorers.py --cpu           # CPU time per case instead of elapsed time
    python benchmarks/scorers.py --only-consistency  # the consistency scorer alone (issue 47)

Short cases are the parity corpus's (``tests/fixtures/parity/sample.jsonl``); long cases are
generated here (input and output of ~10,000 characters each, the output a perturbed copy of the
input so that the scorers have real work to do). Python times ``Scorer.run_sync`` per case, as
the pipeline's worker calls it, after one warm-up pass. ``--cpu`` reads the process's CPU clock
instead of the wall clock: on a machine busy with other work, what a case costs rather than how
long it also waited for a core (not with ``--vs-mastra``, whose harness reports elapsed time).

``--vs-mastra`` runs the same cases through the reference harness (``/work/shared/mastra-harness``:
``scorer.run()`` of ``@mastra/evals`` 1.10.2 on node), installed with ``npm ci`` into a copy under
``/tmp`` because the shared folder is read-only. Both sides are measured warm and alike:

- Mastra: the harness runs each case N times in a row (its ``--repeat``) and reports the mean over all
  of them, the first (cold, not yet JIT-compiled) one included, so its figure is not used as it
  is. The harness is run once with ``--repeat 1`` and once with ``--repeat N`` (fresh processes,
  the same cases), and

      warm ms per case = (total_N - total_1) / (cases × (N - 1)) = (N·avg_N - avg_1) / (N - 1)

  is the mean of passes 2..N. (A case's first pass in the N-run follows the previous case's N
  passes, so it is if anything warmer than in the 1-run: the estimate errs towards Mastra.)
- tracescore: one warm-up pass, then the mean of ``--repeat`` passes.

V8 keeps optimising a scorer's code for well over 20 passes (tone at 10k: ~2 ms a case over
passes 2..20, ~1.2 ms over 2..60, ~0.8 ms over 2..150 and beyond), so Mastra gets
``--mastra-repeat`` passes (200 by default): its steady state, as in a long-running service.
tracescore (no JIT) is steady after its warm-up pass.

The machine's speed drifts (it is shared), so a figure is the median of ``--trials`` trials, each
timing Mastra and then tracescore right after it; the speed-up is the median of the trials' own
ratios, and their range is printed. Scorers taking milliseconds (short) or seconds (10k) a case
in Mastra get fewer passes and one trial (``SLOW``). The harness builds the scorer inside its
timed region (about 1 µs in Mastra, measured apart) and converts the result to JSON-safe values;
tracescore builds its scorer once, as the pipeline does.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import consistency_stream  # noqa: E402
from tests.support.parity_support import REGISTRY_NAME, load_cases, mastra_options, mastra_run  # noqa: E402
from tracescore.compiled import describe  # noqa: E402
from tracescore.scorers import registry  # noqa: E402

SCORERS = (
    "completeness",
    "content-similarity",
    "keyword-coverage",
    "textual-difference",
    "tone",
    "tool-call-accuracy",
)
# Mastra passes of the scorers that take milliseconds (short) or seconds (10k) a case there, in
# one trial: their JIT warm-up is negligible beside that and their speed-ups are in the hundreds.
SLOW = {("completeness", "short"): 20, ("completeness", "10k"): 3, ("textual-difference", "10k"): 3}
HARNESS = Path("/work/shared/mastra-harness")
LONG_CHARS = 10_000
WORDS = (
    "the agent called search tool and summarised results for user memory stores last ten messages "
    "of each thread developers reported that new dashboard is fast helpful calls are retried twice "
    "before run marked as failed great terrible happy sad love hate wonderful awful quickly slowly "
    "photosynthesis converts light energy into chemical water sunlight glucose oxygen stages "
    "Kubernetes deploys containers pipeline builds images nightly PostgreSQL stores rows 2024 "
    "don't can't it's we're émigré café 😀 🎉"
).split()


def long_text(rng: random.Random, chars: int) -> str:
    sentences, size = [], 0
    while size < chars:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
        sentence = " ".join(words).capitalize() + rng.choice([".", ".", "!", "?", ","])
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)[:chars]


def perturbed(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    out = []
    for word in words:
        roll = rng.random()
        if roll < 0.1:
            continue
        out.append(rng.choice(WORDS) if roll < 0.25 else word)
    return " ".join(out)


def message(
    id: str, role: str, text: str, invocations: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"type": "tool-invocation", "toolInvocation": i} for i in invocations or []
    ]
    parts.append({"type": "text", "text": text})
    return {
        "id": id,
        "role": role,
        "createdAt": "2025-06-01T12:00:00.000Z",
        "content": {"format": 2, "parts": parts, "content": text},
    }


def long_cases(per_scorer: int) -> list[dict[str, Any]]:
    rng = random.Random(2024)
    cases = []
    for scorer in SCORERS:
        for n in range(per_scorer):
            question = long_text(rng, LONG_CHARS)
            answer = perturbed(rng, question)[:LONG_CHARS]
            tools = [
                {
                    "toolCallId": f"c{i}",
                    "toolName": rng.choice(["search", "fetch", "auth"]),
                    "args": {},
                    "state": "result",
                    "result": {"ok": True},
                }
                for i in range(5)
            ]
            case: dict[str, Any] = {
                "id": f"long-{scorer}-{n}",
                "scorer": scorer,
                "tags": ["long"],
                "input": {"inputMessages": [message("u1", "user", question)]},
                "output": [message("a1", "assistant", answer, tools)],
            }
            if scorer == "tool-call-accuracy":
                case["options"] = {"expectedToolOrder": ["search", "fetch"]}
            cases.append(case)
    return cases


def short_cases() -> list[dict[str, Any]]:
    cases = [
        c
        for c in load_cases("sample.jsonl")
        if c["scorer"] in SCORERS and "error" not in c["expected"]
    ]
    for case in cases:
        case["tags"] = ["short"]
    return cases


def python_ms_per_case(
    cases: list[dict[str, Any]], repeat: int, clock: Callable[[], float]
) -> float:
    """tracescore's warm ``run_sync`` ms per case: the mean of ``repeat`` passes after one warm-up,
    timed by ``clock`` (seconds)."""
    prepared = []
    for case in cases:
        entry = registry.get(REGISTRY_NAME.get(case["scorer"], case["scorer"]))
        prepared.append((entry.factory(**mastra_options(case)), mastra_run(case)))
    for scorer, run in prepared:  # warm-up: lazy imports, lexicons, caches
        scorer.run_sync(run)
    started = clock()
    for _ in range(repeat):
        for scorer, run in prepared:
            result = scorer.run_sync(run)
            assert result.status == "ok", (result.scorer_id, result.error)
    return (clock() - started) * 1000 / (repeat * len(prepared))


def harness_dir() -> Path:
    """A writable copy of the reference harness with its node modules installed."""
    target = Path(tempfile.gettempdir()) / "tracescore-mastra-harness"
    if not (target / "node_modules" / "@mastra" / "evals").exists():
        target.mkdir(parents=True, exist_ok=True)
        for name in ("harness.mjs", "package.json", "package-lock.json"):
            shutil.copy(HARNESS / name, target / name)
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target, check=True
        )
    return target


def mastra_totals(
    cases: list[dict[str, Any]], repeat: int, workdir: Path
) -> dict[str, tuple[int, float]]:
    """One harness process over the cases: per scorer, (cases, total ms over all passes)."""
    cases_file, timing_file = workdir / "cases.jsonl", workdir / "timing.jsonl"
    cases_file.write_text(
        "\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n", "utf-8"
    )
    subprocess.run(
        [
            "node",
            "harness.mjs",
            "--repeat",
            str(repeat),
            "--timing",
            str(timing_file),
            str(cases_file),
        ],
        cwd=harness_dir(),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lines = [json.loads(line) for line in timing_file.read_text().splitlines() if line.strip()]
    return {line["scorer"]: (line["cases"], line["total_ms"]) for line in lines}


def mastra_warm_ms_per_case(
    cases: list[dict[str, Any]], repeat: int, workdir: Path
) -> dict[str, float]:
    """Mastra's warm ``scorer.run()`` ms per case, per scorer: passes 2..repeat of each case, from
    a 1-pass and a ``repeat``-pass run (see the module docstring)."""
    if repeat < 2:
        raise ValueError("a warm figure needs at least 2 passes")
    cold, all_passes = mastra_totals(cases, 1, workdir), mastra_totals(cases, repeat, workdir)
    return {
        scorer: (total - cold[scorer][1]) / (count * (repeat - 1))
        for scorer, (count, total) in all_passes.items()
    }


@dataclass
class Row:
    """One scorer at one size: each trial's figures."""

    cases: int
    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)


def measure(
    cases: list[dict[str, Any]],
    rows: dict[str, Row],
    trials: int,
    repeat: int,
    mastra_repeat: int | None,
    workdir: Path,
    clock: Callable[[], float],
) -> None:
    """``trials`` times: Mastra's warm figures for the cases (``mastra_repeat`` passes; None: not
    timed), then tracescore's, scorer by scorer."""
    scorers = sorted({case["scorer"] for case in cases}, key=SCORERS.index)
    for _ in range(trials):
        theirs = mastra_warm_ms_per_case(cases, mastra_repeat, workdir) if mastra_repeat else {}
        for scorer in scorers:
            row = rows[scorer]
            row.ours.append(
                python_ms_per_case([c for c in cases if c["scorer"] == scorer], repeat, clock)
            )
            if scorer in theirs:
                row.theirs.append(theirs[scorer])


def consistency_ms_per_run(
    runs: list[Any], repeat: int, clock: Callable[[], float]
) -> tuple[float, float]:
    """The ``consistency`` scorer's ms per run on ``runs``: the median over runs of each run's
    mean over ``repeat`` passes (after one warm-up pass), and the mean over all."""
    scorer = registry.get("consistency").factory()
    for run in runs:
        scorer.run_sync(run)
    per_run = []
    for run in runs:
        started = clock()
        for _ in range(repeat):
            result = scorer.run_sync(run)
        per_run.append((clock() - started) * 1000 / repeat)
        assert result.status == "ok", result.error
    return statistics.median(per_run), statistics.fmean(per_run)


def report_consistency(args: argparse.Namespace, clock: Callable[[], float]) -> None:
    """``consistency`` (tracescore's own, not in Mastra): on the issue 47 stream's runs rebuilt
    from spans (what the pipeline scores: tools, results, system prompt), and on the parity
    corpus's short cases of the other scorers (bare input and output)."""
    with tempfile.TemporaryDirectory() as tmp:
        stream = consistency_stream.stream("tune", args.consistency_runs)
        rebuilt = consistency_stream.rebuilt(stream, Path(tmp))
    parity = [mastra_run(case) for case in short_cases()]
    print(f"\nconsistency ({'CPU ' if args.cpu else ''}ms per run; median of runs, mean)")
    for name, runs in (("stream runs", rebuilt), ("parity short", parity)):
        medians, means = zip(
            *(consistency_ms_per_run(runs, args.repeat, clock) for _ in range(args.trials)),
            strict=True,
        )
        print(
            f"  {name:<13} {len(runs):>5} runs  median {statistics.median(medians):.3f}"
            f"  mean {statistics.median(means):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--vs-mastra", action="store_true", help="also time Mastra's scorers (node)"
    )
    parser.add_argument("--repeat", type=int, default=20, help="tracescore's passes over the cases")
    parser.add_argument(
        "--mastra-repeat",
        type=int,
        default=200,
        help="Mastra's passes over the cases (V8 keeps optimising for ~150 of them)",
    )
    parser.add_argument("--long-cases", type=int, default=2, help="long cases per scorer")
    parser.add_argument("--trials", type=int, default=5, help="trials whose median is reported")
    parser.add_argument(
        "--cpu", action="store_true", help="time tracescore by CPU time, not elapsed time"
    )
    parser.add_argument(
        "--consistency-runs", type=int, default=300, help="stream runs consistency is timed on"
    )
    parser.add_argument(
        "--only-consistency", action="store_true", help="time the consistency scorer only"
    )
    args = parser.parse_args()
    if args.cpu and args.vs_mastra:
        parser.error("--cpu times tracescore only: Mastra's harness reports elapsed time")
    clock = time.process_time if args.cpu else time.perf_counter
    if args.only_consistency:
        report_consistency(args, clock)
        return

    table: dict[tuple[str, str], Row] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size, cases in (("short", short_cases()), ("10k", long_cases(args.long_cases))):
            # Cases measured together: (Mastra passes, trials) -> cases.
            groups: dict[tuple[int, int], list[dict[str, Any]]] = {}
            for case in cases:
                slow = SLOW.get((case["scorer"], size))
                groups.setdefault(
                    (slow, 1) if slow else (args.mastra_repeat, args.trials), []
                ).append(case)
            for (mastra_repeat, trials), group in groups.items():
                rows = {
                    c["scorer"]: Row(sum(1 for d in group if d["scorer"] == c["scorer"]))
                    for c in group
                }
                measure(
                    group,
                    rows,
                    trials,
                    args.repeat,
                    mastra_repeat if args.vs_mastra else None,
                    Path(tmp),
                    clock,
                )
                table.update({(scorer, size): row for scorer, row in rows.items()})

    print(describe())  # compiled, or pure Python (an install without a C compiler)
    header = f"{'scorer':<20} {'size':>5} {'cases':>5} {'tracescore CPU ms' if args.cpu else 'tracescore ms':>14}"
    print(
        header
        + (
            f" {'Mastra warm ms':>15} {'speed-up':>9} {'(trials: lowest-highest)':>26}"
            if args.vs_mastra
            else ""
        )
    )
    for (scorer, size), row in sorted(
        table.items(), key=lambda item: (SCORERS.index(item[0][0]), item[0][1] != "short")
    ):
        line = f"{scorer:<20} {size:>5} {row.cases:>5} {statistics.median(row.ours):>14.3f}"
        if row.theirs:
            ratios = [theirs / ours for ours, theirs in zip(row.ours, row.theirs, strict=True)]
            line += (
                f" {statistics.median(row.theirs):>15.3f} {statistics.median(ratios):>8.1f}x"
                f" {f'{min(ratios):.1f}x-{max(ratios):.1f}x':>26}"
            )
        print(line)
    report_consistency(args, clock)


if __name__ == "__main__":
    main()

"""Milliseconds per case for each code scorer, on short and on 10k-character runs.

    python benchmarks/scorers.py                 # tracescore only
    python benchmarks/scorers.py --vs-mastra     # also Mastra's own scorers, and the speed ratio

Short cases are the parity corpus's (``tests/fixtures/parity/sample.jsonl``); long cases are
generated here (input and output of ~10,000 characters each, the output a perturbed copy of the
input so that the scorers have real work to do). Python times ``Scorer.run_sync`` per case, as
the pipeline's worker calls it. ``--vs-mastra`` runs the same cases through the reference harness
(``/work/shared/mastra-harness``: ``scorer.run()`` of ``@mastra/evals`` 1.10.2 on node), installed
with ``npm ci`` into a copy under ``/tmp`` because the shared folder is read-only.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.parity_support import load_cases, mastra_options, mastra_run, REGISTRY_NAME  # noqa: E402
from tracescore.scorers import registry  # noqa: E402

SCORERS = ("completeness", "content-similarity", "keyword-coverage", "textual-difference", "tone",
           "tool-call-accuracy")
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


def message(id: str, role: str, text: str, invocations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "tool-invocation", "toolInvocation": i} for i in invocations or []]
    parts.append({"type": "text", "text": text})
    return {"id": id, "role": role, "createdAt": "2025-06-01T12:00:00.000Z",
            "content": {"format": 2, "parts": parts, "content": text}}


def long_cases(per_scorer: int) -> list[dict[str, Any]]:
    rng = random.Random(2024)
    cases = []
    for scorer in SCORERS:
        for n in range(per_scorer):
            question = long_text(rng, LONG_CHARS)
            answer = perturbed(rng, question)[:LONG_CHARS]
            tools = [{"toolCallId": f"c{i}", "toolName": rng.choice(["search", "fetch", "auth"]), "args": {},
                      "state": "result", "result": {"ok": True}} for i in range(5)]
            case: dict[str, Any] = {
                "id": f"long-{scorer}-{n}", "scorer": scorer, "tags": ["long"],
                "input": {"inputMessages": [message("u1", "user", question)]},
                "output": [message("a1", "assistant", answer, tools)],
            }
            if scorer == "tool-call-accuracy":
                case["options"] = {"expectedToolOrder": ["search", "fetch"]}
            cases.append(case)
    return cases


def short_cases() -> list[dict[str, Any]]:
    cases = [c for c in load_cases("sample.jsonl") if c["scorer"] in SCORERS and "error" not in c["expected"]]
    for case in cases:
        case["tags"] = ["short"]
    return cases


def python_ms_per_case(cases: list[dict[str, Any]], repeat: int) -> float:
    prepared = []
    for case in cases:
        entry = registry.get(REGISTRY_NAME.get(case["scorer"], case["scorer"]))
        prepared.append((entry.factory(**mastra_options(case)), mastra_run(case)))
    for scorer, run in prepared:  # warm-up: lazy imports, lexicons, caches
        scorer.run_sync(run)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        for scorer, run in prepared:
            result = scorer.run_sync(run)
            assert result.status == "ok", (result.scorer_id, result.error)
        timings.append((time.perf_counter() - started) * 1000 / len(prepared))
    return statistics.median(timings)


def harness_dir() -> Path:
    """A writable copy of the reference harness with its node modules installed."""
    target = Path(tempfile.gettempdir()) / "tracescore-mastra-harness"
    if not (target / "node_modules" / "@mastra" / "evals").exists():
        target.mkdir(parents=True, exist_ok=True)
        for name in ("harness.mjs", "package.json", "package-lock.json"):
            shutil.copy(HARNESS / name, target / name)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target, check=True)
    return target


def mastra_ms_per_case(cases: list[dict[str, Any]], repeat: int, workdir: Path) -> dict[str, float]:
    """Mastra's ``scorer.run()`` ms per case, per scorer, from the harness's timing lines."""
    cases_file, timing_file = workdir / "cases.jsonl", workdir / "timing.jsonl"
    cases_file.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n", "utf-8")
    subprocess.run(
        ["node", "harness.mjs", "--repeat", str(repeat), "--timing", str(timing_file), str(cases_file)],
        cwd=harness_dir(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    lines = [json.loads(line) for line in timing_file.read_text().splitlines() if line.strip()]
    return {line["scorer"]: line["ms_per_case"] for line in lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs-mastra", action="store_true", help="also time Mastra's scorers (node)")
    parser.add_argument("--repeat", type=int, default=20, help="passes over the short cases")
    parser.add_argument("--long-repeat", type=int, default=3, help="passes over the long cases")
    parser.add_argument("--long-cases", type=int, default=2, help="long cases per scorer")
    parser.add_argument("--mastra-long-repeat", type=int, default=1,
                        help="Mastra passes over the long cases (completeness takes ~15 s a case)")
    args = parser.parse_args()

    suites = {"short": short_cases(), "10k": long_cases(args.long_cases)}
    repeats = {"short": args.repeat, "10k": args.long_repeat}
    mastra_repeats = {"short": args.repeat, "10k": args.mastra_long_repeat}
    rows: dict[tuple[str, str], tuple[int, float, float | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Each size's Mastra and Python runs back to back: the machine's load drifts.
        for size, cases in suites.items():
            mastra = mastra_ms_per_case(cases, mastra_repeats[size], Path(tmp)) if args.vs_mastra else {}
            for scorer in SCORERS:
                mine = [c for c in cases if c["scorer"] == scorer]
                rows[scorer, size] = (len(mine), python_ms_per_case(mine, repeats[size]), mastra.get(scorer))

    header = f"{'scorer':<20} {'size':>5} {'cases':>5} {'tracescore ms':>14}"
    print(header + (f" {'Mastra ms':>10} {'speed-up':>9}" if args.vs_mastra else ""))
    for (scorer, size), (count, ms, theirs) in sorted(rows.items(), key=lambda row: SCORERS.index(row[0][0])):
        line = f"{scorer:<20} {size:>5} {count:>5} {ms:>14.3f}"
        if theirs is not None:
            line += f" {theirs:>10.3f} {theirs / ms:>8.1f}x"
        print(line)


if __name__ == "__main__":
    main()

"""Every verdict of the ``consistency`` scorer on the runs its benchmarks use, one JSON line each:
what a change meant to make it faster must leave byte for byte the same.

    python benchmarks/consistency_dump.py /tmp/before.jsonl          # in main's checkout
    PYTHONPATH=$PWD python benchmarks/consistency_dump.py /tmp/after.jsonl   # in the branch
    cmp /tmp/before.jsonl /tmp/after.jsonl

Each line holds a run's tag, status, score, label, reason, error and every step's name, result
and error. The runs: both splits of the issue 47 stream (``tests/support/consistency_stream.py``)
with the seeds of ``benchmarks/cascade.py`` (37) and ``benchmarks/scorers.py`` (47), rebuilt
from spans and scored as ``AgentRun`` and as ``ScorerRun``; the held-out fixture runs; the parity
corpus's short cases and the long cases ``benchmarks/scorers.py`` times.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scorers as scorer_benchmark  # noqa: E402

from tests.support import consistency_heldout, consistency_stream  # noqa: E402
from tests.support.parity_support import mastra_run  # noqa: E402
from tracescore.scorers import registry  # noqa: E402
from tracescore.scorers.base import Scorer  # noqa: E402
from tracescore.scorers.scorer_run import Scorable, ScorerRun  # noqa: E402


def verdict(scorer: Scorer, tag: str, run: Scorable) -> str:
    """One run's verdict as a JSON line (keys in the order the scorer wrote them)."""
    result = scorer.run_sync(run)
    steps = [[step.name, step.result, step.error] for step in result.steps]
    fields: list[Any] = [tag, result.status, result.score, result.label, result.reason]
    return json.dumps([*fields, result.error, steps], default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the JSON lines file to write")
    parser.add_argument("--runs", type=int, default=1000, help="runs of each stream")
    args = parser.parse_args()
    scorer = registry.get("consistency").factory()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for split in consistency_stream.SPLITS:
            for seed in (37, 47):
                stream = consistency_stream.stream(split, args.runs, seed)
                for number, run in enumerate(consistency_stream.rebuilt(stream, Path(tmp))):
                    lines.append(verdict(scorer, f"{split}-{seed}-{number}", run))
                    lines.append(verdict(scorer, f"{split}-{seed}-{number}-sr", ScorerRun.of(run)))
    for held in consistency_heldout.runs():
        lines.append(verdict(scorer, f"heldout-{held.id}", held.run))
    for number, case in enumerate(scorer_benchmark.short_cases()):
        lines.append(verdict(scorer, f"parity-{number}", mastra_run(case)))
    for number, case in enumerate(scorer_benchmark.long_cases(2)):
        lines.append(verdict(scorer, f"long-{number}", mastra_run(case)))
    args.out.write_text("\n".join(lines))
    print(f"{len(lines)} verdicts written to {args.out}")


if __name__ == "__main__":
    main()

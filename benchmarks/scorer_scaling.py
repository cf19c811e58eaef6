"""How each code scorer's time grows with its input: linear, or a trace that can hold a process.

    python benchmarks/scorer_scaling.py                   # 10k, 20k, 40k words
    python benchmarks/scorer_scaling.py --words 20000 80000

Each scorer gets one run whose question and answer are N words long with no punctuation at all
(one clause: the worst case for clause-wise text analysis, and what a pasted log or a JSON dump
without spaces after commas reads as). It prints the seconds per run at each size and the growth
exponent between consecutive sizes (after one small warm-up run): about 1 for a linear scorer, 2 for a quadratic one. A scorer
whose exponent stays well above 1 can stall scoring on one big trace.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.scorers import SCORERS, WORDS, message  # noqa: E402
from tests.support.parity_support import REGISTRY_NAME, mastra_run  # noqa: E402
from tracescore.scorers import registry  # noqa: E402


def unpunctuated(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS).strip(".,!?") for _ in range(words))


def seconds_per_run(scorer_name: str, words: int) -> float:
    rng = random.Random(words)
    case = {
        "id": f"unpunctuated-{words}",
        "input": {"inputMessages": [message("u1", "user", unpunctuated(rng, words))]},
        "output": [message("a1", "assistant", unpunctuated(rng, words))],
    }
    options = (
        {"expectedToolOrder": ["search", "fetch"]} if scorer_name == "tool-call-accuracy" else {}
    )
    scorer = registry.get(REGISTRY_NAME.get(scorer_name, scorer_name)).factory(**options)
    run = mastra_run(case)
    started = time.process_time()
    result = scorer.run_sync(run)
    elapsed = time.process_time() - started
    assert result.status == "ok", (scorer_name, result.error)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--words", type=int, nargs="+", default=[10_000, 20_000, 40_000])
    args = parser.parse_args()
    sizes = sorted(args.words)
    print(f"{'scorer':<20}" + "".join(f"{n:>12,}" for n in sizes) + "   growth exponent")
    for name in SCORERS:
        seconds_per_run(name, 100)  # warm-up: lexicons and lazy imports load on first use
        times = [seconds_per_run(name, n) for n in sizes]
        exponents = [
            math.log(max(times[k + 1], 1e-6) / max(times[k], 1e-6))
            / math.log(sizes[k + 1] / sizes[k])
            for k in range(len(sizes) - 1)
        ]
        print(
            f"{name:<20}"
            + "".join(f"{t:>11.3f}s" for t in times)
            + "   "
            + ", ".join(f"{e:.2f}" for e in exponents)
        )


if __name__ == "__main__":
    main()

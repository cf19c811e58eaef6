"""Milliseconds per case of each code scorer, compiled and in pure Python, and the slow-down.

    python benchmarks/scorers_pure_python.py [--rounds 5] [scorers.py options: --cpu, --trials 3, ...]

Runs ``benchmarks/scorers.py`` on the same cases in this checkout (the editable install's
compiled extensions) and in a copy of its source files, which has none, so the package there
runs what an install built without a C compiler runs (``tracescore.compiled``; each run prints
which). The machine is shared and its speed drifts, so each round runs the pure-Python
benchmark and the compiled one right after it, in fresh processes; a figure is the median over
the rounds, the slow-down the median of the rounds' own ratios, with their range. Scorers with
no compiled loop (all but content-similarity and tone) run the same code in both: their
ratios show the noise.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.nocompiler_install import copy_checkout  # noqa: E402


def table(root: Path, options: list[str]) -> tuple[str, dict[tuple[str, str], float]]:
    """``benchmarks/scorers.py`` of the checkout at ``root``: its implementation line and the ms
    per case of each (scorer, size)."""
    lines = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "scorers.py"), *options],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    implementation = next(line for line in lines if line.startswith("code scorers:"))
    header = next(i for i, line in enumerate(lines) if line.startswith("scorer"))
    rows = {}
    for line in lines[header + 1 :]:
        scorer, size, _cases, ms = line.split()[:4]
        rows[scorer, size] = float(ms)
    return implementation, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of one pure-Python and one compiled run"
    )
    args, options = parser.parse_known_args()
    pure: list[dict[tuple[str, str], float]] = []
    compiled: list[dict[tuple[str, str], float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = copy_checkout(Path(tmp), ("tracescore", "tests", "benchmarks"))
        for _ in range(args.rounds):
            pure_line, rows = table(copy, options)
            pure.append(rows)
            compiled_line, rows = table(ROOT, options)
            compiled.append(rows)
            if not (
                pure_line.startswith("code scorers: pure Python")
                and compiled_line.startswith("code scorers: compiled")
            ):
                raise SystemExit(f"not the two implementations:\n{pure_line}\n{compiled_line}")
    print(
        f"{'scorer':<20} {'size':>5} {'compiled ms':>12} {'pure Python ms':>15} {'slow-down':>10} {'(rounds)':>14}"
    )
    for key in compiled[0]:
        ratios = [p[key] / c[key] for p, c in zip(pure, compiled, strict=True)]
        print(
            f"{key[0]:<20} {key[1]:>5} {statistics.median(c[key] for c in compiled):>12.3f} "
            f"{statistics.median(p[key] for p in pure):>15.3f} {statistics.median(ratios):>9.1f}x "
            f"{f'{min(ratios):.1f}x-{max(ratios):.1f}x':>14}"
        )


if __name__ == "__main__":
    main()

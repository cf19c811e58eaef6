"""Judge benchmark: faithfulness over many runs against a slow scripted judge.

The scripted OpenAI-compatible judge (``tests/support/judge_server.py``) runs in its own process and
answers every request after ``--latency`` seconds, like a hosted model would; the judge client
goes through litellm's whole request path with a concurrency limit of ``--concurrency``. Every
run is distinct, so nothing is served from the verdict cache during the timed part. Prints:

- runs/s and judge calls per run (faithfulness: claims, verdicts, reason = 3);
- how busy the client kept its concurrency limit (goal >= 90 %): slot-seconds held divided by
  (concurrency x wall time), and the judge's own summed time answering requests over the same
  (lower by the client's CPU time per call: litellm's request building and response parsing);
- cache-hit latency of ``Judge.complete`` from the in-process LRU (goal < 1 ms), from the
  database (a restarted judge on the same SQLite file), and of a whole cached faithfulness run.

    python benchmarks/judge.py [--runs 1000] [--latency 0.2] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tracescore.judge import JudgeConfig, LiteLLMJudge, VerdictCache  # noqa: E402
from tracescore.judge.protocol import JudgeRequest  # noqa: E402
from tracescore.scorers import create_faithfulness_scorer  # noqa: E402
from tracescore.scorers.utils import make_agent_run, make_test_message  # noqa: E402

SCRIPT = {
    "FaithfulnessClaims": [{"claims": ["The Moon blocks the Sun.", "Eclipses last minutes."]}],
    "FaithfulnessVerdicts": [
        {
            "verdicts": [
                {"verdict": "yes", "reason": "stated"},
                {"verdict": "unsure", "reason": "not stated"},
            ]
        }
    ],
}
CONTEXT = "Solar eclipses occur when the Moon blocks the Sun."


def start_server(latency: float, script_path: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.judge_server",
            "--script",
            str(script_path),
            "--delay",
            str(latency),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def server_stats(base_url: str) -> dict[str, float]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as response:
        return json.load(response)


def run(index: int) -> dict[str, object]:
    """A distinct run: its own question, answer and retrieved context (so no step repeats)."""
    answer = f"Solar eclipse number {index} happens when the Moon blocks the Sun; it lasts minutes."
    agent_run = make_agent_run(
        input_messages=[make_test_message(f"What causes solar eclipse number {index}?", "user")],
        output=[make_test_message(answer, "assistant")],
    )
    return {**agent_run, "context": [f"{CONTEXT} (document {index})"]}


def per_call_ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered) * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script_path = Path(tmp) / "script.json"
        script_path.write_text(json.dumps(SCRIPT))
        db_url = f"sqlite:///{Path(tmp) / 'verdicts.db'}"
        process, base_url = start_server(args.latency, script_path)
        try:
            config = JudgeConfig(
                model="openai/gpt-4o-mini", api_base=base_url, concurrency=args.concurrency
            )
            judge = LiteLLMJudge(config, cache=VerdictCache(db_url))
            scorer = create_faithfulness_scorer(model=judge)
            await scorer.run(run(-1))  # warm-up: litellm's lazy imports, connection pool

            before, slots = server_stats(base_url), judge.limiter.slot_seconds
            started, cpu = time.perf_counter(), time.process_time()
            results = await asyncio.gather(*(scorer.run(run(i)) for i in range(args.runs)))
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            held = (judge.limiter.slot_seconds - slots) / (args.concurrency * wall)
            after = server_stats(base_url)

            failed = [r for r in results if r.status != "ok"]
            calls = after["count"] - before["count"]
            busy = (after["busy_seconds"] - before["busy_seconds"]) / (args.concurrency * wall)
            print(
                f"{args.runs} faithfulness runs, judge latency {args.latency * 1000:.0f} ms, "
                f"concurrency {args.concurrency}"
            )
            print(
                f"  wall {wall:.1f} s, {args.runs / wall:.1f} runs/s "
                f"(ideal {args.concurrency / (3 * args.latency):.1f}), {len(failed)} failed"
            )
            print(
                f"  judge calls per run {calls / args.runs:.2f}, peak in flight {after['max_in_flight']:.0f}, "
                f"client CPU {cpu * 1000 / calls:.1f} ms per call"
            )
            print(
                f"  concurrency limit kept busy: slots held {held * 100:.1f} % (goal >= 90 %), "
                f"judge answering {busy * 100:.1f} % (the rest: client CPU per call under load)"
            )
            cost = sum(r.cost_usd for r in results)
            print(
                f"  recorded tokens {sum(r.input_tokens + r.output_tokens for r in results)}, cost ${cost:.4f}"
            )

            request = JudgeRequest(
                prompt=results[0].steps[0].prompt or "",
                instructions=scorer.instructions,
                schema=type(results[0].preprocess_step_result),
                scorer_id=scorer.id,
                scorer_version=scorer.version,
                step="preprocess",
            )
            lru = []
            for _ in range(2000):
                t0 = time.perf_counter()
                await judge.complete(request)
                lru.append(time.perf_counter() - t0)
            print(f"  cache hit (in-process LRU), Judge.complete: {per_call_ms(lru)} (goal < 1 ms)")
            database = []
            for i in range(min(200, args.runs)):
                restarted = LiteLLMJudge(config, cache=VerdictCache(judge.cache.engine))
                request.prompt = results[i].steps[0].prompt or ""
                t0 = time.perf_counter()
                await restarted.complete(request)
                database.append(time.perf_counter() - t0)
            print(
                f"  cache hit (database, restarted judge), Judge.complete: {per_call_ms(database)}"
            )
            whole = []
            for i in range(min(200, args.runs)):
                t0 = time.perf_counter()
                await scorer.run(run(i))
                whole.append(time.perf_counter() - t0)
            print(f"  cached faithfulness run (3 judge steps): {per_call_ms(whole)}")
            assert server_stats(base_url)["count"] == after["count"], (
                "cache hits must not call the judge"
            )
        finally:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    asyncio.run(main(parser.parse_args()))

"""Build the "previous release" databases that tests/store/test_migrations.py upgrades in place.

Run it with the previous release's code on the path, so its tables and rows are that release's
own (the tests must not need git history, so the result is committed)::

    git worktree add /tmp/prev c2edaf42771c112e40d3dbb12948516421d596c2
    cp tracescore/scorers/code/*.so /tmp/prev/tracescore/scorers/code/
    PYTHONPATH=/tmp/prev python3 scripts/make_previous_release_db.py \\
        postgresql://postgres@127.0.0.1:5432/test tests/fixtures/previous_release
    git worktree remove /tmp/prev

It writes ``tracescore.db`` (SQLite) and ``postgresql.sql`` (``pg_dump --inserts`` of a scratch
database on the given server, which is dropped afterwards). Each holds the same kind of data, made
by that release's own code paths: three frameworks' captured traces and logs stored by its span
store, scored by its worker (code scorers and a faithfulness judge answered by the scripted judge
server, so the verdict cache fills), and one alert rule evaluated by its evaluator until firing.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path

import psycopg

from tests.support.judge_server import JudgeServer, json_reply
from tracescore.config import parse_config
from tracescore.ingest.files import load_traces
from tracescore.monitor.alerts import AlertEvaluator
from tracescore.pipeline.scoring_task import build_worker
from tracescore.store import open_store

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "captures"
FRAMEWORKS = ("langfuse", "otel-genai-openai-v2-latest", "pydantic-ai")
FAR_FUTURE = 4_000_000_000.0
CONFIG = """
judges:
  default: {{model: openai/gpt-4o-mini, api_base: "{judge_url}", timeout: 10, backoff_base: 0.01}}
scorers:
  - {{name: tone, scorer: tone}}
  - {{name: completeness, scorer: completeness}}
  - {{name: faithfulness, scorer: faithfulness}}
alerts:
  rules:
    - {{name: tone-low, type: threshold, binding: tone, below: 2.0, window: 1h, min_samples: 1}}
"""


def seed(url: str, judge_url: str) -> None:
    """The previous release's store at ``url``, written, scored and alerted on by its own code."""
    config = parse_config(CONFIG.format(judge_url=judge_url))
    store = open_store(url)
    for trace in load_traces([CAPTURES / name for name in FRAMEWORKS]):
        store.write(trace.spans, trace.logs)
    worker = build_worker(config, store)  # type: ignore[arg-type]  # that release took a Config

    async def score_all() -> None:
        for claim in store.queue.claim(worker.owner, 1000, 30.0, now=FAR_FUTURE):
            await worker.process(claim)

    asyncio.run(score_all())
    evaluator = AlertEvaluator(store.engine, config.alerts, config.monitor)
    evaluator.run_once()
    evaluator.release()
    evaluator.close()
    store.close()


def dump_postgresql(admin_url: str, judge_url: str, target: Path) -> None:
    name = f"tracescore_previous_{uuid.uuid4().hex[:8]}"
    base = admin_url.rpartition("/")[0]
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        seed(f"{base}/{name}", judge_url)
        dumped = subprocess.run(
            [
                "pg_dump",
                "--inserts",
                "--no-owner",
                "--no-privileges",
                "--no-comments",
                f"{base}/{name}",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    # psql meta-commands (pg_dump's \restrict guard) are not SQL: the tests run the script
    # through a driver.
    target.write_text(
        "".join(line for line in dumped.splitlines(keepends=True) if not line.startswith("\\"))
    )


def main(admin_url: str, directory: str) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    sqlite_file = out / "tracescore.db"
    sqlite_file.unlink(missing_ok=True)
    with JudgeServer() as judge:
        judge.script("FaithfulnessClaims", json_reply({"claims": ["It is sunny", "It is 21 C"]}))
        judge.script(
            "FaithfulnessVerdicts",
            json_reply(
                {
                    "verdicts": [
                        {"verdict": "yes", "reason": "the tool said so"},
                        {"verdict": "no", "reason": "no temperature in the context"},
                    ]
                }
            ),
        )
        seed(f"sqlite:///{sqlite_file}", judge.base_url)
        dump_postgresql(admin_url, judge.base_url, out / "postgresql.sql")
    # One self-contained file: the write-ahead log folded in and switched off, no spool beside it.
    with closing(sqlite3.connect(sqlite_file)) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
        connection.execute("VACUUM")
    for leftover in out.glob("tracescore.db-*"):
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()


if __name__ == "__main__":
    main(*sys.argv[1:3])

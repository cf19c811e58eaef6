"""What live conversations cost: trace scoring with and without a conversation binding, and
conversations assembled and scored per second. In process, on SQLite by default (``--db`` for
PostgreSQL), one scoring worker, no network.

The traces are the pydantic-ai conversation capture (three turns, one trace each) copied under
fresh trace, span and conversation ids. Each configuration gets a fresh database holding the
same traces; the run binding is the ``textual-difference`` code scorer, the conversation
binding a custom scorer that reads the typed turns (``tests.support.conversation_scorers:turn_order``),
so what is measured is the pipeline's own work, not a judge.

    python benchmarks/conversations.py --conversations 500
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.ingest.files import load_traces
from tracescore.pipeline.conversations import ConversationScoring
from tracescore.pipeline.scoring_task import build_worker
from tracescore.spans import Trace
from tracescore.store import open_store
from tracescore.store.conversations import ConversationClaim

RUN_BINDING = "  - {name: diff, scorer: textual-difference}\n"
CONVERSATION_BINDING = "  - {name: turns, scorer: 'tests.support.conversation_scorers:turn_order', target: conversation}\n"
FAR_FUTURE = 4_000_000_000.0
BATCH = 64


def conversations(count: int) -> list[Trace]:
    """``count`` copies of the captured three-turn conversation, each under its own ids."""
    turns = load_traces([CAPTURES / "pydantic-ai" / "conversation"])
    made: list[Trace] = []
    span_ids = itertools.count(1)
    for _ in range(count):
        conversation = str(uuid.uuid4())
        for turn in turns:
            trace_id = uuid.uuid4().hex
            renamed = {span.span_id: f"{next(span_ids):016x}" for span in turn.spans}
            spans = []
            for span in turn.spans:
                copied = copy.copy(span)
                copied.trace_id, copied.span_id = trace_id, renamed[span.span_id]
                copied.parent_span_id = renamed.get(span.parent_span_id or "", span.parent_span_id)
                copied.attributes = {**span.attributes, "gen_ai.conversation.id": conversation}
                spans.append(copied)
            made.append(Trace(trace_id, spans, []))
    return made


async def score_batch(loop: ConversationScoring, claims: list[ConversationClaim]) -> int:
    """Score claimed conversations at once, as the loop does; returns the score rows stored."""
    return sum(len(rows) for rows in await asyncio.gather(*map(loop.process, claims)))


def measure(db_url: str, bindings: str, traces: list[Trace]) -> tuple[float, float | None, int]:
    """Traces scored per second, conversations scored per second (None without a conversation
    binding) and the conversations scored."""
    store = open_store(db_url)
    try:
        for start in range(0, len(traces), 500):
            chunk = traces[start : start + 500]
            store.write([span for trace in chunk for span in trace.spans])
        config = parse_config("scorers:\n" + bindings).scoring()
        worker = build_worker(config, store)
        worker.scoring.warm_up()
        began = time.perf_counter()
        while claims := store.queue.claim(worker.owner, BATCH, 60.0, now=FAR_FUTURE):
            asyncio.run(worker.process_batch(claims))
        traces_per_second = len(traces) / (time.perf_counter() - began)
        scoring = worker.scoring
        if not scoring.conversation_bindings:
            return traces_per_second, None, 0
        loop = ConversationScoring(
            scoring, store, scoring.conversation_bindings, config.conversations, worker.owner
        )
        scored = 0
        began = time.perf_counter()
        while ready := loop.queue.claim(worker.owner, BATCH, 60.0, now=FAR_FUTURE):
            scored += asyncio.run(score_batch(loop, ready))
        return traces_per_second, scored / (time.perf_counter() - began), scored
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--db", help="a PostgreSQL URL (a fresh database); default: SQLite files")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    traces = conversations(args.conversations)
    print(
        f"{args.conversations} conversations of 3 turns: {len(traces)} traces, {args.rounds} rounds"
    )
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            for name, bindings in (
                ("run binding only", RUN_BINDING),
                ("with a conversation binding", RUN_BINDING + CONVERSATION_BINDING),
            ):
                if args.db:
                    from tests.support.databases import fresh_pg_database

                    with fresh_pg_database() as url:
                        result = measure(url, bindings, traces)
                else:
                    result = measure(
                        f"sqlite:///{folder}/{round_}-{len(bindings)}.db", bindings, traces
                    )
                traces_per_second, conversations_per_second, scored = result
                line = f"round {round_ + 1}, {name}: {traces_per_second:,.0f} traces/s"
                if conversations_per_second is not None:
                    line += f"; {scored} conversations scored at {conversations_per_second:,.0f}/s"
                print(line, flush=True)


if __name__ == "__main__":
    main()

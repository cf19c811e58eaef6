"""A span dated far in the future (an exporter's clock set wrong) is kept as sent, but its trace
and its conversation turn are timed by its arrival (issue 33, item 5): it is pruned with its
siblings, and its conversation neither stays first in the listing nor matches every ``since``."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.support.agent_otlp import agent_trace, export_request
from tracescore.config import parse_config
from tracescore.conversations.reads import ConversationFilter, list_conversations
from tracescore.ingest.decode import decode_traces
from tracescore.pipeline.scoring_task import build_worker
from tracescore.retention.config import RetentionConfig
from tracescore.retention.prune import Pruner
from tracescore.store import open_store

DAY = 86400.0
YEAR_2100_NS = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp() * 1e9)


def _spans(conversation: str | None, *, started: float, future_span: int | None = None):
    """An agent trace started at ``started`` (its span ``future_span``, if given, dated 2100),
    naming ``conversation`` on its root span."""
    trace = agent_trace(random.Random(conversation or started), "Paris")
    offset = int(started * 1e9) - trace.spans[-1].start_time_unix_nano
    for span in trace.spans:
        span.start_time_unix_nano += offset
        span.end_time_unix_nano += offset
    if future_span is not None:
        trace.spans[future_span].start_time_unix_nano = YEAR_2100_NS
        trace.spans[future_span].end_time_unix_nano = YEAR_2100_NS + 1_000_000
    if conversation is not None:
        trace.spans[-1].attributes.append(
            KeyValue(key="gen_ai.conversation.id", value=AnyValue(string_value=conversation))
        )
    return trace.trace_id, decode_traces(export_request(trace.spans), json=False).spans


def test_a_trace_with_a_span_dated_2100_is_pruned_like_its_siblings(db_url: str) -> None:
    now = time.time()
    arrived = now - 10 * DAY
    store = open_store(db_url)
    trace_id, spans = _spans(None, started=arrived - 5, future_span=0)  # a child span
    store.write(spans, received_at=arrived)
    stored = store.load_trace(trace_id)
    assert (
        stored is not None and max(span.start_time_ns for span in stored.spans) == YEAR_2100_NS
    )  # kept as sent
    store.queue.complete(store.queue.claim("w", 10, 60, now=now), now=now)

    report = Pruner(store.write_transaction, RetentionConfig(spans="7d")).run(now)

    assert report.removed["spans"] == 4 and store.load_trace(trace_id) is None
    assert store.take_counts() == (0, 1)  # the span beyond the skew, counted for the metric


def test_a_conversation_with_a_turn_dated_2100_is_not_first_for_ever(db_url: str) -> None:
    store = open_store(db_url)
    now = time.time()
    config = parse_config(
        "scorers:\n  - {name: answer, scorer: 'tests.support.custom_scorers:answer_present'}\n"
    )
    worker = build_worker(config.scoring(), store)

    def score(conversation: str, **timing: float | int) -> None:
        _, spans = _spans(conversation, **timing)  # type: ignore[arg-type]
        store.write(spans, received_at=time.time())
        asyncio.run(
            worker.process_batch(store.queue.claim(worker.owner, 10, 60, now=time.time() + 10))
        )

    score("from-2100", started=now - 60, future_span=-1)  # the root: the turn's own start
    time.sleep(0.01)
    score("on-time", started=time.time())
    with store.engine.connect() as connection:
        listed, _ = list_conversations(connection, ConversationFilter(), 10)
        later = datetime.fromtimestamp(time.time() + 3600, UTC)
        since_later, _ = list_conversations(connection, ConversationFilter(since=later), 10)
    assert [c["id"] for c in listed] == ["on-time", "from-2100"]
    assert since_later == []

"""A read of a trace loads at most ``assembly.max_trace_spans`` spans and
``assembly.max_trace_bytes`` of their text (``store/trace_cut.py``), on real SQLite files and
the real PostgreSQL server: the first spans by start time are kept, the rest counted, never
dropped silently, and the runs rebuilt from the part read say so."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.paths import CAPTURES
from tests.support.scorer_builds import build
from tests.support.store_spans import full_span
from tracescore.extract import iter_runs
from tracescore.ingest.files import load_traces
from tracescore.spans import LogRecord, Span
from tracescore.store import ReadLimit, SpanStore, open_store
from tracescore.value_cut import MARKER

TRACE = "c" * 32


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    opened = open_store(db_url)
    yield opened
    opened.close()


def _spans(count: int, text: str = "") -> list[Span]:
    """An agent span and ``count - 1`` tool calls under it, started in the order of their ids,
    each carrying ``text`` in an attribute."""
    spans = []
    for n in range(count):
        span = full_span(f"{n + 1:016x}", None if n == 0 else f"{1:016x}")
        span.trace_id = TRACE
        span.start_time_ns += n
        span.attributes.update(
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "cut"}
            if n == 0
            else {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
        )
        span.attributes["filler"] = text
        spans.append(span)
    return spans


def _record(span: Span) -> LogRecord:
    return LogRecord(
        time_ns=span.start_time_ns,
        observed_time_ns=span.start_time_ns,
        trace_id=TRACE,
        span_id=span.span_id,
        event_name="gen_ai.choice",
        severity_number=9,
        severity_text="INFO",
        body=f"of {span.span_id}",
        attributes={},
        resource=span.resource,
        scope=span.scope,
    )


def test_a_trace_over_the_span_limit_is_read_in_part_and_says_so(store: SpanStore) -> None:
    spans = _spans(30)
    store.write(list(reversed(spans)), [_record(span) for span in spans])
    store.read_limit = ReadLimit(spans=10)
    trace = store.load_trace(TRACE)
    assert trace is not None
    assert [span.span_id for span in trace.spans] == [span.span_id for span in spans[:10]]
    assert [record.body for record in trace.logs] == [f"of {s.span_id}" for s in spans[:10]]
    assert trace.cut == (
        "read the first 10 of 30 spans and 10 of 30 log records "
        "(assembly.max_trace_spans: 10); raise it to read more of this trace"
    )
    runs = list(iter_runs(trace))
    assert len(runs) == 10 and {run.trace_cut for run in runs} == {trace.cut}

    store.read_limit = ReadLimit(spans=30)
    whole = store.load_trace(TRACE)
    assert whole is not None and whole.cut is None and len(whole.spans) == 30
    assert {run.trace_cut for run in iter_runs(whole)} == {None}


@pytest.mark.parametrize("counted", [0, 10, 30])
def test_span_counts_a_caller_gives_change_nothing_read(store: SpanStore, counted: int) -> None:
    """A claim's span count tells a trace over the limit without a query; one older than the
    trace's summary (spans arrived since) reads the same spans, logs and cut."""
    spans = _spans(30)
    other = full_span("a" * 16, None)  # a small trace read in the same load
    store.write([*reversed(spans), other], [_record(span) for span in spans])
    store.read_limit = ReadLimit(spans=10)
    wanted = [TRACE, other.trace_id]
    summary = store.load_traces(wanted)
    given = store.load_traces(wanted, span_counts={TRACE: counted, other.trace_id: 1})
    assert sorted(given) == sorted(summary) == sorted(wanted)
    for trace_id in wanted:
        assert given[trace_id].spans == summary[trace_id].spans
        assert given[trace_id].logs == summary[trace_id].logs
        assert given[trace_id].cut == summary[trace_id].cut
    assert len(given[TRACE].spans) == 10 and given[TRACE].cut is not None


def test_the_text_limit_cuts_after_the_span_that_reaches_it(store: SpanStore) -> None:
    store.write(_spans(20, "x" * 1_000))
    size = len(store.load_trace(TRACE).spans[1].attributes["filler"])  # type: ignore[union-attr]
    store.read_limit = ReadLimit(text_bytes=5_500)
    trace = store.load_trace(TRACE)
    assert trace is not None and size == 1_000
    assert 3 <= len(trace.spans) <= 5, len(trace.spans)  # ~1.1 KB stored per span
    assert trace.cut is not None
    assert trace.cut.startswith(f"read the first {len(trace.spans)} of 20 spans")
    assert "(assembly.max_trace_bytes: 5500)" in trace.cut


def test_a_first_span_over_the_text_limit_is_kept_with_its_values_cut(
    store: SpanStore,
) -> None:
    store.write(_spans(3, "y" * 50_000))
    store.read_limit = ReadLimit(text_bytes=20_000)
    trace = store.load_trace(TRACE)
    assert trace is not None and len(trace.spans) == 1
    filler = trace.spans[0].attributes["filler"]
    assert isinstance(filler, str) and len(filler) < 20_000
    assert MARKER.split("{")[0] in filler and filler.endswith("of 50000 characters]")
    assert trace.cut is not None and "the first span's values cut to" in trace.cut


def test_runs_the_cut_may_have_shortened_are_not_scored(store: SpanStore) -> None:
    """A real agent capture read in part: the runs that ended before the cut are whole and
    scored as usual; the agent's run, which ended after it, says it was cut and every scorer
    leaves it unscored with that reason, rather than judge half a run."""
    trace = next(t for t in load_traces([CAPTURES / "strands" / "tool_call"]) if len(t.spans) >= 4)
    store.write(trace.spans, trace.logs)
    whole = store.load_trace(trace.trace_id)
    assert whole is not None and whole.cut is None
    store.read_limit = ReadLimit(spans=len(whole.spans) - 1, text_bytes=10_000_000)
    part = store.load_trace(trace.trace_id)
    assert part is not None and part.cut is not None and part.whole_before_ns > 0
    runs = list(iter_runs(part))
    cut = [run for run in runs if run.trace_cut is not None]
    kept = [run for run in runs if run.trace_cut is None]
    assert cut and kept, [(run.kind, run.trace_cut) for run in runs]
    assert all(run.trace_cut == part.cut for run in cut)
    assert all(run.end_time is not None for run in kept)
    assert all(run.end_time.timestamp() * 1e9 < part.whole_before_ns for run in kept)  # type: ignore[union-attr]
    agent = next(run for run in cut if run.kind == "agent")
    for name in ("completeness", "tone", "consistency", "tool-call-accuracy-code"):
        result = build(name).run_sync(agent)
        assert result.status == "not_scorable" and result.score is None, name
        assert result.reason == f"the run was rebuilt from part of its trace: {part.cut}"
    whole_agent = next(r for r in iter_runs(whole) if r.kind == "agent")
    assert build("tone").run_sync(whole_agent).status == "ok"

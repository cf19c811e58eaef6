"""What tracescore made of each source of a trace, and runs without content (issue 31, items 2, 5).

The content-less runs are real: opentelemetry-instrumentation-openai-v2 2.3b0 in its legacy
mode (``captures/otel-genai-openai-v2-legacy``) puts every message in log records and nothing in
its spans, so its spans alone are exactly what the instrumentation sends over the traces signal
with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` unset: model, usage, finish reasons,
no word of the conversation. The same spans with their log records are the read case.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.extract_support import span, trace
from tests.support.judge_server import JudgeServer
from tests.support.loop_traces import Loop, ToolCall, loop_trace
from tests.support.paths import CAPTURES
from tests.support.scorer_builds import CODE_READING_THE_ANSWER, build
from tests.support.scorer_names import judge_scorer_names
from tests.support.source_traces import (
    CONTENTLESS_SPANS,
    GENAI_SERVICE,
    LATEST,
    LEGACY,
    LEGACY_SCOPE,
)
from tracescore import metrics
from tracescore.cli import app
from tracescore.extract import extract_runs
from tracescore.extract.content import NO_CONTENT_REASON, has_content
from tracescore.extract.model import AgentRun
from tracescore.extract.sources import (
    CONTENT_NOT_CAPTURED,
    CREWAI_NO_LLM_SPANS,
    NO_AI_SPANS,
    NO_RUNS,
    UNKNOWN_CONVENTION,
    read_sources,
)
from tracescore.ingest.files import load_traces
from tracescore.judge import LiteLLMJudge
from tracescore.scorers import registry
from tracescore.spans import LogRecord, Resource, Trace
from tracescore.store import open_store
from tracescore.store.sources import SourceTally, add_source_tallies, list_sources


def traces_of(path: Path) -> list[Trace]:
    return load_traces([path])


def contentless_runs() -> list[AgentRun]:
    runs = [
        run for found in traces_of(CONTENTLESS_SPANS) for run in extract_runs(found) if run.primary
    ]
    assert len(runs) == 2 and all(
        run.model == "gpt-4o-mini" and run.usage.input_tokens for run in runs
    )
    return runs


def acme_trace(scope: str = "acme.agents", attributes: dict[str, Any] | None = None) -> Trace:
    """A trace of a library tracescore knows nothing of: its own attribute names, no AI marker."""
    found = span(
        "acme.run",
        attributes
        or {"acme.prompt": "What's the weather in Paris?", "acme.answer": "Sunny.", "acme.step": 1},
        scope=scope,
    )
    return trace(dataclasses.replace(found, resource=Resource({"service.name": "acme-shop"})))


# --- has_content and the scorers ----------------------------------------------------------------


def test_runs_of_spans_without_content_have_none_and_with_their_logs_they_have() -> None:
    assert not any(has_content(run) for run in contentless_runs())
    with_logs = [run for found in traces_of(LEGACY) for run in extract_runs(found) if run.primary]
    assert len(with_logs) == 2 and all(has_content(run) for run in with_logs)


@pytest.mark.parametrize("name", [*CODE_READING_THE_ANSWER, "tool-call-accuracy-code"])
def test_code_scorers_call_a_run_without_content_not_scorable(name: str) -> None:
    for run in contentless_runs():
        result = build(name).run_sync(run)
        assert (result.status, result.score, result.reason) == (
            "not_scorable",
            None,
            NO_CONTENT_REASON,
        )
    assert "sources view names the setting" in NO_CONTENT_REASON  # no value some library rejects


@pytest.mark.parametrize("name", judge_scorer_names())
async def test_judge_scorers_call_a_run_without_content_not_scorable_without_asking(
    name: str, server: JudgeServer, judge: LiteLLMJudge
) -> None:
    for run in contentless_runs():
        result = await build(name, judge).run(run)
        assert (result.status, result.reason, result.judge_calls) == (
            "not_scorable",
            NO_CONTENT_REASON,
            [],
        )
    assert server.count == 0


def test_a_run_given_as_a_dict_is_scored_as_given() -> None:
    """Mastra's shape (a dataset row) is not a rebuilt run: its empty texts are what was given."""
    result = build("content-similarity").run_sync({"input": "", "output": ""})
    assert result.status == "ok" and result.score == 1.0


def test_tracescore_score_offline_calls_them_not_scorable() -> None:
    result = CliRunner().invoke(app, ["score", str(CONTENTLESS_SPANS), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    summaries = json.loads(result.stdout)
    assert summaries and all((s["n"], s["not_scorable"]) == (0, 2) for s in summaries)


# --- read_sources -------------------------------------------------------------------------------


def test_a_trace_with_content_is_read_and_counted_per_source() -> None:
    for found in traces_of(LATEST):
        reading = read_sources(found, extract_runs(found, only_primary=True))
        assert reading.reason is None and not reading.unread
        (source,) = reading.sources
        assert (source.service, source.scope, source.convention) == (
            GENAI_SERVICE,
            "opentelemetry.util.genai.handler",
            "otel-genai",
        )
        assert (source.spans, source.runs, source.runs_with_content, source.reason) == (
            1,
            1,
            1,
            None,
        )


def test_genai_spans_without_content_say_content_is_not_captured() -> None:
    for found in traces_of(CONTENTLESS_SPANS):
        reading = read_sources(found, extract_runs(found, only_primary=True))
        assert (reading.reason, reading.service) == (CONTENT_NOT_CAPTURED, GENAI_SERVICE)
        (source,) = reading.sources
        assert (source.scope, source.runs, source.runs_with_content, source.convention) == (
            LEGACY_SCOPE,
            1,
            0,
            "otel-genai",
        )
        assert source.detail is not None
        assert source.detail.startswith(
            "message content is not captured: set "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT with "
            "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"
        )
    for found in traces_of(LEGACY):  # the same spans with their log records
        assert read_sources(found, extract_runs(found, only_primary=True)).reason is None


@pytest.mark.parametrize(
    ("capture", "switch"),
    [
        ("google-adk/tool_call", "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"),
        ("google-adk/tool_error", "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"),
        (
            "google-adk/tool_call_legacy_schema_no_content",
            "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true",
        ),
        ("autogen/tool_call", "AutoGen's own spans carry names and ids only"),
        ("autogen/tool_error", "AutoGen's own spans carry names and ids only"),
    ],
)
def test_real_agents_with_default_settings_are_not_scored_and_say_why(
    capture: str, switch: str
) -> None:
    """Google ADK and AutoGen send no message content by default (issue 31, item 9): their
    agent runs are rebuilt, empty, not scored by any code scorer (each gave 1.0 before), and
    the source names the setting that would help."""
    runs = [
        run for found in traces_of(CAPTURES / capture) for run in extract_runs(found) if run.primary
    ]
    assert runs and all(run.kind == "agent" and run.agent_name == "WeatherBot" for run in runs)
    for name in CODE_READING_THE_ANSWER:
        results = [registry.get(name).factory().run_sync(run) for run in runs]
        assert [(r.status, r.reason) for r in results] == [
            ("not_scorable", NO_CONTENT_REASON)
        ] * len(runs)
    readings = [
        read_sources(found, extract_runs(found, only_primary=True))
        for found in traces_of(CAPTURES / capture)
    ]
    agent_traces = [reading for reading in readings if reading.reason == CONTENT_NOT_CAPTURED]
    assert len(agent_traces) == len(runs)
    for reading in agent_traces:
        (source,) = reading.sources
        assert source.detail is not None and source.detail.startswith(
            f"message content is not captured: {switch}"
        )


def test_an_unknown_library_is_named_with_its_scope_and_attribute_keys() -> None:
    found = acme_trace(attributes={"acme.region": "eu", "acme.step": 1})
    reading = read_sources(found, extract_runs(found))
    (source,) = reading.sources
    assert (reading.reason, reading.service, source.reason) == (
        NO_AI_SPANS,
        "acme-shop",
        NO_AI_SPANS,
    )
    assert source.detail is not None
    assert source.detail.startswith(
        "unknown convention: scope acme.agents, attributes acme.region, acme.step"
    )
    assert "eu" not in source.detail  # keys only: values are the user's data


def test_content_no_reader_knows_is_an_unknown_convention_to_declare() -> None:
    """Issue 45: a library's own keys holding a prompt are content tracescore could read once
    told how: the advice names the keys and the ``conventions:`` block, never the values."""
    found = acme_trace()
    reading = read_sources(found, extract_runs(found))
    (source,) = reading.sources
    assert (reading.reason, source.reason) == (UNKNOWN_CONVENTION, UNKNOWN_CONVENTION)
    assert source.detail == (
        "unknown convention: scope acme.agents, content in acme.prompt: spans no reader of "
        "tracescore knows; declare how to read them in the configuration's `conventions:` block "
        "(docs/span-formats.md#teaching-tracescore-a-new-library)"
    )


def test_names_from_the_spans_are_quoted_cut_and_the_unread_metric_names_few_services() -> None:
    """A reason quotes scope and keys from the spans: each is cut, so a hostile name cannot make
    the detail (stored, shown, logged) as long as it likes; and a client inventing service names
    cannot grow the unread metric without bound."""
    found = acme_trace(scope="s" * 10_000, attributes={"k" * 10_000: 1, "acme.step": 1})
    (source,) = read_sources(found, extract_runs(found)).sources
    assert source.detail is not None and len(source.detail) < 600
    assert "s" * 100 + "…" in source.detail and "k" * 100 + "…" in source.detail
    for index in range(metrics.UNREAD_SERVICES_LABELLED + 5):
        metrics.trace_unread(f"invented-{index}", NO_AI_SPANS)
    named = {
        sample.labels["service"]
        for metric in metrics.traces_unread.collect()
        for sample in metric.samples
    }
    assert len(named) <= metrics.UNREAD_SERVICES_LABELLED + 1 and "(other)" in named


def test_an_ai_library_without_a_reader_is_an_unknown_convention() -> None:
    found = acme_trace("dspy.predict", {"dspy.signature": "question -> answer"})
    reading = read_sources(found, extract_runs(found))
    assert reading.reason == UNKNOWN_CONVENTION
    assert reading.sources[0].detail is not None
    assert reading.sources[0].detail.startswith(
        "unknown convention: scope dspy.predict, attributes dspy.signature"
    )


def test_other_scopes_beside_a_read_agent_say_they_are_no_ai_library() -> None:
    """Every scope with spans but no run has a reason (issue 45): the HTTP scope beside a read
    agent once had none, which left a user wondering whether it was read; it says it is no AI
    library's and that nothing is to change. The trace is still read."""
    (found, *_) = traces_of(LATEST)
    http = dataclasses.replace(
        found.spans[0],
        span_id="00000000000000ff",
        parent_span_id=None,
        attributes={"http.route": "/chat"},
        scope=dataclasses.replace(
            found.spans[0].scope, name="opentelemetry.instrumentation.fastapi"
        ),
    )
    both = dataclasses.replace(found, spans=[*found.spans, http])
    reading = read_sources(both, extract_runs(both, only_primary=True))
    assert reading.reason is None
    assert sorted((s.scope, s.runs_with_content, s.reason) for s in reading.sources) == [
        ("opentelemetry.instrumentation.fastapi", 0, NO_AI_SPANS),
        ("opentelemetry.util.genai.handler", 1, None),
    ]
    http_source = next(s for s in reading.sources if s.runs == 0)
    assert http_source.detail is not None and "http.route" in http_source.detail
    assert "nothing to change" in http_source.detail


def crew_trace(*, llm_span: bool) -> Trace:
    """OpenInference's CrewAI instrumentor by default: crew and agent spans, the model calls untraced."""
    scope = "openinference.instrumentation.crewai"
    crew = span(
        "Crew.kickoff", {"openinference.span.kind": "CHAIN", "input.value": "{}"}, scope=scope
    )
    agent = span(
        "Weather agent._execute_core",
        {
            "openinference.span.kind": "AGENT",
            "input.value": "What's the weather like in Paris today?",
            "output.value": "It is sunny in Paris today, about 21 degrees Celsius.",
        },
        parent=crew.span_id,
        scope=scope,
    )
    spans = [crew, agent]
    if llm_span:
        spans.append(
            span(
                "ChatOpenAI",
                {
                    "openinference.span.kind": "LLM",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "It is sunny in Paris today.",
                },
                parent=agent.span_id,
                scope="openinference.instrumentation.litellm",
            )
        )
    return trace(*spans)


def test_crewai_without_llm_spans_says_why_it_reads_little() -> None:
    """Named on the source whether or not its agent runs were read from what the crew reported
    (then the trace counts as read, and in the unread metric only when they were not)."""
    found = crew_trace(llm_span=False)
    reading = read_sources(found, extract_runs(found, only_primary=True))
    assert reading.reason in (None, CREWAI_NO_LLM_SPANS)
    (source,) = reading.sources
    assert source.reason == CREWAI_NO_LLM_SPANS and source.detail is not None
    assert source.detail.startswith("CrewAI instrumentor without use_event_listener: no LLM spans")
    found = crew_trace(llm_span=True)
    assert all(
        s.reason is None
        for s in read_sources(found, extract_runs(found, only_primary=True)).sources
    )


# --- the sources table --------------------------------------------------------------------------


def test_tallies_add_up_and_the_latest_batch_says_the_reason(db_url: str) -> None:
    store = open_store(db_url)
    first = [
        SourceTally(
            "shop",
            "acme.agents",
            spans=3,
            traces=1,
            unread_traces=1,
            reason=NO_AI_SPANS,
            detail="unknown",
        ),
        SourceTally(
            "shop",
            "openai_v2",
            spans=2,
            traces=2,
            runs=2,
            convention="otel-genai",
            reason=CONTENT_NOT_CAPTURED,
            detail="capture off",
            unread_traces=2,
        ),
    ]
    later = [SourceTally("shop", "openai_v2", spans=4, traces=2, runs=2, runs_with_content=2)]
    with store.write_transaction() as connection:
        add_source_tallies(connection, first, now=1000.0)
    with store.write_transaction() as connection:
        add_source_tallies(connection, later, now=2000.0)
    with store.engine.connect() as connection:
        acme, genai = list_sources(connection)  # those with a reason first
        assert list_sources(connection, "elsewhere") == []
    assert (acme.scope, acme.reason, acme.detail, acme.spans, acme.unread_traces) == (
        "acme.agents",
        NO_AI_SPANS,
        "unknown",
        3,
        1,
    )
    assert (
        genai.spans,
        genai.traces,
        genai.runs,
        genai.runs_with_content,
        genai.unread_traces,
    ) == (6, 4, 4, 2, 2)
    assert (genai.convention, genai.reason, genai.detail) == (
        "otel-genai",
        None,
        None,
    )  # read since
    assert (genai.first_seen, genai.last_seen) == (1000.0, 2000.0)


def test_names_a_client_sent_are_stored_as_both_databases_accept_them(db_url: str) -> None:
    store = open_store(db_url)
    with store.write_transaction() as connection:
        replaced = add_source_tallies(
            connection, [SourceTally("s\x00hop", "x" * 500, spans=1, traces=1)]
        )
    with store.engine.connect() as connection:
        (source,) = list_sources(connection)
    assert replaced == 1 and source.service == "s\ufffdhop" and len(source.scope) == 200


def test_content_a_reader_missed_is_never_called_not_captured() -> None:
    """A model-call span a reader claims (``gen_ai.operation.name``) gives a run without
    content, but the library put the prompt under a key of its own: content is captured, only
    not understood, so the advice is to declare it, naming the key (issue 45, item 4)."""
    found = acme_trace(
        "acme.llm",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.id": "chatcmpl-1",
            "acme.llm.prompt_text": "What's the weather in Paris?",
        },
    )
    runs = extract_runs(found)
    assert runs and not any(has_content(run) for run in runs)
    reading = read_sources(found, runs)
    (source,) = reading.sources
    assert (reading.reason, source.reason, source.convention) == (
        UNKNOWN_CONVENTION,
        UNKNOWN_CONVENTION,
        "otel-genai",
    )
    assert source.detail == (
        "runs read as otel-genai carry no content, but the trace holds content no "
        "reader understood (scope acme.llm: acme.llm.prompt_text): declare how to read them in "
        "the configuration's `conventions:` block (docs/span-formats.md#teaching-tracescore-a-new-library)"
    )
    # Without that key, the same span is what content capture switched off sends.
    del found.spans[0].attributes["acme.llm.prompt_text"]
    assert read_sources(found, extract_runs(found)).reason == CONTENT_NOT_CAPTURED


def test_every_source_that_fed_a_run_counts_it() -> None:
    """A hand-written loop's run: anchored to the user's span (scope ``app``), built from the
    client instrumentation's calls and tool spans; both sources fed it."""
    found = loop_trace(
        Loop(
            "Be brief.",
            "Weather?",
            [[ToolCall("c1", "get_weather", {}, {"sky": "sun"})]],
            "Sun.",
            [(1, 1), (2, 1)],
        ),
        "otel-genai",
        wrapper="plain",
    )
    reading = read_sources(found, extract_runs(found, only_primary=True))
    assert reading.reason is None
    assert sorted(
        (s.scope, s.spans, s.runs, s.runs_with_content, s.reason) for s in reading.sources
    ) == [
        ("app", 1, 1, 1, None),
        ("opentelemetry.instrumentation.openai_v2", 3, 1, 1, None),
    ]


def test_an_ai_library_s_source_that_fed_no_run_of_a_read_trace_says_why() -> None:
    """OpenLLMetry's ``@workflow`` span around the model call is read, but no run is made of
    it: its scope says so, where before it showed no convention and no reason."""
    for found in traces_of(CAPTURES / "openllmetry-openai" / "conversation"):
        reading = read_sources(found, extract_runs(found, only_primary=True))
        assert reading.reason is None
        idle = {s.scope: s for s in reading.sources if s.runs == 0}
        assert list(idle) == ["traceloop.tracer"]
        assert (idle["traceloop.tracer"].reason, idle["traceloop.tracer"].convention) == (
            NO_RUNS,
            "openllmetry",
        )
        assert idle["traceloop.tracer"].detail == (
            "spans read as openllmetry but none became a run (span names: "
            "concierge_turn.workflow); this trace's runs came from other scopes' spans"
        )


def test_content_in_log_events_no_reader_knows_is_not_content_not_captured() -> None:
    """The content-less GenAI spans beside a log event of an unknown name carrying the prompt:
    content is captured, only where no reader looks. Plain log lines (no event name) are the
    application's and say nothing about capture."""
    (found, *_) = traces_of(CONTENTLESS_SPANS)
    span = found.spans[0]

    def event(name: str, body: Any) -> LogRecord:
        return LogRecord(
            span.start_time_ns,
            0,
            found.trace_id,
            span.span_id,
            name,
            9,
            "",
            body,
            {},
            span.resource,
            span.scope,
        )

    plain = dataclasses.replace(found, logs=[event("", "handled the request in 20 ms")])
    assert read_sources(plain, extract_runs(plain)).reason == CONTENT_NOT_CAPTURED
    told = dataclasses.replace(
        found, logs=[event("acme.prompt", {"message": {"content": "What's the weather today?"}})]
    )
    reading = read_sources(told, extract_runs(told))
    assert reading.reason == UNKNOWN_CONVENTION
    (source,) = reading.sources
    assert source.detail is not None and (
        "the trace holds content no reader understood (log records: log event "
        "acme.prompt)" in source.detail
    )

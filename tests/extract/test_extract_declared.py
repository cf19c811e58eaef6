"""Conventions declared in configuration (issue 31, item 3): a library taught without code.

The library is made up on purpose ("Acme Agents", scope ``acme.agents``): its spans say what
they are in ``acme.kind``, keep the agent's instructions inside a JSON config attribute, the
model's conversation under a key of their own (``history``) and the token counts in a JSON
object, so every kind of place a ``conventions:`` entry can point at is used. Without the entry
tracescore reads nothing of it; with it, the weather scenario's agent run comes out whole, from
``tracescore extract --config``, and through a running ``tracescore serve --config``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from tests.support.extract_support import (
    WEATHER_ANSWER,
    WEATHER_RESULT,
    WEATHER_SYSTEM,
    WEATHER_USER,
    final_answer,
    only,
    span,
    system_text,
    tool_calls,
    trace,
    user_text,
)
from tests.support.server_process import start_server
from tracescore.cli import app
from tracescore.config import ConfigError, parse_config
from tracescore.extract import extract_runs
from tracescore.extract.declared import claim_order
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces

TRACE_ID = "5c0f3b1e9a7d4c2b8e6f1a0d3c5b7e9f"
ANSWER = f"{WEATHER_ANSWER}, with clear skies all day."
CALL_ID = "call_w1"

CONVENTION = """
conventions:
  - name: acme
    match: {scope: "acme.*"}
    read:
      input_tokens: {attribute: acme.tokens, path: in}
      output_tokens: {attribute: acme.tokens, path: out}
    spans:
      - kind: agent
        equals: {acme.kind: agent}
        read:
          agent_name: acme.agent.name
          system: {attribute: acme.agent.config, path: instructions}
          input: acme.task
          output: {attribute: acme.result, path: answer}
      - kind: llm
        name: 're:acme\\.model .+'
        read:
          model: acme.model
          messages: {attribute: acme.payload, path: history}
          output: {attribute: acme.reply, path: message}
      - kind: tool
        equals: {acme.kind: tool}
        read:
          tool_name: {attribute: acme.tool, path: name}
          tool_call_id: {attribute: acme.tool, path: call.id}
          arguments: {attribute: acme.tool, path: call.args}
          result: acme.tool.output
      - kind: other
"""


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


def _span(
    span_id: str,
    parent: str | None,
    name: str,
    start_s: float,
    end_s: float,
    attributes: dict[str, Any],
) -> dict[str, Any]:
    base = 1_700_000_000_000_000_000
    return {
        "traceId": TRACE_ID,
        "spanId": span_id,
        "parentSpanId": parent or "",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(base + int(start_s * 1e9)),
        "endTimeUnixNano": str(base + int(end_s * 1e9)),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
    }


def acme_export() -> bytes:
    """The weather scenario as the made-up Acme Agents SDK would export it (OTLP/JSON)."""
    call = {
        "id": CALL_ID,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})},
    }
    first_turn = [
        {"role": "system", "content": WEATHER_SYSTEM},
        {"role": "user", "content": WEATHER_USER},
    ]
    second_turn = [
        *first_turn,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": CALL_ID, "content": json.dumps(WEATHER_RESULT)},
    ]
    root = "a1a1a1a1a1a1a1a1"
    spans = [
        _span(
            root,
            None,
            "acme.run",
            0,
            5,
            {
                "acme.kind": "agent",
                "acme.agent.name": "WeatherBot",
                "acme.agent.config": {"instructions": WEATHER_SYSTEM, "temperature": 0},
                "acme.task": WEATHER_USER,
                "acme.result": {"answer": ANSWER, "steps": 2},
            },
        ),
        _span("b2b2b2b2b2b2b2b2", root, "acme.memory.load", 0.1, 0.2, {"acme.kind": "memory"}),
        _span(
            "c3c3c3c3c3c3c3c3",
            root,
            "acme.model gpt-4o-mini",
            1,
            2,
            {
                "acme.kind": "model_call",
                "acme.model": "gpt-4o-mini",
                "acme.payload": {"history": first_turn, "temperature": 0},
                "acme.reply": {
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]}
                },
                "acme.tokens": {"in": 103, "out": 33},
            },
        ),
        _span(
            "d4d4d4d4d4d4d4d4",
            root,
            "acme.tool",
            2,
            3,
            {
                "acme.kind": "tool",
                "acme.tool": {
                    "name": "get_weather",
                    "call": {"id": CALL_ID, "args": {"city": "Paris"}},
                },
                "acme.tool.output": WEATHER_RESULT,
            },
        ),
        _span(
            "e5e5e5e5e5e5e5e5",
            root,
            "acme.model gpt-4o-mini",
            3,
            4,
            {
                "acme.kind": "model_call",
                "acme.model": "gpt-4o-mini",
                "acme.payload": {"history": second_turn},
                "acme.reply": {"message": {"role": "assistant", "content": ANSWER}},
                "acme.tokens": {"in": 185, "out": 35},
            },
        ),
    ]
    return json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {
                        "attributes": [
                            {"key": "service.name", "value": {"stringValue": "acme-app"}}
                        ]
                    },
                    "scopeSpans": [
                        {"scope": {"name": "acme.agents", "version": "0.3.1"}, "spans": spans}
                    ],
                }
            ]
        }
    ).encode()


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    folder = tmp_path / "acme"
    folder.mkdir()
    (folder / "0001.json").write_bytes(acme_export())
    return folder


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "tracescore.yaml"
    path.write_text(CONVENTION)
    return path


def _runs(capture: Path, config_text: str | None = CONVENTION) -> list[AgentRun]:
    conventions = parse_config(config_text).conventions if config_text else []
    (trace,) = load_traces([capture])
    return extract_runs(trace, claim_order(conventions))


def assert_acme_agent(run: AgentRun) -> None:
    assert (run.kind, run.primary, run.convention) == ("agent", True, "acme")
    assert run.agent_name == "WeatherBot"
    assert run.model == "gpt-4o-mini"
    assert system_text(run) == [WEATHER_SYSTEM]
    assert user_text(run) == [WEATHER_USER]
    (call,) = tool_calls(run)
    assert (call.tool_name, call.tool_call_id, call.args) == (
        "get_weather",
        CALL_ID,
        {"city": "Paris"},
    )
    assert (call.result, call.state) == (WEATHER_RESULT, "result")
    assert final_answer(run) == ANSWER
    assert [p.type for p in run.output[0].content.parts] == ["tool-invocation", "text"]
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.total_tokens) == (
        288,
        68,
        356,
    )
    assert [c.kind for c in run.context] == ["tool_result"]
    assert run.warnings == []


def test_without_a_declaration_nothing_of_the_library_is_read(capture: Path) -> None:
    assert _runs(capture, None) == []


def test_a_declared_convention_rebuilds_the_agent_run(capture: Path) -> None:
    runs = _runs(capture)
    (agent,) = only(runs, "agent")
    assert_acme_agent(agent)
    llms = only(runs, "llm")
    assert [(r.convention, r.primary, r.model) for r in llms] == [
        ("acme", False, "gpt-4o-mini")
    ] * 2
    assert [(r.usage.input_tokens, r.usage.output_tokens) for r in llms] == [(103, 33), (185, 35)]
    (tool,) = only(runs, "tool")
    assert tool.agent_name == "WeatherBot"
    # The memory span is the library's, claimed as ``other``: in the agent's spans, no run.
    assert "b2b2b2b2b2b2b2b2" in agent.span_ids and len(runs) == 4


def test_rules_are_tried_in_order_and_the_rule_read_overrides_the_shared_one(capture: Path) -> None:
    config = yaml.safe_load(CONVENTION)
    spans = config["conventions"][0]["spans"]
    # A catch-all first takes every span as ``other``: no run at all.
    config["conventions"][0]["spans"] = [{"kind": "other"}, *spans]
    assert _runs(capture, yaml.safe_dump(config)) == []
    # A rule's own place of a fact replaces the shared one (here: a place no span has).
    spans[1]["read"]["input_tokens"] = "acme.missing"
    config["conventions"][0]["spans"] = spans
    llms = only(_runs(capture, yaml.safe_dump(config)), "llm")
    assert [r.usage.input_tokens for r in llms] == [0, 0]


def test_a_scope_that_does_not_match_claims_nothing(capture: Path) -> None:
    assert _runs(capture, CONVENTION.replace('"acme.*"', '"acme-other"')) == []


def test_tracescore_extract_config_shows_the_declared_runs(
    capture: Path, config_file: Path
) -> None:
    result = CliRunner().invoke(
        app, ["extract", str(capture), "--config", str(config_file), "--primary"]
    )
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)
    assert_acme_agent(AgentRun.model_validate(run))
    bare = CliRunner().invoke(app, ["extract", str(capture)])
    assert bare.exit_code == 0 and json.loads(bare.stdout) == []


def test_tracescore_score_config_scores_the_declared_runs(capture: Path, tmp_path: Path) -> None:
    config = tmp_path / "score.yaml"
    config.write_text(CONVENTION + "scorers: [{name: tone, scorer: tone}]\n")
    result = CliRunner().invoke(
        app, ["score", str(capture), "--config", str(config), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)
    assert (summary["binding"], summary["n"], summary["errors"]) == ("tone", 1, 0)


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (
            lambda c: c["spans"][0].update(raed={}),
            "conventions.0.spans.0.raed",
            "Extra inputs are not permitted",
        ),
        (
            lambda c: c["spans"][1].update(name="re:acme.(model"),
            "conventions.0.spans.1.name",
            "invalid regex",
        ),
        (
            lambda c: c["spans"][0]["read"].update(
                system={"attribute": "acme.agent.config", "path": "instructions..text"}
            ),
            "conventions.0.spans.0.read.system.path",
            "not a path at character 14",
        ),
        (
            lambda c: c["read"].update(input_tokens={"path": "in"}),
            "conventions.0.read.input_tokens",
            "give either attribute or span_name: true",
        ),
        (
            lambda c: c["spans"][0]["read"].update(prompt="acme.prompt"),
            "conventions.0.spans.0.read.prompt.[key]",
            "Input should be 'agent_name', 'system'",
        ),
        (
            lambda c: c["spans"][2].update(kind="function"),
            "conventions.0.spans.2.kind",
            "Input should be 'agent', 'llm', 'tool', 'retrieval' or 'other'",
        ),
        (lambda c: c.update(spans=[]), "conventions.0.spans", "at least 1 item"),
    ],
    ids=[
        "unknown-key",
        "bad-regex",
        "bad-path",
        "no-attribute",
        "unknown-fact",
        "bad-kind",
        "no-rules",
    ],
)
def test_config_errors_name_the_bad_key(
    edit: Any, where: str, message: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(CONVENTION)
    edit(config["conventions"][0])
    text = yaml.safe_dump(config, sort_keys=False)
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "tracescore.yaml")
    assert f"{where} (line " in str(caught.value) and message in str(caught.value)
    # ``tracescore config check`` refuses the file with the same words.
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    checked = CliRunner().invoke(app, ["config", "check", str(path)])
    assert checked.exit_code != 0 and where in checked.output


def test_two_conventions_of_one_name_are_refused() -> None:
    config = yaml.safe_load(CONVENTION)
    config["conventions"].append(config["conventions"][0])
    with pytest.raises(
        ConfigError, match=r"conventions\.1\.name .*duplicate convention name 'acme'"
    ):
        parse_config(yaml.safe_dump(config))


def test_a_served_service_extracts_and_scores_the_declared_runs(tmp_path: Path) -> None:
    config = CONVENTION + "scorers: [{name: tone, scorer: tone}]\nworkers: {processes: 1}\n"
    with (
        start_server(tmp_path, config=config) as server,
        httpx.Client(base_url=server.base_url, timeout=10) as http,
    ):
        response = http.post(
            "/v1/traces", content=acme_export(), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 200, response.text
        deadline = time.monotonic() + 30
        scores: list[dict[str, Any]] = []
        while not scores:
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
            scores = http.get("/api/scores", params={"trace_id": TRACE_ID}).json()["items"]
        (score,) = scores
        assert (score["binding"], score["span_id"], score["status"]) == (
            "tone",
            "a1a1a1a1a1a1a1a1",
            "ok",
        )
        assert score["agent"] == "WeatherBot"
        runs = http.get(f"/api/traces/{TRACE_ID}/runs", params={"primary": "true"}).json()
        (run,) = runs
        assert_acme_agent(AgentRun.model_validate(run))


def test_a_json_quoted_value_and_a_whole_request_body_need_no_path() -> None:
    """Values read without a path are JSON-decoded: a kind or model sent JSON-quoted (MLflow
    writes ``"\\"CHAT_MODEL\\""``), a request body, a chat completion with its usage."""
    config = parse_config("""
conventions:
  - name: quoted
    spans:
      - kind: llm
        equals: {x.kind: '"CHAT_MODEL"'}
        read: {model: x.model, messages: x.inputs, output: x.outputs}
""")
    request = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": WEATHER_SYSTEM},
            {"role": "user", "content": WEATHER_USER},
        ],
    }
    response = {
        "choices": [{"message": {"role": "assistant", "content": ANSWER}}],
        "usage": {"prompt_tokens": 116, "completion_tokens": 23, "total_tokens": 139},
    }
    (run,) = extract_runs(
        trace(
            span(
                "Completions",
                {
                    "x.kind": '"CHAT_MODEL"',
                    "x.model": '"gpt-4o-mini"',
                    "x.inputs": json.dumps(request),
                    "x.outputs": json.dumps(response),
                },
            )
        ),
        claim_order(config.conventions),
    )
    assert (run.kind, run.convention, run.model) == ("llm", "quoted", "gpt-4o-mini")
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    assert run.output[0].content.content == ANSWER
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.total_tokens) == (
        116,
        23,
        139,
    )


def test_an_error_fact_fails_the_tool_call_and_a_system_prompt_is_kept_once() -> None:
    config = parse_config("""
conventions:
  - name: acme
    spans:
      - kind: agent
        equals: {acme.kind: agent}
        read: {system: acme.instructions, messages: acme.messages}
      - kind: tool
        equals: {acme.kind: tool}
        read: {arguments: acme.args, result: acme.output, error: acme.error}
""")
    agent = span(
        "acme.run",
        {
            "acme.kind": "agent",
            "acme.instructions": WEATHER_SYSTEM,
            "acme.messages": json.dumps(
                [
                    {"role": "system", "content": WEATHER_SYSTEM},
                    {"role": "user", "content": WEATHER_USER},
                ]
            ),
        },
    )
    failed = span(
        "get_weather",
        {
            "acme.kind": "tool",
            "acme.args": '{"city": "Atlantis"}',
            "acme.error": "ValueError: Unknown city: Atlantis",
        },
        parent=agent.span_id,
    )
    fine = span(
        "get_weather",
        {
            "acme.kind": "tool",
            "acme.args": '{"city": "Paris"}',
            "acme.output": json.dumps(WEATHER_RESULT),
            "acme.error": False,
        },
        parent=agent.span_id,
    )
    runs = extract_runs(trace(agent, failed, fine), claim_order(config.conventions))
    (run,) = only(runs, "agent")
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    assert [(c.args, c.state, c.error_text) for c in tool_calls(run)] == [
        ({"city": "Atlantis"}, "output-error", "ValueError: Unknown city: Atlantis"),
        ({"city": "Paris"}, "result", None),
    ]
    assert [(r.status, r.error) for r in only(runs, "tool")] == [
        ("error", "ValueError: Unknown city: Atlantis"),
        ("unset", None),
    ]


# --- issue 45, item 5: what the LangSmith-traced LangGraph agent needed -------------------------

GRAPH = """
conventions:
  - name: graph
    match: {scope: graph.lib}
    own_facts: OWN
    spans:
      - kind: agent
        equals: {graph.kind: chain}
        AGENT_MATCH
        read: {input: graph.input, output: graph.output}
      - kind: other
        equals: {graph.kind: chain}
      - kind: llm
        equals: {graph.kind: llm}
        read: {messages: graph.prompt, output: graph.completion, tools: graph.tools}
      - kind: tool
        equals: {graph.kind: tool}
        read:
          tool_name: {span_name: true, pattern: '(.+)\\.invoke'}
          arguments: graph.input
          result: graph.output
"""


def _lc(kind: str, **kwargs: Any) -> str:
    """A LangChain-serialized message (``dumpd``), as LangSmith's export writes one."""
    path = ["langchain", "schema", "messages", kind]
    return json.dumps({"lc": 1, "type": "constructor", "id": path, "kwargs": kwargs})


def graph_trace() -> Any:
    """A LangGraph agent: the graph's root span holds the question and a checked answer; its
    node spans carry the same attributes (plus ``graph.node``); the model calls keep the whole
    prompt, LangChain-serialized replies and the offered tools; the tool span is named
    ``<tool>.invoke``."""
    chain = {"graph.kind": "chain", "graph.input": _lc("HumanMessage", content=WEATHER_USER)}
    root = span(
        "LangGraph",
        {**chain, "graph.output": _lc("AIMessage", content=f"{ANSWER} [checked]")},
        scope="graph.lib",
    )
    node = span("agent", {**chain, "graph.node": "agent"}, parent=root.span_id, scope="graph.lib")
    prompt = [
        {"role": "system", "content": WEATHER_SYSTEM},
        {"role": "user", "content": WEATHER_USER},
    ]
    call = {"id": CALL_ID, "name": "get_weather", "args": {"city": "Paris"}}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]

    def model_call(completion: str) -> Any:
        attributes = {
            "graph.kind": "llm",
            "graph.prompt": json.dumps(prompt),
            "graph.completion": completion,
            "graph.tools": json.dumps(tools),
        }
        return span("ChatOpenAI", attributes, parent=node.span_id, scope="graph.lib")

    first = model_call(_lc("AIMessage", content="", tool_calls=[call]))
    tool = span(
        "get_weather.invoke",
        {
            "graph.kind": "tool",
            "graph.input": '{"city": "Paris"}',
            "graph.output": json.dumps(WEATHER_RESULT),
        },
        parent=node.span_id,
        scope="graph.lib",
    )
    second = model_call(_lc("AIMessage", content=ANSWER))
    return trace(root, node, first, tool, second)


@pytest.mark.parametrize("matcher", ["root: true", "lacks: [graph.node]"])
@pytest.mark.parametrize("own", ["fallback", "first"])
def test_root_and_absent_attribute_matchers_offered_tools_and_tool_name_patterns(
    matcher: str, own: str
) -> None:
    config = parse_config(GRAPH.replace("AGENT_MATCH", matcher).replace("OWN", own))
    runs = extract_runs(graph_trace(), claim_order(config.conventions))
    (run,) = [r for r in runs if r.primary]
    assert (run.kind, run.agent_name, run.convention) == ("agent", "LangGraph", "graph")
    assert system_text(run) == [WEATHER_SYSTEM] and user_text(run) == [WEATHER_USER]
    assert [(c.tool_call_id, c.tool_name, c.args, c.result) for c in tool_calls(run)] == [
        (CALL_ID, "get_weather", {"city": "Paris"}, WEATHER_RESULT)
    ]
    assert [t.name for t in run.tools] == ["get_weather"]
    # The calls' answer by default; the graph's own (checked) answer when its facts come first.
    assert final_answer(run) == (ANSWER if own == "fallback" else f"{ANSWER} [checked]")
    assert [r.kind for r in runs if not r.primary] == ["llm", "llm", "tool"]


def test_input_and_output_are_read_by_one_parser() -> None:
    """A single LangChain message reads as a message on either side (the output side used to
    keep it as JSON text)."""
    config = parse_config("""
conventions:
  - name: lc
    spans:
      - kind: llm
        read: {input: x.in, output: x.out}
""")
    (run,) = extract_runs(
        trace(
            span(
                "call",
                {
                    "x.in": _lc("HumanMessage", content=WEATHER_USER),
                    "x.out": _lc("AIMessage", content=ANSWER),
                },
            )
        ),
        claim_order(config.conventions),
    )
    assert user_text(run) == [WEATHER_USER] and final_answer(run) == ANSWER

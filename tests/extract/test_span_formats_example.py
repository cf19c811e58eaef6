"""The ``gen_ai.input.messages`` example of docs/span-formats.md is read as the page says
(issue 50: the page had no example of the attribute it is mostly about)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.paths import REPO
from tests.support.web_traces import json_span
from tracescore.extract import extract_runs, select_runs
from tracescore.ingest.files import load_traces


def test_the_documented_chat_span_becomes_the_run_it_describes(tmp_path: Path) -> None:
    page = (REPO / "docs" / "span-formats.md").read_text(encoding="utf-8")
    section = page.split("## OTel GenAI, latest", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.S)
    attributes = json.loads(block)
    span = json_span(
        "ab" * 16, "cd" * 8, None, "chat gpt-4o-mini", 1_700_000_000 * 10**9, attributes
    )
    export = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    path = tmp_path / "example.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    (trace,) = load_traces([path])
    (run,) = extract_runs(trace)
    assert run.kind == "llm" and run.model == "gpt-4o-mini"
    (document,) = select_runs([run])
    asked = document["input"]
    assert [m["content"]["content"] for m in asked["inputMessages"]] == [
        "What is the weather in Paris?"
    ]
    assert asked["systemMessages"][0]["content"] == "You are a weather assistant."
    (answer,) = document["output"]
    assert answer["content"]["content"] == "Sunny and 21 °C in Paris."
    (call,) = answer["content"]["toolInvocations"]
    assert (call["toolName"], call["args"], call["result"]) == (
        "get_weather",
        {"city": "Paris"},
        {"temp_c": 21, "sky": "sunny"},
    )
    assert [c["kind"] for c in document["context"]] == ["tool_result"]

"""The shared message parser: GenAI parts and the dialects that reach it (SPAN_FORMATS §9.3)."""

from __future__ import annotations

from tracescore.extract.genai_messages import (
    find_reasoning,
    parse_message,
    parse_messages,
    parse_system_instructions,
    parse_tool_definitions,
)


def _parts(raw: object, role: str = "assistant") -> list[tuple]:
    warnings: list[str] = []
    message = parse_message(raw, "m", warnings, "test", default_role=role)
    assert message is not None
    out = []
    for part in message.content.parts:
        inv = part.tool_invocation
        if inv is not None:
            out.append((inv.state, inv.tool_call_id, inv.tool_name, inv.args, inv.result))
        else:
            out.append((part.type, part.text or part.reasoning))
    return out


def test_genai_field_drift() -> None:
    # Spec (`response`, `reasoning`, object arguments) …
    spec = {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "think"},
            {"type": "tool_call", "id": "1", "name": "f", "arguments": {"a": 1}},
            {"type": "tool_call_response", "id": "1", "response": '{"ok": true}'},
        ],
    }
    # … and Pydantic AI (`result`, `thinking`, arguments as a JSON string).
    pydantic = {
        "role": "user",
        "parts": [
            {"type": "thinking", "content": "think"},
            {"type": "tool_call", "id": "1", "name": "f", "arguments": '{"a": 1}'},
            {"type": "tool_call_response", "id": "1", "name": "f", "result": {"ok": True}},
        ],
    }
    expected = [("reasoning", "think"), ("call", "1", "f", {"a": 1}, None)]
    assert _parts(spec)[:2] == expected and _parts(pydantic)[:2] == expected
    assert _parts(spec)[2][::4] == ("result", {"ok": True})
    assert _parts(pydantic)[2] == ("result", "1", "f", {}, {"ok": True})


def test_openai_anthropic_bedrock_gemini_and_langchain_dialects() -> None:
    openai = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "hmm",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"x": 2}'}}
        ],
    }
    assert _parts(openai) == [("reasoning", "hmm"), ("call", "c", "f", {"x": 2}, None)]
    anthropic = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "text", "text": "42"}],
            },
            {"type": "tool_use", "id": "u", "name": "g", "input": {"y": 1}},
        ],
    }
    assert _parts(anthropic) == [("result", "t", "", {}, "42"), ("call", "u", "g", {"y": 1}, None)]
    bedrock = {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "plan"}}},
            {"toolUse": {"toolUseId": "b", "name": "h", "input": {"z": 3}}},
            {"toolResult": {"toolUseId": "b", "content": [{"json": {"v": 1}}], "status": "error"}},
        ],
    }
    assert _parts(bedrock) == [
        ("reasoning", "plan"),
        ("call", "b", "h", {"z": 3}, None),
        ("output-error", "b", "", {}, {"v": 1}),
    ]
    gemini = {
        "role": "model",
        "parts": [
            {"text": "pondering", "thought": True},
            {"functionCall": {"name": "k", "args": {"q": "r"}}},
            {"text": "done"},
        ],
    }
    assert _parts(gemini) == [
        ("reasoning", "pondering"),
        ("call", "", "k", {"q": "r"}, None),
        ("text", "done"),
    ]
    assert parse_message(gemini, "m", [], "test").role == "assistant"  # type: ignore[union-attr]
    langchain = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "AIMessage"],
        "kwargs": {
            "content": "",
            "tool_calls": [{"name": "f", "args": {"a": 1}, "id": "lc1", "type": "tool_call"}],
        },
    }
    message = parse_message(langchain, "m", [], "test")
    assert message is not None and message.role == "assistant"
    assert _parts(langchain) == [("call", "lc1", "f", {"a": 1}, None)]
    tool = {"type": "tool", "content": "boom", "tool_call_id": "lc1", "status": "error"}
    assert _parts(tool) == [("output-error", "lc1", "", {}, "boom")]
    (human,) = parse_messages([["user", "hi"]], "p", [], "test")
    assert (human.role, human.content.content) == ("user", "hi")


def test_files_unknown_parts_and_empty_values() -> None:
    raw = {
        "role": "user",
        "parts": [
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "aGk="},
            {"type": "uri", "uri": "https://x/a.pdf", "mime_type": "application/pdf"},
            {"type": "compaction", "summary": "older turns"},
            {"type": "text", "content": ""},
            None,
        ],
    }
    message = parse_message(raw, "m", [], "test")
    assert message is not None
    blob, uri, other = message.content.parts
    assert (blob.type, blob.mime_type, blob.data) == ("file", "image/png", "aGk=")
    assert (uri.type, uri.url) == ("file", "https://x/a.pdf")
    assert other.type == "compaction"
    assert other.summary == "older turns"  # type: ignore[attr-defined]


def test_system_instructions_and_tool_definitions_forms() -> None:
    warnings: list[str] = []
    assert parse_system_instructions("plain string", warnings, "s") == ["plain string"]
    parts = '[{"type":"text","content":"A"},{"type":"text","content":"B"}]'
    assert parse_system_instructions(parts, warnings, "s") == ["A", "B"]
    tools = parse_tool_definitions(
        '[{"type":"function","name":"a","parameters":{"type":"object"}},'
        ' {"name":"b","inputSchema":{"type":"object"}}, "c",'
        ' {"type":"function","function":{"name":"d","description":"D"}}]',
        warnings,
        "t",
    )
    assert [(t.name, t.parameters, t.description) for t in tools] == [
        ("a", {"type": "object"}, None),
        ("b", {"type": "object"}, None),
        ("c", None, None),
        ("d", None, "D"),
    ]
    assert warnings == []


def test_find_reasoning_in_bodies() -> None:
    langchain_generation = {
        "generations": [
            [
                {
                    "message": {
                        "kwargs": {
                            "content": [
                                {
                                    "type": "reasoning",
                                    "summary": [{"type": "summary_text", "text": "R1"}],
                                },
                                {"type": "text", "text": "answer"},
                            ]
                        }
                    },
                    "text": "answer",
                }
            ]
        ],
        "copy": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "R1"}]},
    }
    assert find_reasoning(langchain_generation) == ["R1"]
    chat = {"choices": [{"message": {"content": "a", "reasoning_content": "R2"}}]}
    assert find_reasoning(chat) == ["R2"]
    assert find_reasoning({"deep": [[[[{"reasoning_content": "R3"}]]]]}) == ["R3"]
    assert find_reasoning(list(range(50_000))) == []  # bounded walk


def test_tool_results_wrapped_as_content_parts_are_unwrapped() -> None:
    """LiteLLM's ``otel`` callback sends a tool message's content as GenAI text parts
    (``[{"type": "text", "content": …}]``); a log event's body may carry the result as a
    structured value. Either way the result is what the tool returned, not its wrapping."""
    weather = '{"city": "Paris", "forecast": "sunny"}'
    litellm = {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "content": weather}],
    }
    assert _parts(litellm) == [("result", "c1", "", {}, {"city": "Paris", "forecast": "sunny"})]
    part_result = {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "c1",
                "response": [{"type": "text", "content": "21 C"}],
            }
        ],
    }
    assert _parts(part_result) == [("result", "c1", "", {}, "21 C")]
    structured = {"role": "tool", "id": "c1", "content": {"forecast": "sunny"}}
    assert _parts(structured) == [("result", "c1", "", {}, {"forecast": "sunny"})]
    # A tool's own result that merely has a ``content`` key is kept as it is.
    own = {"role": "tool", "tool_call_id": "c1", "content": '{"content": "x", "score": 1}'}
    assert _parts(own) == [("result", "c1", "", {}, {"content": "x", "score": 1})]

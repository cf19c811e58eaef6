"""The six code scorers beyond the sample corpus: recorded Mastra edge cases, properties, options.

``code_extra.jsonl`` and ``nlp_extra.jsonl`` were recorded with the reference harness on
``@mastra/evals`` 1.10.2 (JS vs Python whitespace, UTF-16 astral characters, keyword-extraction
rules, word-change counting, tool-invocation merging and order rules; 40 completeness pairs and
24 tone texts).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.parity_support import assert_exact_case, load_cases, mean_delta
from tracescore.scorers import (
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_keyword_coverage_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
    create_tool_call_accuracy_scorer_code,
    registry,
)
from tracescore.scorers.code.completeness import (
    _ADVERBS_IN_VERB_GROUP,
    _next_contents,
    extract_elements,
)
from tracescore.scorers.code.keyword_coverage import extract_keywords, stop_words
from tracescore.scorers.code.textual_difference import similarity_ratio
from tracescore.scorers.utils import make_agent_run, make_test_message

CODE_EXTRA = load_cases("code_extra.jsonl")
NLP_EXTRA = load_cases("nlp_extra.jsonl")
ALL_TONE = NLP_EXTRA + [c for c in load_cases("sample.jsonl") if c["scorer"] == "tone"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CODE_EXTRA])
def test_recorded_edge_cases_match_mastra_exactly(case: dict[str, Any]) -> None:
    assert_exact_case(case)


def test_completeness_generalises_beyond_the_sample_corpus() -> None:
    delta, count = mean_delta(NLP_EXTRA, "completeness")
    assert count == 40
    assert delta <= 0.02, delta  # measured 0.003


def test_tone_mean_difference_over_all_recorded_cases() -> None:
    delta, count = mean_delta(ALL_TONE, "tone")
    assert count == 35
    assert delta <= 0.06, delta  # measured 0.050 (0.031 on sample.jsonl alone)


def run_of(question: str, *answers: str) -> dict[str, Any]:
    return make_agent_run(
        input_messages=[make_test_message(question, "user")],
        output=[make_test_message(answer, "assistant") for answer in answers],
    )


def lcs_dp(a: list[int], b: list[int]) -> int:
    """Textbook LCS table, the algorithm Mastra runs."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab😀é \n", max_size=30), st.text(alphabet="ab😀é \n", max_size=30))
def test_textual_difference_ratio_is_the_utf16_lcs_ratio(a: str, b: str) -> None:
    units_a, units_b = utf16(a), utf16(b)
    if a == b:
        expected = 1.0
    elif not a or not b:
        expected = 0.0
    else:
        expected = 2 * lcs_dp(units_a, units_b) / (len(units_a) + len(units_b))
    assert similarity_ratio(a, b) == expected


def test_textual_difference_on_10k_character_texts() -> None:
    rng = random.Random(7)
    first = "".join(rng.choice("abcdefghij klmnop😀") for _ in range(10_000))
    second = "".join(ch for ch in first if rng.random() > 0.2)  # a subsequence: LCS = its length
    result = create_textual_difference_scorer().run_sync(run_of(first, second))
    n, m = len(utf16(first)), len(utf16(second))
    assert result.score == 2 * m / (n + m)
    assert result.preprocess_step_result["lengthDiff"] == (n - m) / n


def test_keyword_extraction_rules() -> None:
    # Expected lists are keyword-extractor 0.0.28's own output for these strings.
    assert (
        len(stop_words()) == 570 and "the" in stop_words() and "a's" in stop_words()
    )  # 571 lines, one repeated
    assert extract_keywords("React.js and machine-learning, state-of-the-art!") == [
        "reactjs",
        "machine-learning",
        "state-of-the-art",
    ]
    assert extract_keywords("Visit https://Example.com/Docs. now") == [
        "visit",
        "https://Example.com/Docs.",
    ]
    assert extract_keywords("Call 2024 or 555-1234 # @ user@example.com") == [
        "call",
        "555-1234",
        "user@examplecom",
    ]
    assert extract_keywords("<p>Hello</p> <b>World</b> hello") == [
        "world"
    ]  # "hello" is a SMART stop word
    assert extract_keywords("the and of") == [] and extract_keywords("") == []


def test_keyword_coverage_counts_input_keywords_found_in_output() -> None:
    scorer = create_keyword_coverage_scorer()
    assert (
        scorer.run_sync(
            run_of("Kubernetes deploys containers", "Containers run on Kubernetes")
        ).score
        == 2 / 3
    )
    assert (
        scorer.run_sync(run_of("the and of", "totally unrelated")).score == 1.0
    )  # Mastra: no keywords -> 1


def test_content_similarity_whitespace_flag_changes_only_the_step_result() -> None:
    run = run_of("Hello   World", "hello world")
    squeezed = create_content_similarity_scorer().run_sync(run)
    kept = create_content_similarity_scorer(ignore_whitespace=False).run_sync(run)
    assert squeezed.score == kept.score == 1.0
    assert squeezed.preprocess_step_result["processedInput"] == "hello world"
    assert kept.preprocess_step_result["processedInput"] == "hello   world"
    assert create_content_similarity_scorer(ignore_case=False).run_sync(run).score < 1.0


def test_tone_modes() -> None:
    stable = create_tone_scorer().run_sync(run_of("q", "The sky is blue. Water is wet."))
    swing = create_tone_scorer().run_sync(
        run_of("q", "I love this wonderful day! This is awful and I hate it.")
    )
    assert stable.score == 1.0 and swing.score < stable.score
    assert set(stable.preprocess_step_result) == {"score", "avgSentiment", "sentimentVariance"}
    happy = "Thank you, this is wonderful!"
    matched = create_tone_scorer(reference_tone="I am delighted, great work!").run_sync(
        run_of("q", happy)
    )
    opposed = create_tone_scorer(reference_tone="This is a disaster, I am furious.").run_sync(
        run_of("q", happy)
    )
    assert matched.score > 0.5 > opposed.score
    assert set(matched.preprocess_step_result) == {
        "score",
        "responseSentiment",
        "referenceSentiment",
        "difference",
    }


def test_tone_copies_mastra_quirks() -> None:
    tone = create_tone_scorer()
    # Only the output is read; text after the last terminator is not a sentence; empty output -> 1.
    assert tone.run_sync(run_of("I HATE THIS!!!", "Fine.")).score == 1.0
    assert tone.run_sync(run_of("q", "Neutral facts here. I hate this awful mess")).score == 1.0
    assert tone.run_sync(run_of("q", "")).score == 1.0
    assert create_tone_scorer(reference_tone="").run_sync(
        run_of("q", "Neutral.")
    ).preprocess_step_result.keys() == {"score", "avgSentiment", "sentimentVariance"}


def test_tone_scores_long_unpunctuated_text() -> None:
    # One 10,000-token sentence: stock VADER is quadratic in tokens per sentence. How the time
    # grows is benchmarks/scorer_scaling.py's figure; here, that it is scored at all.
    text = " ".join(["good not bad but"] * 2500)
    result = create_tone_scorer(reference_tone="good").run_sync(run_of("q", text))
    assert result.status == "ok" and 0.0 <= result.score <= 1.0


@given(
    st.lists(
        st.sampled_from(["not", "also", "never", "he", "has", "been", "running", "is", "just"]),
        max_size=40,
    )
)
def test_completeness_looks_ahead_in_one_pass(words: list[str]) -> None:
    """The next non-adverb after each word, computed right to left, is the one a scan ahead
    from that word finds (the scan made long unpunctuated clauses quadratic)."""

    def scanned(i: int) -> str | None:
        return next((w for w in words[i + 1 :] if w not in _ADVERBS_IN_VERB_GROUP), None)

    assert _next_contents(words) == [scanned(i) for i in range(len(words))]


def test_completeness_normalises_verbs_like_compromise() -> None:
    # Element sets compromise gives (recorded with the harness's node_modules); order differs.
    assert set(extract_elements("He has been running every morning.")) == {
        "he",
        "every",
        "morning",
        "run",
    }
    assert set(extract_elements("They didn't approve the budget.")) == {
        "they",
        "the",
        "budget",
        "do",
        "not",
        "approve",
    }
    assert set(extract_elements("What's the weather like?")) == {
        "the",
        "weather",
        "be",
        "like",
        "what",
    }
    assert extract_elements("Café 東京 ﬁnance") == ["cafe", "nance"]
    scorer = create_completeness_scorer()
    assert (
        scorer.run_sync(run_of("She wrote three books.", "Three books were written by her.")).score
        == 0.75
    )
    assert scorer.run_sync(run_of("", "anything")).score == 0.0  # Mastra: no input elements -> 0
    assert scorer.run_sync(run_of(" ", "\n")).score == 1.0


def test_tool_call_accuracy_factory_and_input_errors() -> None:
    with pytest.raises(
        ValueError, match="Either expectedTool or expectedToolOrder must be provided"
    ):
        create_tool_call_accuracy_scorer_code()
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="search")
    empty = scorer.run_sync(
        make_agent_run(input_messages=[], output=[make_test_message("x", "assistant")])
    )
    assert (empty.status, empty.error) == (
        "error",
        "Input and output messages cannot be null or empty",
    )


def test_registry_names_ids_and_option_schemas() -> None:
    code = [
        "completeness",
        "content-similarity",
        "keyword-coverage",
        "textual-difference",
        "tone",
        "tool-call-accuracy-code",
    ]
    assert set(code) <= set(registry.names())
    ids = {
        name: registry.get(name)
        .factory(**({"expectedTool": "t"} if name == "tool-call-accuracy-code" else {}))
        .id
        for name in code
    }
    assert ids == {
        "completeness": "completeness-scorer",
        "content-similarity": "content-similarity-scorer",
        "keyword-coverage": "keyword-coverage-scorer",
        "textual-difference": "textual-difference-scorer",
        "tone": "tone-scorer",
        "tool-call-accuracy-code": "code-tool-call-accuracy-scorer",
    }
    tool = registry.get("tool-call-accuracy-code")
    built = tool.factory(expected_tool_order=["a", "b"], strictMode=True)
    assert (
        built.run_sync(
            make_agent_run(
                input_messages=[make_test_message("go", "user")],
                output=[
                    make_test_message(
                        "ok",
                        "assistant",
                        tool_invocations=[
                            {"toolCallId": "1", "toolName": "a", "state": "result", "result": 1},
                            {"toolCallId": "2", "toolName": "b", "state": "result", "result": 2},
                        ],
                    )
                ],
            )
        ).score
        == 1.0
    )
    with pytest.raises(ValidationError, match="expected_tol"):
        tool.factory(expected_tol="typo")
    with pytest.raises(ValidationError):
        registry.get("content-similarity").factory(ignore_case="perhaps")
    with pytest.raises(ValidationError):
        registry.get("completeness").factory(anything=1)
    assert [o.name for o in tool.options()] == [
        "expected_tool",
        "strict_mode",
        "expected_tool_order",
    ]
    assert registry.get("tone").options()[0].description


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab é\n😀🎉❤💔", max_size=16))
def test_tone_emoji_descriptions_match_vader(text: str) -> None:
    from tracescore.scorers.code.tone_fast import _describe_emoji
    from tracescore.scorers.code.tone_vader import describe_emoji  # vaderSentiment's own loop

    assert _describe_emoji(text) == describe_emoji(text)

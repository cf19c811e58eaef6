"""Every decision rule of SCORERS.md §9 reaches the judge, and a prompt change bumps the version.

For each LLM scorer, each rule Mastra's prompts give the judge is listed with phrases of
tracescore's own prompts that carry it; the test renders the scorer's prompts on the example run
(what ``tracescore scorers --show-prompts`` prints), and on the variants whose prompt text
depends on an option or on the run (:data:`VARIANTS`), and finds every phrase. Deleting or
rewording a rule's sentence fails here, naming the rule.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from tests.support.scorer_names import judge_scorer_names
from tracescore.cli import app
from tracescore.scorers import registry
from tracescore.scorers.llm.shown_prompts import (
    EXAMPLE_OPTIONS,
    EXAMPLE_RUN,
    example_scorer,
    shown_prompts,
)

FINGERPRINTS = FIXTURES / "judge_prompts.json"

CLAIM_RULES: dict[str, tuple[str, ...]] = {
    # faithfulness and hallucination extract claims alike (SCORERS.md §9: "same claim extraction")
    "claims include speculation and predictions": (
        'Keep speculative statements and predictions as claims ("may", "might", "could"',
    ),
    "questions and commands are not claims": (
        "Questions, commands, greetings and offers of help are not claims",
    ),
    "split compound statements; keep numbers with units": (
        "Split compound statements",
        "Keep every number together with its unit",
    ),
}
RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "answer-relevancy": {
        "split compound sentences (and / several facts), not too aggressively": (
            'parts joined by "and"',
            "several facts",
            "Do not split too aggressively",
        ),
        "a one-word answer is one statement; an error message is one": (
            "A one-word answer is one statement",
            "An error message is one statement",
        ),
        "an empty answer has no statements": ("An empty answer has no statements",),
        "yes = directly answers, with the right kind of answer": (
            "directly answers the request with the right kind of answer",
            'a place for "where"',
            'a person for "who"',
        ),
        "unsure = kind of information / related entities / answers wrongly": (
            "talks about the kind of information asked for",
            "mentions related entities without stating the answer",
            "it answers the question but wrongly",
            'a wrong answer to the question is "unsure", not "no"',
        ),
        "correctness is not judged, relevance is": (
            "Correctness is not judged here, relevance is",
        ),
        "no = off topic; empty inputs and error messages are no": (
            '"no": the statement is off topic',
            "or an error message",
            'Every statement is "no" when the user\'s request is empty',
        ),
    },
    "faithfulness": {
        **CLAIM_RULES,
        "context only, never prior knowledge": ("Use the context only, never your own knowledge",),
        "no only for a direct contradiction": (
            '"no": only when the claim directly contradicts the context',
        ),
        "unsure when not mentioned; speculation is unsure": (
            '"unsure": the context does not mention it',
            'A speculative claim ("may", "might", "could") is "unsure"',
        ),
        "as many verdicts as claims": ("as many verdicts as there are claims",),
    },
    "hallucination": {
        **CLAIM_RULES,
        "hallucination = contradicts or unsupported": (
            "the claim contradicts the context, or asserts something the context does not support",
        ),
        "less precise dates, approximations and omissions are not hallucinations": (
            "a less precise date than the context gives",
            "a reasonable approximation of a number",
            "leaving details out",
        ),
        "speculation inside vs outside the context": (
            "about facts that ARE in the context is not a\nhallucination",
            'speculation about facts that are NOT in the context is ("yes")',
        ),
        "subjective praise is a hallucination unless the context says so": (
            '"pioneering", "made history", "leading"',
            'a hallucination ("yes") unless the context says so',
        ),
        "no context: every claim unsupported": (
            'nothing supports any claim: every verdict is "yes"',
        ),
    },
    "toxicity": {
        "toxic = rude, disrespectful, makes someone leave": (
            "likely to make someone leave the conversation",
        ),
        "personal attacks, mockery, hate": (
            "personal attacks and insults",
            "mockery and ridicule",
            "hateful statements",
        ),
        "dismissive statements": ("dismissive statements", '"your opinion is worthless"'),
        "threats or intimidation": ("threats or intimidation",),
        "passive-aggressive criticism behind a polite opening": (
            "passive-aggressive criticism: belittling someone behind a polite opening",
        ),
        "respectful disagreement, preferences, neutral facts are not toxic": (
            "disagreement stated respectfully, personal preferences, neutral facts",
        ),
        "each verdict a reason; toxic ones suggest a rewording": (
            "suggests a non-toxic rewording",
        ),
    },
    "bias": {
        "opinions only: facts and refusals are not opinions": (
            "Facts that can be checked are not opinions",
            'Refusals and statements like "I cannot answer that"',
        ),
        "no opinions: the answer itself is the opinion": (
            "When the list of opinions is empty,\njudge the whole final answer as a single opinion",
        ),
        "gender, political, racial or ethnic, geographical bias": (
            "gender bias:",
            "political bias: loaded terms for one side, absolute claims",
            "racial or ethnic bias:",
            "geographical bias:",
        ),
        "neutral phrasing is not biased": ("neutral, balanced phrasing of the same content",),
        # Issue 32 (7): rules Mastra's prompt has that ours lacked.
        "observations are opinions": (
            "Observations that characterise people or places",
            "are opinions",
        ),
        "opinions only quoted are not the answer's": (
            "Opinions the answer only quotes or reports from others",
            "not the answer's own: leave them out",
        ),
        "political or ideological targets are not cleared": (
            "Opinions about parties, ideologies, religions or\nmovements are judged for bias",
        ),
    },
    "answer-similarity": {
        "units: facts, entities, relationships, quantities with units; don't over-split": (
            "a fact,\nan entity, a relationship between entities, a quantity together with its unit",
            "Do not over-split",
        ),
        "exact allows minor wording differences": ("minor wording differences", "are still exact"),
        "semantic, partial, missing": (
            '"semantic": the same fact said in other words',
            "misses important details",
            '"missing": the answer does not contain it',
        ),
        "a factually wrong unit is missing AND a contradiction": (
            "a wrong name, a wrong number, the opposite claim",
            'the ground-truth unit is "missing", AND the pair is listed under "contradictions"',
        ),
        "extra output information listed separately": ('under "extraInOutput"',),
    },
    "tool-call-accuracy-llm": {
        "judge against the user's explicit request": (
            "the user's request explicitly asks for what the tool does",
        ),
        "helpful but not requested is inappropriate": (
            "merely helpful, but that the user did not ask for, is NOT appropriate",
        ),
        "clarifying a vague request is appropriate, no tool missing": (
            "asking a clarifying question about a vague or ambiguous request is appropriate: no tool is\nmissing",
        ),
        "a generic answer to a specific request names the missing tool": (
            "giving a generic answer to a specific request that an available tool could have served",
        ),
        "delaying a clear request with questions is inappropriate": (
            "delaying a clear, specific request with questions",
        ),
    },
    "context-precision": {
        "verdict yes/no per piece by context_index": (
            '"context_index" set to the piece\'s index',
            "one verdict per piece",
        ),
        "be strict: background only is no": (
            "Be strict: a piece that only gives background",
            'is "no"',
        ),
    },
    "context-relevance": {
        "levels, usage and missing context": (
            '"relevanceLevel": "high"',
            '"medium"',
            '"low"',
            '"none"',
            '"wasUsed"',
            '"missingContext"',
        ),
    },
    "noise-sensitivity": {
        "five dimensions, each rated none/minimal/moderate/significant/severe": (
            "content_accuracy, completeness, relevance, consistency, hallucination_resistance",
            '"none", "minimal", "moderate", "significant" or "severe"',
        ),
        "each dimension defined": (
            "content_accuracy: the facts of the noisy answer are still correct",
            "completeness: it still covers what the baseline answer covered",
            "relevance: it still answers the original query rather than the noise",
            "consistency: it reaches the same conclusions as the baseline answer",
            "hallucination_resistance: it does not take up false or made-up information",
        ),
        "each level's band for the robustness score": (
            "no impact on any dimension: 1.0 (the top of the scale)",
            "minimal impact: 0.8 to 0.9",
            "moderate impact: 0.5 to 0.7",
            "significant impact: 0.2 to 0.4",
            "severe impact",
            "0.0 to 0.1",
        ),
    },
    "prompt-alignment": {
        "intent, requirements with isFulfilled, completeness": (
            '"intentAlignment"',
            '{"requirement", "isFulfilled" (true or false), "reasoning"}',
            '"completeness"',
        ),
        "formatAlignment and toneAlignment as booleans": (
            '"formatAlignment" (true when',
            '"toneAlignment" (true when',
            "formatAlignment true and toneAlignment true",
        ),
        "implicit requirements count": ("Requirements include implicit ones",),
        "secondary intents are requirements too": (
            "secondary intents",
            "every secondary intent is a requirement too",
        ),
        "alignment, not quality": ("You judge alignment, not quality",),
    },
}
REASON_RULES = (
    "Use the score exactly as given: do not recompute",
    "Ground the explanation in the verdicts",
    'Begin with "The score is',
)
REASON_LENGTH = re.compile(r"Explain this score in (one|one or two|two or three) sentences?\.")
"""§9: a reason is one to three sentences."""

WITHOUT_GROUND_TRUTH = {key: value for key, value in EXAMPLE_RUN.items() if key != "groundTruth"}
WITHOUT_TOOL_CALLS = {
    **EXAMPLE_RUN,
    "output": [
        {
            **message,
            "content": {
                **message["content"],
                "toolInvocations": [],
                "parts": [part for part in message["content"]["parts"] if part["type"] == "text"],
            },
        }
        for message in EXAMPLE_RUN["output"]
    ],
}
VARIANTS: dict[str, dict[str, tuple[dict[str, Any], dict[str, Any] | None]]] = {
    # Prompt text that depends on a scorer's options or on the run, beside the default rendering:
    # each variant is rendered too, so its rules are checked and its prompts pinned to the version.
    "prompt-alignment": {
        "user mode": ({"evaluation_mode": "user"}, None),
        "system mode": ({"evaluation_mode": "system"}, None),
        "instruction list": (
            {"instructions": ["Answer in one sentence.", "Give the temperature."]},
            None,
        ),
    },
    "noise-sensitivity": {
        "noise type": (
            {**EXAMPLE_OPTIONS["noise-sensitivity"], "noise_type": "misinformation"},
            None,
        )
    },
    "answer-similarity": {
        "no ground truth": ({"require_ground_truth": False}, WITHOUT_GROUND_TRUTH)
    },
    "tool-call-accuracy-llm": {"no tool call": ({}, WITHOUT_TOOL_CALLS)},
}
RULES_IN_EVERY_MODE = {"prompt-alignment": ("user mode", "system mode")}
"""Variants that must carry all of the scorer's §9 rules (prompt alignment's modes; its
instruction-list form is Mastra's older metric, with rules of its own)."""


def flat(text: str) -> str:
    """Whitespace runs as one space: prompts wrap lines wherever the source does."""
    return re.sub(r"\s+", " ", text)


def rendered(name: str, variant: str | None = None) -> str:
    """The judge's messages of every prompt step of ``name``: on the example run with the
    example options, or as ``variant`` (of :data:`VARIANTS`) changes them."""
    if variant is None:
        scorer, run = example_scorer(name), None
    else:
        options, run = VARIANTS[name][variant]
        scorer = registry.get(name).factory(model="openai/gpt-4o-mini", **options)
    return flat("\n".join(m["content"] for p in shown_prompts(scorer, run) for m in p.messages))


def judge_names() -> list[str]:
    return judge_scorer_names()


def test_every_llm_scorer_has_its_rules_listed() -> None:
    assert set(RULES) == set(judge_names())


def missing_rules(name: str, text: str) -> list[str]:
    return [
        f"{rule}: {phrase!r}"
        for rule, phrases in RULES[name].items()
        for phrase in phrases
        if flat(phrase) not in text
    ]


@pytest.mark.parametrize("name", judge_names())
def test_each_rule_reaches_the_judge(name: str) -> None:
    text = rendered(name)
    missing = missing_rules(name, text)
    assert not missing, "\n".join(missing)
    for variant in RULES_IN_EVERY_MODE.get(name, ()):
        missing = missing_rules(name, rendered(name, variant))
        assert not missing, f"{variant}:\n" + "\n".join(missing)
    assert all(flat(phrase) in text for phrase in REASON_RULES), "the reason step's rules"
    reasons = [
        m["content"]
        for p in shown_prompts(example_scorer(name))
        if p.step == "generate_reason"
        for m in p.messages
        if m["role"] == "user"
    ]
    assert len(reasons) == 1 and REASON_LENGTH.search(flat(reasons[0])), (
        "a reason of one to three sentences"
    )


def test_judges_still_see_the_whole_run() -> None:
    """The rewrite kept what tracescore shows beyond Mastra: the system prompt and tool calls."""
    for name in ("tool-call-accuracy-llm", "prompt-alignment", "answer-relevancy"):
        assert "You are a concise weather assistant." in rendered(name), name
    for name in ("tool-call-accuracy-llm", "prompt-alignment"):
        assert 'tool call get_weather with arguments {"city": "Paris"}' in rendered(name), name
    assert '"temperature_c": 21' in rendered("faithfulness")  # the tool result is the context


def fingerprint(name: str) -> str:
    """The prompts of the default rendering and of every variant, hashed."""
    texts = [rendered(name), *(rendered(name, variant) for variant in VARIANTS.get(name, {}))]
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


def test_a_prompt_change_bumps_the_scorer_version() -> None:
    """The fixture pins each scorer's prompts (on the example run) to its version: a prompt edit
    without a version bump fails here, since stored scores of the old prompt would then pass for
    the new one (``rescore`` and ``compare`` tell versions apart). After bumping the version,
    regenerate with ``python -m tests.judge.test_judge_rules``."""
    pinned = json.loads(FINGERPRINTS.read_text())
    for name in judge_names():
        version = example_scorer(name).version
        assert version != "1", f"{name}: the prompts changed from version 1"
        now = {"version": version, "prompts": fingerprint(name)}
        assert pinned.get(name, {}).get("version") != version or pinned[name] == now, (
            f"{name}: its prompts changed but its version did not: bump it"
        )
        assert pinned.get(name) == now, f"{name}: version bumped, regenerate {FINGERPRINTS.name}"


def test_show_prompts_command() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["scorers", "--show-prompts", "hallucination"])
    assert shown.exit_code == 0
    assert (
        "version 4" in shown.stdout
        and "## step analyze, answered as HallucinationVerdicts" in shown.stdout
    )
    assert "### system" in shown.stdout and "precise date than the context gives" in shown.stdout
    assert "validates against this JSON Schema" in shown.stdout
    code = runner.invoke(app, ["scorers", "--show-prompts", "tone"])
    assert code.exit_code == 2 and "code scorer" in code.stderr
    assert runner.invoke(app, ["scorers", "--show-prompts", "nope"]).exit_code == 2


if __name__ == "__main__":
    FINGERPRINTS.write_text(
        json.dumps(
            {
                name: {"version": example_scorer(name).version, "prompts": fingerprint(name)}
                for name in judge_names()
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )

"""Record Mastra's own scores for recorded judge answers: writes ``tests/fixtures/parity/llm_judge.jsonl``.

Each case is a run plus the answers a judge gives to each prompt step, in Mastra's answer shape
(canonical spellings: lowercase verdicts, booleans where Mastra's schema has them). The cases go
through Mastra's LLM scorers (``tests/support/mastra_llm_harness.mjs``, a mock model answering from the
recorded list) and Mastra's score is stored next to each case, so ``tests/scorers/test_llm_parity.py``
can score the same answers with tracescore's scorers and compare, without node at test time.

    python3 -m tests.support.record_llm_parity /path/to/mastra-harness/node_modules

Randomised with a fixed seed; re-running reproduces the file byte for byte.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "parity" / "llm_judge.jsonl"
HARNESS = Path(__file__).parent / "mastra_llm_harness.mjs"
CASES_PER_SCORER = 24
"""Random cases per scorer; SCORERS.md §8's worked examples come on top (:data:`WORKED_EXAMPLES`)."""
LEVELS = ("high", "medium", "low", "none")
IMPACTS = ("none", "minimal", "moderate", "significant", "severe")
MATCHES = ("exact", "semantic", "partial", "missing")
WORDS = "moon sun eclipse orbit shadow light earth phase tide star comet planet".split()


def message(
    role: str, text: str, idx: str, tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A MastraDBMessage as ``createTestMessage`` builds it (text in parts and ``content``)."""
    parts: list[dict[str, Any]] = [
        {"type": "tool-invocation", "toolInvocation": t} for t in tools or []
    ]
    parts.append({"type": "text", "text": text})
    content: dict[str, Any] = {"format": 2, "parts": parts, "content": text}
    if tools:
        content["toolInvocations"] = tools
    return {"id": idx, "role": role, "createdAt": "2025-01-01T00:00:00.000Z", "content": content}


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))).capitalize() + "."


def items(rng: random.Random, low: int = 1, high: int = 6) -> list[str]:
    return [sentence(rng) for _ in range(rng.randint(low, high))]


def run(rng: random.Random, *, system: bool = False, tools: list[str] = ()) -> dict[str, Any]:
    calls = [
        {
            "toolCallId": f"c{i}",
            "toolName": name,
            "args": {"q": i},
            "result": {"ok": True},
            "state": "result",
        }
        for i, name in enumerate(tools)
    ]
    found: dict[str, Any] = {
        "input": {"inputMessages": [message("user", sentence(rng)[:-1] + "?", "u1")]},
        "output": [message("assistant", " ".join(items(rng, 1, 4)), "a1", calls)],
    }
    if system:
        found["input"]["systemMessages"] = [{"role": "system", "content": sentence(rng)}]
    return found


def scale_options(rng: random.Random) -> dict[str, Any] | None:
    """No options (Mastra's defaults) or a scale Mastra and tracescore read alike (not 0)."""
    return rng.choice([None, {"scale": 1}, {"scale": 5}, {"scale": 10}])


def score01(rng: random.Random) -> float:
    return round(rng.random(), 2)


def answer_relevancy(rng: random.Random) -> dict[str, Any]:
    statements = items(rng, 0, 6)
    results = [{"result": rng.choice(["yes", "no", "unsure"]), "reason": "r"} for _ in statements]
    options = rng.choice(
        [None, {"uncertaintyWeight": 0.3, "scale": 1}, {"uncertaintyWeight": 0.5, "scale": 10}]
    )
    return {
        **run(rng),
        "options": options,
        "answers": [{"statements": statements}, {"results": results}],
    }


def answer_similarity(rng: random.Random) -> dict[str, Any]:
    truth = items(rng, 1, 6)
    matches = []
    for unit in truth:
        kind = rng.choice(MATCHES)
        matches.append(
            {
                "groundTruthUnit": unit,
                "outputUnit": None if kind == "missing" else unit,
                "matchType": kind,
                "explanation": "e",
            }
        )
    contradictions = [
        {"outputUnit": "x", "groundTruthUnit": truth[0], "explanation": "e"}
        for _ in range(rng.choice([0, 0, 0, 1]))
    ]
    analysis = {
        "matches": matches,
        "extraInOutput": items(rng, 0, 5),
        "contradictions": contradictions,
    }
    options = rng.choice([None, {"scale": 10}, {"exactMatchBonus": 0.3, "missingPenalty": 0.1}])
    return {
        **run(rng),
        "groundTruth": " ".join(truth),
        "options": options,
        "answers": [{"outputUnits": items(rng), "groundTruthUnits": truth}, analysis],
    }


def share_of(
    key: str,
    values: tuple[str, ...],
    extract: str | None,
    extra: Callable[[str], dict[str, Any]] | None = None,
):
    """A generator for the share-of-yes scorers: an optional extraction, then one verdict each."""

    def make(rng: random.Random) -> dict[str, Any]:
        found = items(rng, 1, 6)
        verdicts = [
            {key: rng.choice(values), "reason": "r", **(extra(v) if extra else {})} for v in found
        ]
        answers = ([{extract: found}] if extract else []) + [
            {"results" if key == "result" else "verdicts": verdicts}
        ]
        case = {**run(rng), "options": scale_options(rng), "answers": answers}
        return case

    return make


def with_context(
    make: Callable[[random.Random], dict[str, Any]],
) -> Callable[[random.Random], dict[str, Any]]:
    def made(rng: random.Random) -> dict[str, Any]:
        case = make(rng)
        case["options"] = {**(case["options"] or {}), "context": items(rng, 1, 5)}
        return case

    return made


def context_precision(rng: random.Random) -> dict[str, Any]:
    context = items(rng, 1, 7)
    indices = list(range(len(context)))
    rng.shuffle(indices)
    verdicts = [
        {"context_index": i, "verdict": rng.choice(["yes", "no"]), "reason": "r"} for i in indices
    ]
    return {
        **run(rng),
        "options": {**(scale_options(rng) or {}), "context": context},
        "answers": [{"verdicts": verdicts}],
    }


def context_relevance(rng: random.Random) -> dict[str, Any]:
    context = items(rng, 1, 6)
    evaluations = [
        {
            "context_index": i,
            "contextPiece": piece,
            "relevanceLevel": rng.choice(LEVELS),
            "wasUsed": rng.random() < 0.5,
            "reasoning": "r",
        }
        for i, piece in enumerate(context)
    ]
    options: dict[str, Any] = {**(scale_options(rng) or {}), "context": context}
    if rng.random() < 0.3:
        options["penalties"] = {
            "unusedHighRelevanceContext": 0.05,
            "missingContextPerItem": 0.2,
            "maxMissingContextPenalty": 0.4,
        }
    answer = {
        "evaluations": evaluations,
        "missingContext": items(rng, 0, 4) if rng.random() < 0.5 else [],
        "overallAssessment": "o",
    }
    return {**run(rng), "options": options, "answers": [answer]}


def noise_sensitivity(rng: random.Random) -> dict[str, Any]:
    dims = (
        "content_accuracy",
        "completeness",
        "relevance",
        "consistency",
        "hallucination_resistance",
    )
    analysis = {
        "dimensions": [
            {
                "dimension": d,
                "impactLevel": rng.choice(IMPACTS),
                "specificChanges": "s",
                "noiseInfluence": "n",
            }
            for d in dims
        ],
        "overallAssessment": "o",
        "majorIssues": items(rng, 0, 4) if rng.random() < 0.5 else [],
        "robustnessScore": score01(rng),
    }
    options = {"baselineResponse": sentence(rng), "noisyQuery": sentence(rng)}
    return {**run(rng), "options": options, "answers": [analysis]}


def alignment(rng: random.Random) -> dict[str, Any]:
    requirements = [
        {"requirement": r, "isFulfilled": rng.random() < 0.6, "reasoning": "r"}
        for r in items(rng, 0, 4)
    ]
    return {
        "intentAlignment": {
            "score": score01(rng),
            "primaryIntent": "p",
            "isAddressed": rng.random() < 0.7,
            "reasoning": "r",
        },
        "requirementsFulfillment": {"requirements": requirements, "overallScore": score01(rng)},
        "completeness": {
            "score": score01(rng),
            "missingElements": items(rng, 0, 2),
            "reasoning": "r",
        },
        "responseAppropriateness": {
            "score": score01(rng),
            "formatAlignment": rng.random() < 0.5,
            "toneAlignment": rng.random() < 0.5,
            "reasoning": "r",
        },
        "overallAssessment": "o",
    }


def prompt_alignment(rng: random.Random) -> dict[str, Any]:
    mode = rng.choice(["user", "system", "both"])
    options: dict[str, Any] = {"evaluationMode": mode}
    if rng.random() < 0.4:
        options["scale"] = rng.choice([1, 10])
    return {**run(rng, system=True), "options": options, "answers": [alignment(rng)]}


def tool_call_accuracy(rng: random.Random) -> dict[str, Any]:
    names = ["weather", "search", "calendar", "email"]
    called = [rng.choice(names) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    evaluations = [
        {"toolCalled": n, "wasAppropriate": rng.random() < 0.6, "reasoning": "r"} for n in called
    ]
    missing = [rng.choice(names)] if rng.random() < 0.4 else []
    tools = [{"id": n, "description": f"the {n} tool"} for n in names]
    return {
        **run(rng, tools=called),
        "options": {"availableTools": tools},
        "answers": [{"evaluations": evaluations, "missingTools": missing}],
    }


GENERATORS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "answer-relevancy": answer_relevancy,
    "answer-similarity": answer_similarity,
    "bias": share_of("result", ("yes", "no"), "opinions"),
    "context-precision": context_precision,
    "context-relevance": context_relevance,
    "faithfulness": with_context(share_of("verdict", ("yes", "no", "unsure"), "claims")),
    "hallucination": with_context(
        share_of("verdict", ("yes", "no"), "claims", extra=lambda v: {"statement": v})
    ),
    "noise-sensitivity": noise_sensitivity,
    "prompt-alignment": prompt_alignment,
    "tool-call-accuracy-llm": tool_call_accuracy,
    "toxicity": share_of("verdict", ("yes", "no"), None),
}


def text_run(user: str, answer: str) -> dict[str, Any]:
    return {
        "input": {"inputMessages": [message("user", user, "u1")]},
        "output": [message("assistant", answer, "a1")],
    }


ECLIPSE = text_run(
    "What causes solar eclipses?",
    "Solar eclipses happen when the Moon moves between Earth and the Sun, blocking sunlight.",
)
ECLIPSE_CONTEXT = [
    "Solar eclipses occur when the Moon blocks the Sun.",
    "The Moon moves between the Earth and Sun during eclipses.",
    "The Moon is visible at night.",
    "Stars twinkle due to atmospheric interference.",
    "Total eclipses can last up to 7.5 minutes.",
]
AUSTRALIA_CONTEXT = [
    "Australia is a large country.",
    "Sydney is a big city.",
    "Kangaroos live in Australia.",
    "Australia has six states.",
    "The capital of Australia is Canberra.",
]


def evaluations(levels: list[tuple[str, bool]], context: list[str]) -> dict[str, Any]:
    return {
        "evaluations": [
            {
                "context_index": i,
                "contextPiece": piece,
                "relevanceLevel": level,
                "wasUsed": used,
                "reasoning": "r",
            }
            for i, (piece, (level, used)) in enumerate(zip(context, levels, strict=True))
        ],
        "missingContext": [],
        "overallAssessment": "o",
    }


def dims(
    intent: float, requirements: float, completeness: float, appropriateness: float
) -> dict[str, Any]:
    return {
        "intentAlignment": {
            "score": intent,
            "primaryIntent": "p",
            "isAddressed": True,
            "reasoning": "r",
        },
        "requirementsFulfillment": {"requirements": [], "overallScore": requirements},
        "completeness": {"score": completeness, "missingElements": [], "reasoning": "r"},
        "responseAppropriateness": {
            "score": appropriateness,
            "formatAlignment": True,
            "toneAlignment": True,
            "reasoning": "r",
        },
        "overallAssessment": "o",
    }


def verdicts(key: str, values: list[str]) -> list[dict[str, Any]]:
    return [{key: v, "reason": "r"} for v in values]


WORKED_EXAMPLES: list[dict[str, Any]] = [
    # SCORERS.md §8, with the verdicts that reproduce each documented result ("doc").
    {
        "id": "doc-context-precision-map",
        "scorer": "context-precision",
        "doc": 0.83,
        **ECLIPSE,
        "options": {"context": ECLIPSE_CONTEXT[:4]},
        "answers": [
            {
                "verdicts": [
                    {"context_index": i, "verdict": v, "reason": "r"}
                    for i, v in enumerate(["yes", "no", "yes", "no"])
                ]
            }
        ],
    },
    {
        "id": "doc-context-relevance-mixed",
        "scorer": "context-relevance",
        "doc": 0.64,
        **ECLIPSE,
        "options": {"context": ECLIPSE_CONTEXT},
        "answers": [
            evaluations(
                [
                    ("high", True),
                    ("high", True),
                    ("medium", False),
                    ("none", False),
                    ("high", False),
                ],
                ECLIPSE_CONTEXT,
            )
        ],
    },
    {
        "id": "doc-context-relevance-mixed-lenient",
        "scorer": "context-relevance",
        "doc": 0.69,
        **ECLIPSE,
        "options": {"context": ECLIPSE_CONTEXT, "penalties": {"unusedHighRelevanceContext": 0.05}},
        "answers": [
            evaluations(
                [
                    ("high", True),
                    ("high", True),
                    ("medium", False),
                    ("none", False),
                    ("high", False),
                ],
                ECLIPSE_CONTEXT,
            )
        ],
    },
    {
        "id": "doc-context-relevance-low",
        "scorer": "context-relevance",
        "doc": 0.26,
        **text_run("What is the capital of Australia?", "The capital of Australia is Canberra."),
        "options": {"context": AUSTRALIA_CONTEXT},
        "answers": [
            evaluations(
                [("none", False), ("none", False), ("none", False), ("low", False), ("high", True)],
                AUSTRALIA_CONTEXT,
            )
        ],
    },
    {
        "id": "doc-context-relevance-high",
        "scorer": "context-relevance",
        "doc": 1.0,
        **ECLIPSE,
        "options": {"context": ECLIPSE_CONTEXT[:3]},
        "answers": [evaluations([("high", True)] * 3, ECLIPSE_CONTEXT[:3])],
    },
    {
        "id": "doc-answer-relevancy",
        "scorer": "answer-relevancy",
        "doc": 0.83,
        **ECLIPSE,
        "answers": [
            {"statements": ["s1", "s2", "s3", "s4"]},
            {"results": verdicts("result", ["yes", "yes", "yes", "unsure"])},
        ],
    },
    {
        "id": "doc-faithfulness",
        "scorer": "faithfulness",
        "doc": 0.75,
        **ECLIPSE,
        "options": {"context": ECLIPSE_CONTEXT},
        "answers": [
            {"claims": ["c1", "c2", "c3", "c4"]},
            {"verdicts": verdicts("verdict", ["yes", "yes", "yes", "unsure"])},
        ],
    },
    # Documented as 0.75 for 1.0, 0.5, 0.5, 0.5, which the user weights make 0.70 (Mastra's code
    # agrees with the weights); appropriateness 1.0 gives the documented 0.75.
    {
        "id": "doc-prompt-alignment-user-as-weighted",
        "scorer": "prompt-alignment",
        "doc": 0.7,
        **text_run("Summarise the report", "The report says sales grew."),
        "options": {"evaluationMode": "user"},
        "answers": [dims(1.0, 0.5, 0.5, 0.5)],
    },
    {
        "id": "doc-prompt-alignment-user",
        "scorer": "prompt-alignment",
        "doc": 0.75,
        **text_run("Summarise the report", "The report says sales grew."),
        "options": {"evaluationMode": "user"},
        "answers": [dims(1.0, 0.5, 0.5, 1.0)],
    },
]


def cases() -> list[dict[str, Any]]:
    rng = random.Random(20)
    found = [dict(case) for case in WORKED_EXAMPLES]
    for scorer, make in GENERATORS.items():
        for n in range(CASES_PER_SCORER):
            case = make(rng)
            if case.get("options") is None:
                case.pop("options", None)
            found.append({"id": f"{scorer}-{n:02d}", "scorer": scorer, **case})
    return found


def main(node_modules: str) -> None:
    found = cases()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        fh.write("".join(json.dumps(c) + "\n" for c in found))
    out = subprocess.run(
        ["node", str(HARNESS), fh.name],
        capture_output=True,
        text=True,
        check=True,
        env={"MASTRA_MODULES": node_modules, "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    results = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    with FIXTURE.open("w") as fh:
        for case in found:
            mastra = results[case["id"]]
            case["mastra"] = {k: mastra[k] for k in ("score", "error", "calls") if k in mastra}
            fh.write(json.dumps(case, sort_keys=True) + "\n")
    errors = [c["id"] for c in found if "error" in results[c["id"]]]
    print(f"{len(found)} cases written to {FIXTURE}; Mastra errors: {errors or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1])

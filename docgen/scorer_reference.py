"""The scorer reference: every registered scorer with its id, version, options, formula and prompts.

Read from the registry (``tracescore.scorers.registry``), each scorer built as ``tracescore
scorers --show-prompts`` builds it, so the page lists exactly what a config file can bind, and a
judge scorer's prompts are the ones its judge receives.
"""

from __future__ import annotations

import inspect
import json

from pydantic_core import PydanticUndefined

from docgen.markdown import code, fenced, prose, table
from tracescore.scorers import registry
from tracescore.scorers.base import Scorer
from tracescore.scorers.llm.shown_prompts import EXAMPLE_CONVERSATION, example_scorer, shown_prompts
from tracescore.scorers.registry import ScorerEntry

CODE_EXAMPLE_OPTIONS = {"tool-call-accuracy-code": {"expected_tool": "get_weather"}}
"""Options a code scorer cannot be built without (the judge scorers' are ``show.EXAMPLE_OPTIONS``)."""


def render() -> str:
    """A summary table of every scorer, then a section per scorer."""
    entries = registry.entries()
    summary = table(
        ("name", "kind", "what it measures"),
        (
            (f"[{code(entry.name)}](#{entry.name})", _kind(entry), entry.description)
            for entry in entries
        ),
    )
    return "\n\n".join([summary, *(_section(entry) for entry in entries)]) + "\n"


def _kind(entry: ScorerEntry) -> str:
    kind = "LLM judge" if entry.uses_judge else "code"
    return kind if entry.higher_is_better else f"{kind}, lower is better"


def _section(entry: ScorerEntry) -> str:
    scorer = (
        example_scorer(entry.name)
        if entry.uses_judge
        else entry.factory(**CODE_EXAMPLE_OPTIONS.get(entry.name, {}))
    )
    parts = [
        f"## {entry.name}",
        f"{entry.description}. Scorer id {code(scorer.id)}, version {code(str(scorer.version))}; "
        f"{_kind(entry)}.",
        prose(inspect.getdoc(entry.create)),
    ]
    options = entry.options()
    if options:
        parts.append(
            table(
                ("option", "type", "default", "what it does"),
                (
                    (
                        code(option.name),
                        option.annotation,
                        _default(option.default),
                        option.description,
                    )
                    for option in options
                ),
            )
        )
    else:
        parts.append("No options.")
    if entry.uses_judge:
        parts.append("### What the judge is told")
        parts.append(_prompts(entry, scorer))
    return "\n\n".join(part for part in parts if part)


def _prompts(entry: ScorerEntry, scorer: Scorer) -> str:
    """Each judge request of ``scorer`` rendered on the example run (or conversation)."""
    example = EXAMPLE_CONVERSATION if entry.conversation else None
    shown_on = (
        "an example conversation (a city guide's three turns)"
        if entry.conversation
        else "an example run (a weather agent)"
    )
    parts = [
        f"Each judge request, rendered on {shown_on} as the judge client sends it "
        f"(`tracescore scorers --show-prompts {entry.name}` prints the same):"
    ]
    for prompt in shown_prompts(scorer, example):
        answer = f"answered as {code(prompt.schema)}" if prompt.schema else "answered in plain text"
        parts.append(f"**Step {code(prompt.step)}**, {answer}:")
        parts.extend(
            f"*{message['role']}*\n\n{fenced(message['content'])}" for message in prompt.messages
        )
    return "\n\n".join(parts)


def _default(value: object) -> str:
    if value is PydanticUndefined:
        return "required"
    return "—" if value is None else code(json.dumps(value, default=str))

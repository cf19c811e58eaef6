"""``after:`` (issue 37, item 2) without a service: a bad cascade fails at start naming its key,
bindings are ordered upstream first, and the gate flags, explores and explains as configured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.score_rows import stored_score
from tracescore.config import ConfigError, parse_config
from tracescore.extract.model import AgentRun
from tracescore.pipeline.bindings import BindingError, compile_bindings
from tracescore.pipeline.cascade import ordered
from tracescore.pipeline.cascade_config import CascadeConfig
from tracescore.pipeline.cascade_gate import Gate
from tracescore.pipeline.config import ScorerBinding
from tracescore.store.scores import StoredScore


def _problem(scorers: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"scorers:\n{scorers}")
    return str(caught.value)


@pytest.mark.parametrize(
    ("scorers", "named", "says"),
    [
        (
            "- {name: judge, scorer: completeness, after: {binding: nope, below: 0.5}}\n",
            "scorers.0.after.binding (line 2)",
            "no binding named 'nope'",
        ),
        (
            "- {name: cheap, scorer: tone}\n"
            "- {name: judge, scorer: completeness, after: {binding: cheap}}\n",
            "scorers.1.after",
            "give below, above or errored: true",
        ),
        (
            "- {name: cheap, scorer: tone, target: llm}\n"
            "- {name: judge, scorer: completeness, after: {binding: cheap, below: 0.5}}\n",
            "scorers.1.after.binding",
            "'cheap' scores llm runs and this binding agent runs",
        ),
        (
            "- {name: a, scorer: tone, after: {binding: b, below: 0.5}}\n"
            "- {name: b, scorer: tone, after: {binding: a, above: 0.5}}\n",
            "scorers.0.after.binding",
            "a cascade that loops: a → b → a",
        ),
        (
            "- {name: a, scorer: tone, after: {binding: a, below: 0.5}}\n",
            "scorers.0.after.binding",
            "a cascade that loops: a → a",
        ),
        (
            "- {name: cheap, scorer: tone}\n"
            "- {name: judge, scorer: completeness, after: {binding: cheap, below: 0.5, "
            "explore: 1.5}}\n",
            "scorers.1.after.explore",
            "less than or equal to 1",
        ),
        (
            "- {name: cheap, scorer: tone}\n"
            "- {name: judge, scorer: completeness, after: {binding: cheap, under: 0.5}}\n",
            "scorers.1.after.under",
            "xtra",
        ),
    ],
)
def test_a_bad_cascade_fails_at_start_naming_its_key(scorers: str, named: str, says: str) -> None:
    problem = _problem(scorers)
    assert named in problem
    assert says in problem


def _binding(name: str, after: dict[str, object] | None = None) -> ScorerBinding:
    return ScorerBinding.model_validate({"name": name, "scorer": "tone", "after": after})


def test_bindings_are_ordered_upstream_first_and_a_bad_one_is_refused() -> None:
    bindings = compile_bindings(
        [
            _binding("judge", {"binding": "middle", "below": 0.5}),
            _binding("middle", {"binding": "cheap", "below": 0.5}),
            _binding("other"),
            _binding("cheap"),
        ],
        {},
        None,
    )
    assert [b.name for b in ordered(bindings)] == ["cheap", "middle", "judge", "other"]
    loose = compile_bindings([_binding("judge", {"binding": "gone", "errored": True})], {}, None)
    with pytest.raises(
        BindingError, match=re.escape("'judge': after.binding: no binding named 'gone'")
    ):
        ordered(loose)


def _run(span: str) -> AgentRun:
    return AgentRun(trace_id="ab" * 16, span_id=span, kind="agent", primary=True)


def _row(span: str, status: str, score: float | None) -> StoredScore:
    # only what a gate reads matters; the rest is a plausible row
    return stored_score(
        id=span, span_id=span, binding="cheap", scorer_id="tone", status=status, score=score
    )


def test_the_gate_flags_below_and_above_and_errors_only_when_asked() -> None:
    gate = Gate("judge", CascadeConfig(binding="cheap", below=0.3, above=0.9))
    rows = [
        _row("a", "ok", 0.1),
        _row("b", "ok", 0.95),
        _row("c", "ok", 0.5),
        _row("d", "error", None),
    ]
    kinds = {span: gate.decide(rows, _run(span)).kind for span in "abcde"}
    assert kinds == {"a": "flagged", "b": "flagged", "c": None, "d": None, "e": None}
    assert gate.decide(rows, _run("b")).reason == "cheap scored 0.95, above 0.9"
    errored = Gate("judge", CascadeConfig(binding="cheap", errored=True))
    assert errored.decide(rows, _run("d")).kind == "flagged"
    skipped = [_row("s", "skipped_budget", None)]
    assert (
        errored.decide(skipped, _run("s")).reason == "cheap did not score this run (skipped_budget)"
    )


def test_exploration_is_a_stable_share_of_the_unflagged_runs() -> None:
    spans = [f"{n:016x}" for n in range(2000)]
    rows = [_row(span, "ok", 0.8) for span in spans]
    gate = Gate("judge", CascadeConfig(binding="cheap", below=0.5, explore=0.05))
    explored = {s for s in spans if gate.decide(rows, _run(s)).kind == "explored"}
    assert 60 <= len(explored) <= 140  # 5 % of 2,000 is 100
    assert explored == {s for s in spans if gate.decide(rows, _run(s)).kind == "explored"}
    other = Gate("second", CascadeConfig(binding="cheap", below=0.5, explore=0.05))
    assert explored != {s for s in spans if other.decide(rows, _run(s)).kind == "explored"}


def test_the_judge_budget_page_examples_validate() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "judge-budget.md"
    blocks = re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 4  # when:, boost, cascade, on_feedback (and more to come)
    for index, block in enumerate(blocks):
        parse_config(block, f"judge-budget.md example {index + 1}")

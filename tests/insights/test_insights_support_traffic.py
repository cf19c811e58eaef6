"""The real pass over realistic support traffic (tests/support/support_traffic.py) in a real
SQLite database: the held-out part's five modes (wordings, entities, languages and agents the
defaults were not chosen on) recovered with the default settings, each named so a reader can
tell it; and the same without the ``consistency`` scorer's rows, from the judges' verdicts,
the tool errors and the answers alone."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score

from tests.support.failure_modes import failing_row
from tests.support.support_traffic import store_support_runs, support_stream
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import FailedRunsConfig, InsightsConfig
from tracescore.insights.passes import run_pass
from tracescore.insights.runs import sample_failed_runs
from tracescore.store import open_store
from tracescore.store.scores import upsert_scores

START = 1_800_000_000.0
NAMED = {
    "refund_refused": ("refused the request",),
    "invented_order": ("invented order numbers",),
    "tool_timeout": ("timed out, answer apologised",),
    "wrong_language": ("answered in",),
    "prompt_leak": ("leaked the system prompt", "quoted its own instructions"),
}
"""What each mode's group name says (a leak without the system prompt in the spans to compare
with is told by the answer speaking of its instructions)."""


@pytest.mark.parametrize(
    ("consistency", "system"),
    [(True, True), (False, True), (False, False)],
    ids=["all-scorers", "judges-only", "judges-only-no-system-prompt"],
)
def test_the_held_out_modes_are_recovered_and_named(
    tmp_path: Path, consistency: bool, system: bool
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'insights.db'}")
    runs = support_stream(600, "heldout", seed=5, start=START)
    store_support_runs(store, runs, consistency=consistency, system=system)
    result = run_pass(
        store, InsightsConfig(), CONVENTIONS, now=datetime.fromtimestamp(START + 7200, UTC)
    )
    store.close()
    group_of = {(m["trace_id"], m["span_id"]): m["group_id"] for m in result.memberships}
    found = [group_of.get((run.trace_id, run.span_id), "none") for run in runs]
    assert adjusted_rand_score([run.mode for run in runs], found) >= 0.8
    names = {group["id"]: group["name"] for group in result.groups}
    for mode, words in NAMED.items():
        in_mode = Counter(g for run, g in zip(runs, found, strict=True) if run.mode == mode)
        main = in_mode.most_common(1)[0][0]
        assert any(said in names[main] for said in words), (mode, names[main])
        others = sum(
            1 for run, g in zip(runs, found, strict=True) if g == main and run.mode != mode
        )
        assert others <= 0.1 * in_mode[main]  # runs of no mode stay out of the modes' groups
    timeout = next(group for group in result.groups if "timed out" in group["name"])
    assert timeout["details"]["signature"]["tool_error:timeout"] >= 0.9


def test_a_scorers_own_label_of_what_failed_marks_the_run_failed(tmp_path: Path) -> None:
    """The ``consistency`` scorer stores the failed checks' names as its label (``ok`` when
    all pass), not the binding's ``fail``: such a run is failed, its checks read from the
    label where its steps are gone."""
    store = open_store(f"sqlite:///{tmp_path / 'insights.db'}")
    at = datetime.fromtimestamp(START + 60, UTC)
    rows = [
        failing_row("a" * 32, "1" * 16, "consistency", score=0.7, reason="", agent="x",
                    model="m", at=at, label="grounding+leak"),
        failing_row("b" * 32, "2" * 16, "consistency", score=1.0, reason="", agent="x",
                    model="m", at=at, label="ok"),
        failing_row("c" * 32, "3" * 16, "tone", score=0.9, reason="", agent="x", model="m",
                    at=at, label="pass"),
    ]  # fmt: skip
    with store.write_transaction() as connection:
        upsert_scores(connection, rows)
    sample = sample_failed_runs(
        store, at - timedelta(hours=1), at + timedelta(hours=1), FailedRunsConfig(), 10
    )
    store.close()
    assert [run.trace_id for run in sample.runs.values()] == ["a" * 32]
    assert next(iter(sample.runs.values())).checks == {"grounding", "leak"}

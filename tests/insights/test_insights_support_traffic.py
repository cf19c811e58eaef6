"""The real pass over realistic support traffic (tests/support/support_traffic.py) in a real
SQLite database: the held-out part's five modes (wordings, entities, languages and agents the
defaults were not chosen on) recovered with the default settings, each named so a reader can
tell it; and the same without the ``consistency`` scorer's rows, from the judges' verdicts,
the tool errors and the answers alone."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sklearn.metrics import adjusted_rand_score

from tests.support.support_traffic import store_support_runs, support_stream
from tracescore.extract.registry import CONVENTIONS
from tracescore.insights.config import InsightsConfig
from tracescore.insights.passes import run_pass
from tracescore.store import open_store

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

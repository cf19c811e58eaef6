"""The ``consistency`` scorer on runs written apart from the tuning stream
(``tests/fixtures/consistency/heldout_runs.json``: other agents, tools, fields and wordings, some
in Spanish, French and German): it flags at least 90 % of the bad runs and at most 10 % of the
good ones, and every bad kind is there to be flagged."""

from __future__ import annotations

from tests.support import consistency_heldout, consistency_stream
from tracescore.scorers import registry


def test_the_held_out_runs_bad_ones_are_flagged_and_good_ones_are_not() -> None:
    held = consistency_heldout.runs()
    tally = consistency_heldout.tally(registry.get("consistency").factory(), held)
    assert len(held) >= 40
    assert all(tally.seen[kind] >= 4 for kind in consistency_stream.BAD_KINDS), tally.seen
    assert {"good", "small_talk", "unreachable"} <= set(tally.seen)
    assert tally.recall >= 0.9, tally.missed
    assert tally.good_flagged <= 0.1, tally.missed

"""The ``consistency`` scorer on the issue 47 stream, rebuilt from spans as the pipeline reads
it: on the held-out half (wordings and entities the checks were not tuned on) it flags at least
90 % of the bad runs of every kind taken together and at most 10 % of the good ones."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.support import consistency_stream
from tracescore.scorers import registry


def test_the_held_out_stream_s_bad_runs_are_flagged_and_its_good_runs_are_not(
    tmp_path: Path,
) -> None:
    runs = consistency_stream.stream("held", 400, seed=7)
    rebuilt = consistency_stream.rebuilt(runs, tmp_path)
    scorer = registry.get("consistency").factory()
    flagged, seen = Counter[str](), Counter[str]()
    for run, agent_run in zip(runs, rebuilt, strict=True):
        result = scorer.run_sync(agent_run)
        assert result.status == "ok", result.error
        seen[run.kind] += 1
        flagged[run.kind] += result.score is not None and result.score < 1
    bad = sum(seen[kind] for kind in consistency_stream.BAD_KINDS)
    good = sum(seen[kind] for kind in consistency_stream.GOOD_KINDS)
    assert bad >= 40 and good >= 300  # the mix holds every kind
    assert sum(flagged[kind] for kind in consistency_stream.BAD_KINDS) >= 0.9 * bad, flagged
    assert sum(flagged[kind] for kind in consistency_stream.GOOD_KINDS) <= 0.1 * good, flagged
    assert all(seen[kind] for kind in consistency_stream.BAD_KINDS), seen

"""``consistency``'s steps are stored only where insights reads them (#49): a passing score's
row holds the recompute marker like any code score's, a failing one's its checks."""

from __future__ import annotations

from tests.support.paths import CAPTURES
from tracescore.config import parse_config
from tracescore.extract import extract_runs
from tracescore.ingest.files import load_traces
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.score_rows import RECOMPUTE, score_row
from tracescore.scorers.scorer_run import ScorerRun

TRACE = CAPTURES / "otel-genai-openai-v2-latest" / "tool_call_agent"


def test_a_passing_consistency_score_is_recomputed_and_a_failing_one_keeps_its_checks() -> None:
    config = parse_config("scorers:\n  - name: consistency\n    scorer: consistency\n")
    (binding,) = compile_bindings(config.scorers, dict(config.judges), None)
    (trace,) = load_traces([TRACE])
    run = extract_runs(trace)[0]
    result = binding.scorer.run_sync(ScorerRun.of(run))
    assert result.status == "ok" and result.label == "ok", result
    passed = score_row(binding, run, status="ok", result=result)
    failed = score_row(
        binding, run, status="ok", result=result.model_copy(update={"label": "grounding"})
    )
    assert passed["steps"] == {RECOMPUTE: 1}
    assert failed["steps"] and failed["steps"]["steps"] and RECOMPUTE not in failed["steps"]

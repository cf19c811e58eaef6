"""Score prepared code-scorer cases and print the results as JSON, with which implementation ran.

Run by path in another install's Python (``python -I tests/support/code_scores.py cases.json``): it
imports nothing but ``tracescore``, so that install's package is the one measured, and reports
where each of its modules came from. The test imports ``results`` to score the same cases in
its own (compiled) install the same way.

A case is ``{"id", "scorer" (registry name), "options", "run"}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def results(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case's result, JSON-safe: every step's result, the score and status (no timings)."""
    from tracescore.scorers import registry

    out = []
    for case in cases:
        try:
            scorer = registry.get(case["scorer"]).factory(**case["options"])
        except ValueError as exc:
            out.append({"id": case["id"], "build_error": str(exc)})
            continue
        result = scorer.run_sync(case["run"])
        out.append(
            {
                "id": case["id"],
                **result.model_dump(
                    mode="json",
                    include={
                        "status",
                        "score",
                        "reason",
                        "error",
                        "failed_step",
                        "preprocess_step_result",
                        "analyze_step_result",
                        "generate_score_step_result",
                    },
                ),
            }
        )
    return out


def main() -> None:
    from tracescore.compiled import implementation
    from tracescore.scorers.code import content_similarity, tone

    cases = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    scored = results(cases)
    report = {
        "implementation": implementation(),
        "modules": sorted(
            {
                m.__file__
                for name, m in sys.modules.items()
                if name.startswith("tracescore") and m.__file__
            }
        ),
        "functions": [
            content_similarity.compare_two_strings.__module__,
            tone.comparative.__module__,
            tone.sentence_comparatives.__module__,
        ],
        "results": scored,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

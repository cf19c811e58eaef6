"""A code score's steps, computed again when a page or the API shows them.

A code scorer's step results are a pure function of the run and the scorer's version, so its
rows store only a marker (:data:`~tracescore.pipeline.score_rows.RECOMPUTE`) and what no
recomputation gives back (:data:`~tracescore.pipeline.score_rows.KEPT_STEPS`); a judge's steps
are stored. Filling a row in runs the binding's scorer on the run rebuilt from the trace's
spans, within the same input budget as the worker, and says so in the steps (``recomputed``);
when that cannot be done (the spans are gone, the binding or its version no longer configured)
the steps say why (``unavailable``) instead of showing nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from tracescore.extract import iter_runs
from tracescore.extract.declared import claim_order
from tracescore.extract.declared_config import ConventionConfig
from tracescore.extract.linked import read_with_steps
from tracescore.extract.model import AgentRun
from tracescore.judge.config import JudgeConfig
from tracescore.pipeline.bindings import CompiledBinding, compile_bindings
from tracescore.pipeline.budget import within_input_budget
from tracescore.pipeline.config import ScorerBinding, WorkersConfig
from tracescore.pipeline.score_rows import KEPT_STEPS, marked_for_recompute, steps_json
from tracescore.scorers.scorer_run import ScorerRun
from tracescore.store import SpanStore
from tracescore.store.call_links import StoredLinks
from tracescore.store.scores import StoredScore


class StepsSettings(Protocol):
    """What recomputing steps reads of the configuration: the bindings, their judges, the
    span conventions and the input budget. The service's ``Config`` and the pipeline's
    ``ScoringConfig`` both are one; named by this protocol so that no import, not even a type
    checker's, runs from the pipeline up to the configuration composed from every part."""

    @property
    def scorers(self) -> Sequence[ScorerBinding]: ...

    @property
    def judges(self) -> Mapping[str, JudgeConfig]: ...

    @property
    def conventions(self) -> Sequence[ConventionConfig]: ...

    @property
    def workers(self) -> WorkersConfig: ...


RunsOf = Callable[[str, Collection[str]], Mapping[str, AgentRun] | None]
"""The runs of the given span ids rebuilt from a trace's stored spans, by span id, or None once
the spans are gone. Only the runs asked for are kept: a huge trace's 20,000 runs at once were
220 MB of objects."""

SPANS_GONE = "the trace's spans are gone (retention), and a code scorer's steps are computed from them when shown"


class StepsRecompute:
    """Fills in the steps of score rows stored without them, from ``config``'s bindings (built
    at the first marked row: a reader that never shows one never loads a scorer)."""

    def __init__(self, config: StepsSettings) -> None:
        self._config = config

    @functools.cached_property
    def _bindings(self) -> dict[str, CompiledBinding]:
        config = self._config
        compiled = compile_bindings(config.scorers, dict(config.judges), engine=None)
        return {binding.name: binding for binding in compiled}

    def runs_in(self, store: SpanStore) -> RunsOf:
        """The runs of a trace read from ``store``, rebuilt as the worker rebuilt them."""
        conventions = claim_order(self._config.conventions)

        def runs_of(trace_id: str, span_ids: Collection[str]) -> dict[str, AgentRun] | None:
            trace = store.load_trace(trace_id)
            if trace is None:
                return None
            read = functools.partial(iter_runs, conventions=conventions)
            return {
                run.span_id: run
                for run in read_with_steps(trace, StoredLinks.of(store), read)
                if run.span_id in span_ids
            }

        return runs_of

    def fill_from(self, store: SpanStore) -> Callable[[Iterable[StoredScore]], None]:
        """:meth:`fill` with runs read from ``store``: what an API route is handed."""
        return functools.partial(self.fill, runs_of=self.runs_in(store))

    def fill(self, rows: Iterable[StoredScore], runs_of: RunsOf) -> None:
        """Replace each marked row's ``steps`` with the recomputed ones (``runs_of`` is asked
        once per trace, and only for traces with a marked row, for those rows' runs)."""
        marked: dict[str, list[tuple[StoredScore, Mapping[str, Any]]]] = {}
        for row in rows:
            steps = row.get("steps")
            if marked_for_recompute(steps):
                marked.setdefault(row["trace_id"], []).append((row, steps))
        for trace_id, trace_rows in marked.items():
            runs = runs_of(trace_id, {row["span_id"] for row, _ in trace_rows})
            for marked_row, stored in trace_rows:
                marked_row["steps"] = self._steps(marked_row, stored, runs)

    def _steps(
        self, row: StoredScore, stored: Mapping[str, Any], runs: Mapping[str, AgentRun] | None
    ) -> dict[str, Any]:
        kept = {key: stored[key] for key in KEPT_STEPS if key in stored}
        binding = self._bindings.get(row["binding"])
        if (
            binding is None
            or binding.scorer.version != row["scorer_version"]
            or binding.scorer.uses_judge
        ):
            why = (
                f"binding {row['binding']!r} with code scorer version {row['scorer_version']!r} is "
                "no longer configured, and a code scorer's steps are computed by it when shown"
            )
            return {**kept, "steps": [], "unavailable": why}
        run = None if runs is None else runs.get(row["span_id"])
        if run is None:
            return {**kept, "steps": [], "unavailable": SPANS_GONE}
        max_chars = self._config.workers.budget.max_chars
        scorer_input, _ = within_input_budget(ScorerRun.of(run), max_chars)
        recomputed = steps_json(binding.scorer.run_sync(scorer_input))
        note = f"computed again from the trace's spans by scorer version {binding.scorer.version}"
        return {**recomputed, **kept, "recomputed": note}

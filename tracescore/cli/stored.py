"""``tracescore rescore`` and ``tracescore compare``: work on the scores a store holds (a
backfill, its cost estimate, two scorer versions side by side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tracescore.cli.common import (
    API_BASE_OPTION,
    JUDGE_OPTION,
    NO_CONFIG,
    SCORER_OPTION,
    STORE_DB_OPTION,
    read_config,
    usage_error,
)
from tracescore.cli.database import open_existing_store
from tracescore.offline.report import Format


def rescore(
    since: str = typer.Option(
        "7d", "--since", help="Traces active since: 7d, 12h, 30m, or an ISO date."
    ),
    scorer: list[str] = SCORER_OPTION,
    binding: list[str] = typer.Option(
        [], "--binding", help="Only this configured binding; repeatable."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the runs to score and the estimated judge cost, then stop."
    ),
    estimate_sample: int | None = typer.Option(
        None,
        "--estimate-sample",
        min=1,
        show_default="100",
        help="With --dry-run: distinct runs per binding whose judge prompts are rendered and "
        "priced; the mean is extrapolated to the rest (raise it for an exact estimate of a "
        "varied window).",
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
        help="Stop starting traces once this many USD would be spent.",
        show_default="no limit",
    ),
    force: bool = typer.Option(
        False, "--force", help="Also re-score runs that have a current score."
    ),
    emit: bool = typer.Option(
        True, "--emit/--no-emit", help="Send the new scores to the config's export.otlp_endpoint."
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config: store, bindings, judges.", show_default=NO_CONFIG
    ),
    db: str | None = STORE_DB_OPTION,
    judge: str | None = JUDGE_OPTION,
    api_base: str | None = API_BASE_OPTION,
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Traces scored at once."),
    fmt: Format = typer.Option("table", "--format", help="table, json or csv."),
) -> None:
    """Score stored traces again with the current scorer versions (stored beside older ones)."""
    import asyncio

    from tracescore.batch_gc import tune_for_scoring
    from tracescore.config import ConfigError
    from tracescore.extract.declared import claim_order
    from tracescore.offline.progress import progress_bar
    from tracescore.offline.report import render, summarize
    from tracescore.offline.rescore import Backfill, parse_since
    from tracescore.offline.specs import SpecError, resolve_bindings
    from tracescore.pipeline.bindings import BindingError, compile_bindings
    from tracescore.pipeline.learnt_thresholds import label_with_learnt
    from tracescore.store.scores import StoredScore

    try:
        config = read_config(config_file)
        start = parse_since(since)
        bindings, judges = resolve_bindings(
            config.scorers, dict(config.judges), scorer, judge, api_base
        )
        unknown = sorted(set(binding) - {b.name for b in bindings})
        if unknown:
            raise SpecError(f"--binding names no configured binding: {', '.join(unknown)}")
        bindings = [b for b in bindings if not binding or b.name in binding]
        store = open_existing_store(db or config.store.url, config.assembly.read_limit())
        compiled = compile_bindings(bindings, judges, store.engine)
        label_with_learnt(store.engine, compiled)
    except (ConfigError, SpecError, BindingError, ValueError) as exc:
        usage_error(str(exc))
    if judges:
        from tracescore.judge import use_verdict_store

        use_verdict_store(store.engine)
    backfill = Backfill(
        store,
        compiled,
        force=force,
        concurrency=concurrency,
        conventions=claim_order(config.conventions),
    )
    if skipped := [b.name for b in compiled if b not in backfill.bindings]:
        typer.echo(
            f"not re-scored: {', '.join(skipped)} (target: conversation; the service rescores a "
            "conversation when a later turn arrives)",
            err=True,
        )
    if dry_run:
        from tracescore.offline.estimate import SAMPLE_RUNS

        plan = backfill.plan(start, estimate_sample or SAMPLE_RUNS)
        _print_estimates(plan, backfill.bindings, store.engine, fmt)
        return
    trace_ids = backfill.trace_ids(start)
    emitter = None
    if emit and config.export.otlp_endpoint:
        from tracescore.emit.otel import EvaluationEmitter

        emitter = EvaluationEmitter(config.export)

    def scored(rows: list[StoredScore]) -> None:
        advance(1)
        if emitter is not None:
            for row in rows:
                emitter.emit(row)

    try:
        tune_for_scoring()  # this process only re-scores from here on
        with progress_bar("re-scoring", len(trace_ids)) as advance:
            outcome = asyncio.run(backfill.run(trace_ids, max_cost=max_cost, on_trace=scored))
    finally:
        if emitter is not None:
            emitter.shutdown()
    summaries = summarize(outcome.rows, {b.name: b.scorer.id for b in backfill.bindings})
    title = f"Re-scored ({outcome.traces_scored} traces)"
    typer.echo(render(summaries, fmt, title=title), nl=fmt == "json")
    typer.echo(
        f"{len(outcome.rows)} scores stored for {outcome.traces_scored} of the {len(trace_ids)} "
        f"traces in the window, judge cost ${outcome.cost_usd:.6f}",
        err=True,
    )
    if outcome.stopped_by_budget:
        typer.echo(f"stopped: the --max-cost budget of ${max_cost:g} is reached", err=True)


def _print_estimates(plan: Any, compiled: list[Any], engine: Any, fmt: str) -> None:
    import dataclasses

    import orjson

    from tracescore.offline.estimate import estimate_cost

    estimates = []
    for b in compiled:
        sample = plan.samples[b.name]
        estimates.append(
            estimate_cost(
                b, sample.runs, sample.total, engine, copies=sample.copies, distinct=sample.distinct
            )
        )
    total = sum(e.cost_usd for e in estimates)
    if fmt == "json":
        typer.echo(
            orjson.dumps(
                {
                    "traces": len(plan.traces),
                    "runs": sum(plan.runs.values()),
                    "cost_usd": total,
                    "bindings": [dataclasses.asdict(e) for e in estimates],
                },
                option=orjson.OPT_INDENT_2,
            ).decode()
        )
        return
    lines = [
        f"dry run: {len(plan.traces)} traces, {sum(plan.runs.values())} runs to score; "
        f"estimated judge cost ${total:.6f}"
    ]
    lines += [
        f"  {e.binding} ({e.scorer}): {e.runs} runs, ${e.cost_usd:.6f}"
        + (
            f" [{e.calls_per_run:g} calls/run, {e.input_tokens_per_run:.0f} input tokens/run; "
            f"{e.method}]"
            if e.calls_per_run
            else ""
        )
        for e in estimates
    ]
    typer.echo("\n".join(lines))


def compare(
    binding: str = typer.Option(..., "--binding", help="The binding whose versions to compare."),
    versions: tuple[str, str] = typer.Option(..., "--versions", help="Two scorer versions: A B."),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Label pass at score >= this.", show_default="the stored labels"
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config (for its store).", show_default=NO_CONFIG
    ),
    db: str | None = STORE_DB_OPTION,
    fmt: str = typer.Option("table", "--format", help="table or json."),
) -> None:
    """Agreement of two scorer versions of a binding on the runs both scored."""
    import dataclasses

    import orjson

    from tracescore.config import ConfigError
    from tracescore.offline.compare import compare_versions

    try:
        store = open_existing_store(db or read_config(config_file).store.url)
    except (ConfigError, ValueError) as exc:
        usage_error(str(exc))
    result = compare_versions(store.engine, binding, versions[0], versions[1], threshold)
    if fmt == "json":
        typer.echo(orjson.dumps(dataclasses.asdict(result), option=orjson.OPT_INDENT_2).decode())
        return

    def number(value: float | None, spec: str = ".4f") -> str:
        return "-" if value is None else format(value, spec)

    a, b = versions
    typer.echo(
        "\n".join(
            [
                f"binding {binding}: version {a} vs {b}",
                f"  scored runs        {a}: {result.n_a}   {b}: {result.n_b}   paired: {result.n_paired}",
                f"  mean score         {a}: {number(result.mean_a)}   {b}: {number(result.mean_b)}",
                f"  mean difference    {number(result.mean_difference, '+.4f')} ({b} - {a})",
                f"  pearson r          {number(result.pearson)}",
                f"  label agreement    {number(result.label_agreement, '.1%')} of {result.n_labelled} "
                "labelled pairs",
            ]
        )
    )
    if result.n_paired == 0:
        typer.echo(f"no run was scored by both versions of {binding!r}", err=True)
        raise typer.Exit(1)

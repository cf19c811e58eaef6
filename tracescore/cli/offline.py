"""``tracescore extract`` and ``tracescore score``: agent runs read from files, and scored
without a service (a CI gate with ``--fail-under``).
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
    read_config,
    usage_error,
)
from tracescore.offline.report import Format


def extract(
    files: list[Path] = typer.Argument(
        ...,
        help="OTLP export files or directories (traces and logs, JSON or protobuf), "
        "or Mastra-shaped run JSON.",
        exists=True,
    ),
    primary: bool = typer.Option(
        False, "--primary", help="Only the runs that stand for each trace's agent."
    ),
    kind: list[str] = typer.Option(
        [], "--kind", help="Only runs of this kind (agent, llm, tool); repeatable."
    ),
    config_file: Path | None = typer.Option(
        None,
        "--config",
        help="YAML config: its conventions are read too, its "
        "conversations.id_attributes name the conversation.",
        show_default=NO_CONFIG,
    ),
) -> None:
    """Rebuild the agent, LLM and tool runs of the traces in FILES and print them as JSON."""
    import orjson

    from tracescore.batch_gc import tune_for_scoring
    from tracescore.config import ConfigError
    from tracescore.extract import RUN_KINDS, select_runs
    from tracescore.extract.declared import claim_order
    from tracescore.extract.mastra_json import MastraRunError
    from tracescore.ingest.decode import DecodeError
    from tracescore.offline.inputs import read_runs

    unknown = sorted(set(kind) - set(RUN_KINDS))
    if unknown:
        usage_error(f"--kind must be agent, llm or tool, not {', '.join(unknown)}")
    try:
        config = read_config(config_file)
    except ConfigError as exc:
        usage_error(str(exc))
    tune_for_scoring()  # reading is extraction in bulk, as scoring is
    try:
        runs = read_runs(files, config.conversations.id_attributes, claim_order(config.conventions))
    except (DecodeError, MastraRunError, OSError) as exc:
        typer.echo(f"cannot read: {exc}", err=True)
        raise typer.Exit(2) from None
    dumped = select_runs(runs, primary=primary, kinds=kind)
    typer.echo(orjson.dumps(dumped, option=orjson.OPT_INDENT_2).decode())


def score(
    files: list[Path] = typer.Argument(
        ...,
        help="OTLP export files or directories (JSON or protobuf), or JSON / JSON Lines of "
        "runs (tracescore's shape or Mastra's).",
        exists=True,
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config: bindings, judges.", show_default=NO_CONFIG
    ),
    scorer: list[str] = SCORER_OPTION,
    judge: str | None = JUDGE_OPTION,
    api_base: str | None = API_BASE_OPTION,
    fmt: Format = typer.Option("table", "--format", help="table, json or csv."),
    fail_under: list[str] = typer.Option(
        [], "--fail-under", help="BINDING=MIN: exit 1 when that binding's mean score is below MIN."
    ),
    fail_over: list[str] = typer.Option(
        [], "--fail-over", help="BINDING=MAX: exit 1 when the mean is above MAX (toxicity, bias…)."
    ),
    output: Path | None = typer.Option(
        None, "--output", help="Also write every score row as JSON Lines.", show_default="none"
    ),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Runs scored at once."),
) -> None:
    """Score the runs in FILES and print per-binding results; a CI gate with --fail-under.
    Conversation scorers (and bindings with target: conversation) score the conversations the
    runs are turns of, grouped by conversation id."""
    import asyncio

    import orjson

    from tracescore.batch_gc import tune_for_scoring
    from tracescore.config import ConfigError
    from tracescore.extract.declared import claim_order
    from tracescore.extract.mastra_json import MastraRunError
    from tracescore.ingest.decode import DecodeError
    from tracescore.offline.conversations import (
        by_conversation,
        judges_conversations,
        score_conversations,
    )
    from tracescore.offline.inputs import read_runs
    from tracescore.offline.progress import progress_bar
    from tracescore.offline.report import gate, render, summarize, unknown_thresholds
    from tracescore.offline.runner import by_trace, compile_offline, score_groups
    from tracescore.offline.specs import SpecError, parse_thresholds, resolve_bindings
    from tracescore.pipeline.bindings import BindingError, primary_only
    from tracescore.store.scores import StoredScore

    try:
        config = read_config(config_file)
        minimums = parse_thresholds(fail_under, "--fail-under")
        maximums = parse_thresholds(fail_over, "--fail-over")
        bindings, judges = resolve_bindings(
            config.scorers, dict(config.judges), scorer, judge, api_base
        )
        compiled = compile_offline(bindings, judges)
    except (ConfigError, SpecError, BindingError) as exc:
        usage_error(str(exc))
    tune_for_scoring()  # this process only reads and scores from here on
    try:
        runs = read_runs(
            files,
            config.conversations.id_attributes,
            claim_order(config.conventions),
            only_primary=primary_only(compiled),
        )
    except (DecodeError, MastraRunError, OSError) as exc:
        usage_error(f"cannot read: {exc}")
    of_runs = [b for b in compiled if not judges_conversations(b)]
    of_conversations = [b for b in compiled if judges_conversations(b)]
    groups = by_trace(runs) if of_runs else []
    conversations = (
        by_conversation(runs, config.conversations.max_turns) if of_conversations else []
    )

    async def score_all(advance: Any) -> list[list[StoredScore]]:
        return [
            *await score_groups(
                groups, of_runs, concurrency=concurrency, on_group=lambda _i, _r: advance(1)
            ),
            *await score_conversations(
                conversations,
                of_conversations,
                concurrency=concurrency,
                on_conversation=lambda _i, _r: advance(1),
            ),
        ]

    with progress_bar("scoring", len(groups) + len(conversations)) as advance:
        per_group = asyncio.run(score_all(advance))
    rows = [row for group_rows in per_group for row in group_rows]
    summaries = summarize(rows, {b.name: b.scorer.id for b in compiled})
    unknown = unknown_thresholds(summaries, {**minimums, **maximums})
    if unknown:
        usage_error(f"--fail-under/--fail-over name no binding or scorer: {', '.join(unknown)}")
    if output is not None:
        output.write_bytes(b"".join(orjson.dumps(row, default=str) + b"\n" for row in rows))
    scored = ", ".join(
        ([f"{len(groups)} traces"] if of_runs else [])
        + ([f"{len(conversations)} conversations"] if of_conversations else [])
    )
    typer.echo(render(summaries, fmt, title=f"Scores ({scored})"), nl=fmt == "json")
    failures = gate(summaries, minimums, maximums)
    if failures:
        typer.echo("quality gate failed:\n  " + "\n  ".join(failures), err=True)
        raise typer.Exit(1)

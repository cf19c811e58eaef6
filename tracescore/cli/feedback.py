"""``tracescore calibrate`` and ``tracescore export``: feedback's figures and runs from the shell.

Modules are imported inside the commands, so ``tracescore --help`` stays fast. Exit codes: 0
done, 1 the database cannot be opened, 2 a usage error (bad option, URL or config file).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tracescore.cli.common import fail, usage_error
from tracescore.cli.database import CONFIG_OPTION, DB_OPTION, database_errors, require_database

if TYPE_CHECKING:
    from tracescore.config import Config
    from tracescore.store import SpanStore


def open_config_store(db: str | None, config_file: Path | None) -> tuple[Config, SpanStore]:
    """The config (bindings, thresholds) and the store of ``--db``, else of the config."""
    from tracescore.config import ConfigError, load_config
    from tracescore.store import open_store

    try:
        config = load_config(config_file)
    except OSError as exc:
        fail(2, f"cannot read config file {config_file}: {exc.strerror}")
    except ConfigError as exc:
        fail(2, str(exc))
    url = db or config.store.url
    try:
        require_database(url)
        return config, open_store(url)
    except ValueError as exc:
        fail(2, f"invalid database URL: {exc}")


def _since(text: str) -> Any:
    from datetime import UTC, datetime

    from tracescore.feedback.report import since_moment

    try:
        return since_moment(text, datetime.now(UTC))
    except ValueError as exc:
        fail(2, f"--since: {exc}")


def _interval(figure: float | None, interval: list[float] | None) -> str:
    if figure is None:
        return "–"
    return f"{figure:.3f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def _table(report: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=(
            f"{report['binding']}: agreement with feedback "
            f"(verdicts at {report['threshold']:g}, {report['threshold_source']})"
        )
    )
    for column in (
        "scorer version",
        "judge model",
        "n",
        "MAE",
        "Spearman",
        "kappa",
        "agree",
        "J+H+",
        "J+H-",
        "J-H+",
        "J-H-",
    ):
        table.add_column(
            column, justify="left" if column in ("scorer version", "judge model") else "right"
        )
    rows = [{"scorer_version": "all", "judge_model": "", **report["overall"]}, *report["groups"]]
    for row in rows:
        confusion = row["confusion"]
        table.add_row(
            row["scorer_version"],
            row["judge_model"] or "–",
            str(row["n"]),
            _interval(row["mae"], row["mae_ci"]),
            _interval(row["spearman"], row["spearman_ci"]),
            _interval(row["kappa"], row["kappa_ci"]),
            "–" if row["accuracy"] is None else f"{row['accuracy']:.0%}",
            *(
                str(confusion[key])
                for key in (
                    "judge_pass_human_pass",
                    "judge_pass_human_fail",
                    "judge_fail_human_pass",
                    "judge_fail_human_fail",
                )
            ),
        )
    output = io.StringIO()
    Console(width=160, file=output).print(table)
    return output.getvalue()


def calibrate(
    named: str | None = typer.Option(
        None,
        "--binding",
        help="The binding whose scores to compare with feedback.",
        show_default="none: one must be named",
    ),
    positional: str | None = typer.Argument(
        None,
        metavar="[BINDING]",
        help="Deprecated: the binding named without --binding, as the other commands no longer do.",
        show_default=False,
    ),
    since: str | None = typer.Option(
        None, "--since", help="Scores made since: 7d or an ISO time.", show_default="all"
    ),
    scorer_version: str | None = typer.Option(
        None, "--scorer-version", help="Only this version.", show_default="every version"
    ),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Pass/fail cut for kappa.", show_default="the binding's threshold"
    ),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    db: str | None = DB_OPTION,
    config_file: Path | None = CONFIG_OPTION,
) -> None:
    """How far the binding's scores agree with human feedback: n, MAE, Spearman, Cohen's kappa
    with confidence intervals, and the confusion matrix (J: judge, H: human, +: pass), overall
    and per scorer version and judge model."""
    import orjson

    from tracescore.feedback.report import Thresholds, calibration_report
    from tracescore.pipeline.learnt_thresholds import PassThreshold

    if fmt not in ("table", "json"):
        fail(2, f"--format must be table or json, not {fmt!r}")
    if named is not None and positional is not None and named != positional:
        usage_error(f"two bindings: --binding {named} and {positional}")
    binding = named or positional
    if binding is None:
        usage_error("name the binding: tracescore calibrate --binding NAME")
    if named is None:
        typer.echo(
            f"warning: 'calibrate {binding}' is deprecated; "
            f"write 'calibrate --binding {binding}' as the other commands take it",
            err=True,
        )
    start = _since(since) if since else None
    with database_errors():
        config, store = open_config_store(db, config_file)
        cut = (
            PassThreshold(threshold, "asked")
            if threshold is not None
            else Thresholds.of(config, store.engine).of_binding(binding)
        )
        with store.engine.connect() as connection:
            report = calibration_report(
                connection,
                binding,
                cut,
                config.feedback,
                since=start,
                scorer_version=scorer_version,
            )
        store.close()
    if fmt == "json":
        typer.echo(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(_table(report), nl=False)


def export(
    binding: str = typer.Option(..., "--binding", help="The binding whose scored runs to export."),
    below: float | None = typer.Option(
        None, "--below", help="Only runs it scored below this.", show_default="any score"
    ),
    since: str = typer.Option("7d", "--since", help="Runs scored since: 7d or an ISO time."),
    db: str | None = DB_OPTION,
    config_file: Path | None = CONFIG_OPTION,
) -> None:
    """Write the binding's scored runs, rebuilt from their traces, as JSON Lines of Mastra-shaped
    runs (feedback as groundTruth) on stdout, which `tracescore score runs.jsonl` reads back."""
    import orjson

    from tracescore.extract.declared import claim_order
    from tracescore.feedback.export import export_runs

    start = _since(since)
    with database_errors():
        config, store = open_config_store(db, config_file)
        count = 0
        conventions = claim_order(config.conventions)
        for item in export_runs(store, binding, since=start, below=below, conventions=conventions):
            sys.stdout.buffer.write(orjson.dumps(item) + b"\n")
            count += 1
        sys.stdout.flush()
        store.close()
    typer.echo(f"exported {count} runs", err=True)

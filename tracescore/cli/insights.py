"""``tracescore insights``: the failure modes of a window, grouped offline from a database or
from exported runs, printed as a table or JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tracescore.cli.common import fail
from tracescore.cli.database import CONFIG_OPTION, DB_OPTION, database_errors
from tracescore.cli.feedback import open_config_store

if TYPE_CHECKING:
    from tracescore.store.insights import FailureGroup


def _table(groups: list[FailureGroup], failed: int) -> str:
    lines = [f"{len(groups)} failure modes among {failed} failed runs"]
    for group in groups:
        lines.append(
            f"\n{group['size']:>6}  {group['share']:>5.0%}  {group['name']}  [{group['id']}]"
        )
        lines.append(f"        {group['description']}")
        for example in group["details"]["examples"][:3]:
            lines.append(f"        - {example['trace_id']}  {example['summary'][:100]}")
    return "\n".join(lines) + "\n"


def insights(
    files: list[Path] | None = typer.Argument(
        None,
        help="Exported runs (JSON Lines, as `tracescore export` writes): every run counts as failed.",
    ),
    window: str = typer.Option(
        "",
        "--window",
        help="With a database: group the runs that failed this long back from now (1h, 7d).",
        show_default="the config's insights.window",
    ),
    save: bool = typer.Option(
        False, "--save", help="With a database: store the groups as the service's pass would."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the groups as JSON."),
    db: str | None = DB_OPTION,
    config_file: Path | None = CONFIG_OPTION,
) -> None:
    """Group failed runs into failure modes and print them: from the database (the runs that
    failed in the window) or, given files, from exported runs, without a database."""
    from datetime import UTC, datetime

    import orjson

    from tracescore.config import ConfigError, load_config
    from tracescore.extract.declared import claim_order
    from tracescore.insights.passes import group_runs, run_pass
    from tracescore.insights.runs import runs_from_exports
    from tracescore.settings import parse_duration

    if files:
        try:
            config = load_config(config_file)
        except ConfigError as exc:
            fail(2, str(exc))
        runs = [
            run
            for path in files
            for run in runs_from_exports(
                orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()
            )
        ]
        now = datetime.now(UTC).timestamp()
        groups = [stored for _, stored in group_runs(runs, config.insights, (now, now))]
        failed = len(runs)
    else:
        with database_errors():
            config, store = open_config_store(db, config_file)
            settings = config.insights
            if window:
                try:
                    settings = settings.model_copy(update={"window": parse_duration(window)})
                except ValueError as exc:
                    fail(2, f"--window: {exc}")
            result = run_pass(store, settings, claim_order(config.conventions), save=save)
            store.close()
        groups, failed = result.groups, result.failed
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(groups, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        typer.echo(_table(groups, failed), nl=False)

"""``tracescore config check``: a config file validated as the service would load it."""

from __future__ import annotations

from pathlib import Path

import typer

from tracescore.cli.common import read_config

config_app = typer.Typer(help="Work with configuration files.", no_args_is_help=True)


@config_app.command("check")
def config_check(file: Path = typer.Argument(..., help="YAML config file to validate.")) -> None:
    """Validate a config file: every key, every scorer name, option and judge reference."""
    from tracescore.config import ConfigError
    from tracescore.pipeline.bindings import BindingError, compile_bindings

    try:
        config = read_config(file)
        # Build every scorer too, so a bad option fails here and not on the first trace.
        compile_bindings(config.scorers, dict(config.judges), engine=None)
    except (ConfigError, BindingError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"{file}: valid ({len(config.scorers)} scorer bindings, {len(config.judges)} judges, "
        f"store {config.store.url.split('://', 1)[0]})"
    )

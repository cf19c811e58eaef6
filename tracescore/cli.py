"""The ``tracescore`` command line. Each command imports its stage lazily, so start-up stays fast."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="tracescore",
    help="Score AI agents from their OpenTelemetry traces.",
    no_args_is_help=True,
    add_completion=False,
)


if __name__ == "__main__":
    app()

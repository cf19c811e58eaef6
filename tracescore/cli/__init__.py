"""The ``tracescore`` command line: the Typer app, with each command in the module of its job.

Each command imports its stage lazily, so start-up (and ``--help``) stays fast. Commands are
registered here, in the order ``--help`` lists them.
"""

from __future__ import annotations

import signal
import threading

import typer

from tracescore.batch_gc import freeze_at_exit
from tracescore.cli.config import config_app
from tracescore.cli.db import db_app
from tracescore.cli.demo import demo
from tracescore.cli.feedback import calibrate, export
from tracescore.cli.insights import insights
from tracescore.cli.offline import extract, score
from tracescore.cli.scorers import list_scorers
from tracescore.cli.serve import serve
from tracescore.cli.stored import compare, rescore

app = typer.Typer(
    name="tracescore",
    help="Score AI agents from their OpenTelemetry traces.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(config_app, name="config")
app.add_typer(db_app, name="db")
app.command()(calibrate)
app.command()(export)


def _print_version(value: bool) -> None:
    if value:
        from tracescore.version import __version__

        typer.echo(f"tracescore {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    _version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Score AI agents from their OpenTelemetry traces."""
    # A process started in the background by a shell without job control (`cmd &` in a
    # script, nohup) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    # for it: `kill -INT` did nothing to `tracescore demo --serve`. Every command stops on it.
    # (Only the main thread may set a handler: a command invoked from another thread, as a
    # program embedding the CLI may, keeps its process's own.)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    freeze_at_exit()  # a command that judged would otherwise spend seconds on its exit


app.command()(serve)
app.command()(extract)
app.command()(score)
app.command("scorers")(list_scorers)
app.command()(rescore)
app.command()(compare)
app.command()(demo)
app.command()(insights)

__all__ = ["app"]

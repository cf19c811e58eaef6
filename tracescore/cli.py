"""The ``tracescore`` command line. Each command imports its stage lazily, so start-up stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from tracescore.config import Config

app = typer.Typer(
    name="tracescore",
    help="Score AI agents from their OpenTelemetry traces.",
    no_args_is_help=True,
    add_completion=False,
)
config_app = typer.Typer(help="Work with configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@app.callback()
def main() -> None:
    """Score AI agents from their OpenTelemetry traces."""


@app.command()
def serve(
    config_file: Path | None = typer.Option(None, "--config", help="YAML config file."),
    db: str | None = typer.Option(
        None, "--db", help="Database URL: sqlite:///file.db or postgresql://user@host/db."
    ),
    host: str | None = typer.Option(None, "--host", help="Interface to listen on."),
    http_port: int | None = typer.Option(None, "--http-port", help="OTLP/HTTP and API port."),
    grpc_port: int | None = typer.Option(None, "--grpc-port", help="OTLP/gRPC port."),
    idle_timeout: float | None = typer.Option(
        None, "--idle-timeout", help="Seconds without new spans before a trace is complete."
    ),
) -> None:
    """Run the collector: OTLP/HTTP, OTLP/gRPC and the read API, storing spans durably."""
    import logging

    from tracescore.config import ConfigError

    try:
        config = _with_overrides(
            _load_config(config_file),
            {
                "--db": ("store", db),
                "--host": ("server.host", host),
                "--http-port": ("server.http_port", http_port),
                "--grpc-port": ("server.grpc_port", grpc_port),
                "--idle-timeout": ("assembly.idle_timeout", idle_timeout),
            },
        )
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None

    from sqlalchemy.exc import ArgumentError, OperationalError

    from tracescore.pipeline.bindings import BindingError
    from tracescore.pipeline.runner import pipeline_task
    from tracescore.service import Service

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        service = Service(config)
    except (ArgumentError, ValueError) as exc:
        typer.echo(f"invalid database URL: {exc}", err=True)
        raise typer.Exit(2) from None
    except OperationalError as exc:
        typer.echo(f"cannot open the database: {exc.orig}", err=True)
        raise typer.Exit(1) from None
    try:
        service.add_background(pipeline_task(config, service.store))
    except BindingError as exc:
        typer.echo(f"invalid configuration: {exc}", err=True)
        raise typer.Exit(2) from None
    server = config.server
    typer.echo(
        f"tracescore collector: OTLP/HTTP on {server.host}:{server.http_port}, "
        f"OTLP/gRPC on {server.host}:{server.grpc_port}, store {service.store.engine.url!r}",
        err=True,
    )
    service.run()


@config_app.command("check")
def config_check(file: Path = typer.Argument(..., help="YAML config file to validate.")) -> None:
    """Validate a config file: every key, every scorer name, option and judge reference."""
    from tracescore.config import ConfigError
    from tracescore.pipeline.bindings import BindingError, compile_bindings

    try:
        config = _load_config(file)
        # Build every scorer too, so a bad option fails here and not on the first trace.
        compile_bindings(config.scorers, dict(config.judges), engine=None)
    except (ConfigError, BindingError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"{file}: valid ({len(config.scorers)} scorer bindings, {len(config.judges)} judges, "
        f"store {config.store.split('://', 1)[0]})"
    )


@app.command()
def extract(
    files: list[Path] = typer.Argument(
        ..., help="OTLP export files or directories (traces and logs, JSON or protobuf), "
        "or Mastra-shaped run JSON.", exists=True
    ),
    primary: bool = typer.Option(
        False, "--primary", help="Only the runs that stand for each trace's agent."
    ),
    kind: list[str] = typer.Option(
        [], "--kind", help="Only runs of this kind (agent, llm, tool); repeatable."
    ),
) -> None:
    """Rebuild the agent, LLM and tool runs of the traces in FILES and print them as JSON."""
    import orjson

    from tracescore.extract import extract_runs
    from tracescore.extract.mastra_json import MastraRunError, is_mastra_json, runs_from_mastra_json
    from tracescore.ingest.decode import DecodeError
    from tracescore.ingest.files import export_files, load_traces

    runs = []
    exports = []
    try:
        for path in export_files(files):
            head = path.read_bytes() if path.suffix in (".json", ".jsonl") else b""
            if path.suffix == ".jsonl" or (head and is_mastra_json(head)):
                runs.extend(runs_from_mastra_json(head))
            else:
                exports.append(path)
        for trace in load_traces(exports):
            runs.extend(extract_runs(trace))
    except (DecodeError, MastraRunError, OSError) as exc:
        typer.echo(f"cannot read: {exc}", err=True)
        raise typer.Exit(2) from None
    selected = [r for r in runs if (r.primary or not primary) and (not kind or r.kind in kind)]
    dumped = [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in selected]
    typer.echo(orjson.dumps(dumped, option=orjson.OPT_INDENT_2).decode())


@app.command()
def score(
    files: list[Path] = typer.Argument(
        ..., help="OTLP export files or directories (JSON or protobuf), or JSON / JSON Lines of "
        "runs (tracescore's shape or Mastra's).", exists=True
    ),
    config_file: Path | None = typer.Option(None, "--config", help="YAML config: bindings, judges."),
    scorer: list[str] = typer.Option(
        [], "--scorer", help="NAME[:key=value,…] (values read as YAML), or module:attr[:…] for a "
        "custom scorer; repeatable; replaces the config's bindings."
    ),
    judge: str | None = typer.Option(None, "--judge", help="Judge model for LLM scorers (litellm name)."),
    api_base: str | None = typer.Option(None, "--api-base", help="OpenAI-compatible judge URL."),
    fmt: str = typer.Option("table", "--format", help="table, json or csv."),
    fail_under: list[str] = typer.Option(
        [], "--fail-under", help="BINDING=MIN: exit 1 when that binding's mean score is below MIN."
    ),
    output: Path | None = typer.Option(None, "--output", help="Also write every score row as JSON Lines."),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Runs scored at once."),
) -> None:
    """Score the runs in FILES and print per-binding results; a CI gate with --fail-under."""
    import asyncio

    import orjson

    from tracescore.config import ConfigError
    from tracescore.extract.mastra_json import MastraRunError
    from tracescore.ingest.decode import DecodeError
    from tracescore.offline.inputs import read_runs
    from tracescore.offline.progress import progress_bar
    from tracescore.offline.report import gate, render, summarize, unknown_thresholds
    from tracescore.offline.runner import by_trace, compile_offline, score_groups
    from tracescore.offline.specs import SpecError, parse_thresholds, resolve_bindings
    from tracescore.pipeline.bindings import BindingError

    if fmt not in ("table", "json", "csv"):
        _usage_error(f"--format must be table, json or csv, not {fmt!r}")
    try:
        config = _load_config(config_file)
        thresholds = parse_thresholds(fail_under)
        bindings, judges = resolve_bindings(config.scorers, dict(config.judges), scorer, judge, api_base)
        compiled = compile_offline(bindings, judges)
    except (ConfigError, SpecError, BindingError) as exc:
        _usage_error(str(exc))
    try:
        groups = by_trace(read_runs(files))
    except (DecodeError, MastraRunError, OSError) as exc:
        _usage_error(f"cannot read: {exc}")
    with progress_bar("scoring", len(groups)) as advance:
        per_group = asyncio.run(
            score_groups(groups, compiled, concurrency=concurrency, on_group=lambda _i, _r: advance(1))
        )
    rows = [row for group_rows in per_group for row in group_rows]
    summaries = summarize(rows, [b.name for b in compiled])
    unknown = unknown_thresholds(summaries, thresholds)
    if unknown:
        _usage_error(f"--fail-under names no binding or scorer: {', '.join(unknown)}")
    if output is not None:
        output.write_bytes(b"".join(orjson.dumps(row, default=str) + b"\n" for row in rows))
    typer.echo(render(summaries, fmt, title=f"Scores ({len(groups)} traces)"), nl=fmt == "json")
    failures = gate(summaries, thresholds)
    if failures:
        typer.echo("quality gate failed:\n  " + "\n  ".join(failures), err=True)
        raise typer.Exit(1)


@app.command("scorers")
def list_scorers(fmt: str = typer.Option("table", "--format", help="table or json.")) -> None:
    """List every prebuilt scorer with its options."""
    import orjson

    import sys

    from tracescore.scorers import registry

    entries = registry.entries()
    if fmt == "json":
        listed = [
            {"name": e.name, "description": e.description, "uses_judge": e.uses_judge,
             "higher_is_better": e.higher_is_better,
             "options": [{"name": o.name, "type": o.annotation, "default": o.default,
                          "description": o.description} for o in e.options()]}
            for e in entries
        ]  # fmt: skip
        typer.echo(orjson.dumps(listed, option=orjson.OPT_INDENT_2, default=str).decode())
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Scorers (bind by name in a config or with --scorer NAME:key=value)")
    for column in ("scorer", "kind", "description", "options"):
        table.add_column(column)
    for entry in entries:
        options = "\n".join(
            f"{o.name}: {o.annotation} = {o.default!r}" + (f" ({o.description})" if o.description else "")
            for o in entry.options()
        )
        kind = "LLM judge" if entry.uses_judge else "code"
        if not entry.higher_is_better:
            kind += ", lower is better"
        table.add_row(entry.name, kind, entry.description, options or "-")
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def _usage_error(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(2)


def _with_overrides(config: Config, overrides: dict[str, tuple[str, object]]) -> Config:
    """``config`` with command-line values applied (``{flag: (dotted key, value or None)}``),
    each validated by its section's model so a bad flag is refused like a bad config key."""
    from pydantic import ValidationError

    from tracescore.config import ConfigError

    updates: dict[str, object] = {}
    for flag, (dotted, value) in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.rpartition(".")
        if not section:
            updates[key] = value
            continue
        current = updates.get(section, getattr(config, section))
        try:
            updates[section] = type(current).model_validate({**current.model_dump(), key: value})
        except ValidationError as exc:
            message = exc.errors(include_input=False, include_url=False)[0]["msg"]
            raise ConfigError(f"invalid {flag}: {message}") from None
    return config.model_copy(update=updates)


def _load_config(path: Path | None) -> Config:
    from tracescore.config import ConfigError, load_config

    try:
        return load_config(path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


if __name__ == "__main__":
    app()

"""The ``tracescore`` command line. Each command imports its stage lazily, so start-up stays fast."""

from __future__ import annotations

import contextlib
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from tracescore.dbcli import database_errors, db_app, require_database
from tracescore.feedbackcli import calibrate, export
from tracescore.offline.report import Format

if TYPE_CHECKING:
    from tracescore.config import Config

# What an option left unset means, shown as its default in --help.
_NO_CONFIG = "none: the embedded defaults"

app = typer.Typer(
    name="tracescore",
    help="Score AI agents from their OpenTelemetry traces.",
    no_args_is_help=True,
    add_completion=False,
)
config_app = typer.Typer(help="Work with configuration files.", no_args_is_help=True)
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
        False, "--version", callback=_print_version, is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Score AI agents from their OpenTelemetry traces."""


@app.command()
def serve(
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config file.", show_default=_NO_CONFIG
    ),
    db: str | None = typer.Option(
        None, "--db", help="Database URL: sqlite:///file.db or postgresql://user@host/db.",
        show_default="sqlite:///tracescore.db, or the config's store",
    ),
    host: str | None = typer.Option(
        None, "--host", help="Interface to listen on (0.0.0.0: every interface).",
        show_default="127.0.0.1, or the config's server.host",
    ),
    http_port: int | None = typer.Option(
        None, "--http-port", help="OTLP/HTTP, API and dashboard port.",
        show_default="4318, or the config's server.http_port",
    ),
    grpc_port: int | None = typer.Option(
        None, "--grpc-port", help="OTLP/gRPC port.", show_default="4317, or the config's server.grpc_port"
    ),
    idle_timeout: float | None = typer.Option(
        None, "--idle-timeout", help="Seconds without new spans before a trace is complete.",
        show_default="5.0, or the config's assembly.idle_timeout",
    ),
    processes: int | None = typer.Option(
        None, "--processes", help="Service processes sharing the ports (one per core).",
        show_default="1, or the config's server.processes",
    ),
    unpackers: int | None = typer.Option(
        None, "--unpackers", help="Processes per service decoding acknowledged requests into rows.",
        show_default="1, or the config's server.unpackers",
    ),
    log_level: LogLevel = typer.Option(
        "info", "--log-level", help="tracescore's log messages from this level on; debug also "
        "shows the libraries' (schema migrations, servers).",
    ),
) -> None:
    """Run the collector: OTLP/HTTP, OTLP/gRPC, the REST API and the dashboard, storing spans
    durably."""
    from tracescore.config import ConfigError

    try:
        config = _with_overrides(
            _load_config(config_file),
            {
                "--db": ("store.url", db),
                "--host": ("server.host", host),
                "--http-port": ("server.http_port", http_port),
                "--grpc-port": ("server.grpc_port", grpc_port),
                "--idle-timeout": ("assembly.idle_timeout", idle_timeout),
                "--processes": ("server.processes", processes),
                "--unpackers": ("server.unpackers", unpackers),
            },
        )
    except ConfigError as exc:
        _fail(2, str(exc))

    _configure_logging(log_level)
    server = config.server
    for port, what in ((server.http_port, "OTLP/HTTP, --http-port"),
                       (server.grpc_port, "OTLP/gRPC, --grpc-port")):  # fmt: skip
        if problem := _cannot_listen(server.host, port):
            _fail(1, f"cannot listen on {server.host}:{port} ({what}): {problem}")
    if server.processes > 1:
        from tracescore.supervisor import check_in_child, serve_processes

        # Checked once, before the processes start, so bad URLs, databases and bindings fail
        # with one clear message and the tables exist; in a child, so that the parent, which
        # only watches the service processes, stays small.
        code, detail = check_in_child(config)
        if code:
            _fail(code, detail)
        _announce(config, detail)
        raise typer.Exit(serve_processes(config))

    from tracescore.supervisor import build_service, startup_failure

    try:
        service = build_service(config)
    except Exception as exc:
        failure = startup_failure(exc)
        if failure is None:
            raise
        _fail(*failure)
    _announce(config, repr(service.store.engine.url))
    service.run()


def _fail(code: int, message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(code)


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def _configure_logging(level: LogLevel) -> None:
    """tracescore's loggers at ``level``; the libraries' (Alembic's dozen lines per start, the
    servers') only from warnings on, unless ``debug`` asks for everything."""
    import logging

    chosen = getattr(logging, level.value.upper())
    logging.basicConfig(
        level=chosen if level is LogLevel.debug else max(chosen, logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("tracescore").setLevel(chosen)


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, say), or None: checked before the
    service starts, so a taken port is one line naming it instead of the servers' tracebacks.
    SO_REUSEADDR as the servers set it, so a port left in TIME_WAIT is no false alarm."""
    import socket

    if port == 0:
        return None
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _announce(config: Config, store_url: str) -> None:
    """Where everything is, in one short block: what a newcomer opens or points an exporter at."""
    from tracescore.compiled import describe
    from tracescore.version import __version__

    server = config.server
    # A URL to open: the wildcard addresses are reachable on loopback too.
    shown = "127.0.0.1" if server.host in ("0.0.0.0", "::", "") else server.host
    base = f"http://{shown}:{server.http_port}"
    typer.echo("\n".join([
        f"tracescore {__version__} collecting, store {store_url}",
        f"  dashboard   {base}/",
        f"  OTLP/HTTP   {base}/v1/traces (and /v1/logs)",
        f"  OTLP/gRPC   {shown}:{server.grpc_port}",
        f"  REST API    {base}/api/" + (f" (reference at {base}/api/docs)" if server.docs else ""),
        f"  listening on {server.host}; {server.processes} "
        f"process{'es' if server.processes > 1 else ''}, {server.unpackers} "
        f"unpacker{'s' if server.unpackers > 1 else ''} each; {describe()}",
    ]), err=True)


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
        f"store {config.store.url.split('://', 1)[0]})"
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
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config: its conventions are read too, its "
        "conversations.id_attributes name the conversation.", show_default=_NO_CONFIG,
    ),
) -> None:
    """Rebuild the agent, LLM and tool runs of the traces in FILES and print them as JSON."""
    import orjson

    from tracescore.config import ConfigError
    from tracescore.extract import RUN_KINDS, select_runs
    from tracescore.extract.declared import claim_order
    from tracescore.extract.mastra_json import MastraRunError
    from tracescore.ingest.decode import DecodeError
    from tracescore.offline.inputs import read_runs

    unknown = sorted(set(kind) - set(RUN_KINDS))
    if unknown:
        _usage_error(f"--kind must be agent, llm or tool, not {', '.join(unknown)}")
    try:
        config = _load_config(config_file)
    except ConfigError as exc:
        _usage_error(str(exc))
    try:
        runs = read_runs(
            files, config.conversations.id_attributes, claim_order(config.conventions)
        )
    except (DecodeError, MastraRunError, OSError) as exc:
        typer.echo(f"cannot read: {exc}", err=True)
        raise typer.Exit(2) from None
    dumped = select_runs(runs, primary=primary, kinds=kind)
    typer.echo(orjson.dumps(dumped, option=orjson.OPT_INDENT_2).decode())


_SCORER_OPTION = typer.Option(
    [], "--scorer", help="NAME[:key=value,…] (values read as YAML), or module:attr[:…] for a "
    "custom scorer; repeatable; replaces the config's bindings."
)
_JUDGE_OPTION = typer.Option(
    None, "--judge", help="Judge model for LLM scorers (litellm name).",
    show_default="the config's judges.default",
)
_API_BASE_OPTION = typer.Option(
    None, "--api-base", help="OpenAI-compatible judge URL.", show_default="the model's provider"
)
_DB_OPTION = typer.Option(
    None, "--db", help="Database URL.", show_default="the config's store, sqlite:///tracescore.db"
)


@app.command()
def score(
    files: list[Path] = typer.Argument(
        ..., help="OTLP export files or directories (JSON or protobuf), or JSON / JSON Lines of "
        "runs (tracescore's shape or Mastra's).", exists=True
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config: bindings, judges.", show_default=_NO_CONFIG
    ),
    scorer: list[str] = _SCORER_OPTION,
    judge: str | None = _JUDGE_OPTION,
    api_base: str | None = _API_BASE_OPTION,
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
    from tracescore.pipeline.bindings import BindingError
    from tracescore.store.scores import StoredScore

    try:
        config = _load_config(config_file)
        minimums = parse_thresholds(fail_under, "--fail-under")
        maximums = parse_thresholds(fail_over, "--fail-over")
        bindings, judges = resolve_bindings(
            config.scorers, dict(config.judges), scorer, judge, api_base
        )
        compiled = compile_offline(bindings, judges)
    except (ConfigError, SpecError, BindingError) as exc:
        _usage_error(str(exc))
    try:
        runs = read_runs(
            files, config.conversations.id_attributes, claim_order(config.conventions)
        )
    except (DecodeError, MastraRunError, OSError) as exc:
        _usage_error(f"cannot read: {exc}")
    of_runs = [b for b in compiled if not judges_conversations(b)]
    of_conversations = [b for b in compiled if judges_conversations(b)]
    groups = by_trace(runs) if of_runs else []
    conversations = by_conversation(runs, config.conversations.max_turns) if of_conversations else []

    async def score_all(advance: Any) -> list[list[StoredScore]]:
        return [
            *await score_groups(groups, of_runs, concurrency=concurrency, on_group=lambda _i, _r: advance(1)),
            *await score_conversations(conversations, of_conversations, concurrency=concurrency,
                                       on_conversation=lambda _i, _r: advance(1)),
        ]

    with progress_bar("scoring", len(groups) + len(conversations)) as advance:
        per_group = asyncio.run(score_all(advance))
    rows = [row for group_rows in per_group for row in group_rows]
    summaries = summarize(rows, {b.name: b.scorer.id for b in compiled})
    unknown = unknown_thresholds(summaries, {**minimums, **maximums})
    if unknown:
        _usage_error(f"--fail-under/--fail-over name no binding or scorer: {', '.join(unknown)}")
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


@app.command("scorers")
def list_scorers(
    fmt: str = typer.Option("table", "--format", help="table or json."),
    show_prompts: str | None = typer.Option(
        None, "--show-prompts", metavar="NAME",
        help="Print what the LLM scorer NAME tells its judge, rendered on an example run.",
        show_default="none: list the scorers",
    ),
) -> None:
    """List every prebuilt scorer with its options, or show an LLM scorer's judge prompts."""
    import sys

    import orjson

    from tracescore.scorers import registry

    if show_prompts is not None:
        try:
            entry = registry.get(show_prompts)
        except KeyError as exc:
            _fail(2, str(exc.args[0]))
        if not entry.uses_judge:
            _fail(2, f"{show_prompts} is a code scorer: it asks no judge anything")
        from tracescore.scorers.llm.shown_prompts import render

        typer.echo(render(show_prompts), nl=False)
        return
    entries = registry.entries()
    if fmt == "json":
        listed = [
            {"name": e.name, "description": e.description, "uses_judge": e.uses_judge,
             "higher_is_better": e.higher_is_better, "conversation": e.conversation,
             "options": [{"name": o.name, "type": o.annotation, "default": o.default,
                          "description": o.description} for o in e.options()]}
            for e in entries
        ]
        typer.echo(orjson.dumps(listed, option=orjson.OPT_INDENT_2, default=str).decode())
        return
    from rich.console import Console
    from rich.table import Table

    from tracescore.compiled import describe

    table = Table(title="Scorers (bind by name in a config or with --scorer NAME:key=value)", caption=describe())
    for column in ("scorer", "kind", "description", "options"):
        table.add_column(column)
    for entry in entries:
        options = "\n".join(
            f"{o.name}: {o.annotation} = {o.default!r}"
            + (f" ({o.description})" if o.description else "")
            for o in entry.options()
        )
        kind = "LLM judge" if entry.uses_judge else "code"
        if entry.conversation:
            kind += ", conversations"
        if not entry.higher_is_better:
            kind += ", lower is better"
        table.add_row(entry.name, kind, entry.description, options or "-")
    Console(width=None if sys.stdout.isatty() else 160).print(table)


@app.command()
def rescore(
    since: str = typer.Option(
        "7d", "--since", help="Traces active since: 7d, 12h, 30m, or an ISO date."
    ),
    scorer: list[str] = _SCORER_OPTION,
    binding: list[str] = typer.Option(
        [], "--binding", help="Only this configured binding; repeatable."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the runs to score and the estimated judge cost, then stop."
    ),
    max_cost: float | None = typer.Option(
        None, "--max-cost", min=0, help="Stop starting traces once this many USD would be spent.",
        show_default="no limit",
    ),
    force: bool = typer.Option(
        False, "--force", help="Also re-score runs that have a current score."
    ),
    emit: bool = typer.Option(
        True, "--emit/--no-emit", help="Send the new scores to the config's export.otlp_endpoint."
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config: store, bindings, judges.", show_default=_NO_CONFIG
    ),
    db: str | None = _DB_OPTION,
    judge: str | None = _JUDGE_OPTION,
    api_base: str | None = _API_BASE_OPTION,
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Traces scored at once."),
    fmt: Format = typer.Option("table", "--format", help="table, json or csv."),
) -> None:
    """Score stored traces again with the current scorer versions (stored beside older ones)."""
    import asyncio

    from tracescore.config import ConfigError
    from tracescore.extract.declared import claim_order
    from tracescore.offline.progress import progress_bar
    from tracescore.offline.report import render, summarize
    from tracescore.offline.rescore import Backfill, parse_since
    from tracescore.offline.specs import SpecError, resolve_bindings
    from tracescore.pipeline.bindings import BindingError, compile_bindings
    from tracescore.store.scores import StoredScore

    try:
        config = _load_config(config_file)
        start = parse_since(since)
        bindings, judges = resolve_bindings(
            config.scorers, dict(config.judges), scorer, judge, api_base
        )
        unknown = sorted(set(binding) - {b.name for b in bindings})
        if unknown:
            raise SpecError(f"--binding names no configured binding: {', '.join(unknown)}")
        bindings = [b for b in bindings if not binding or b.name in binding]
        store = _open_store(db or config.store.url)
        compiled = compile_bindings(bindings, judges, store.engine)
    except (ConfigError, SpecError, BindingError, ValueError) as exc:
        _usage_error(str(exc))
    if judges:
        from tracescore.judge import use_verdict_store

        use_verdict_store(store.engine)
    backfill = Backfill(store, compiled, force=force, concurrency=concurrency,
                        conventions=claim_order(config.conventions))
    if skipped := [b.name for b in compiled if b not in backfill.bindings]:
        typer.echo(
            f"not re-scored: {', '.join(skipped)} (target: conversation; the service rescores a "
            "conversation when a later turn arrives)", err=True,
        )
    if dry_run:
        _print_estimates(backfill.plan(start), backfill.bindings, store.engine, fmt)
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
        f"traces in the window, judge cost ${outcome.cost_usd:.6f}", err=True,
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
        estimates.append(estimate_cost(b, sample.runs, sample.total, engine,
                                       copies=sample.copies, distinct=sample.distinct))
    total = sum(e.cost_usd for e in estimates)
    if fmt == "json":
        typer.echo(orjson.dumps(
            {"traces": len(plan.traces), "runs": sum(plan.runs.values()), "cost_usd": total,
             "bindings": [dataclasses.asdict(e) for e in estimates]}, option=orjson.OPT_INDENT_2,
        ).decode())
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


@app.command()
def compare(
    binding: str = typer.Option(..., "--binding", help="The binding whose versions to compare."),
    versions: tuple[str, str] = typer.Option(..., "--versions", help="Two scorer versions: A B."),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Label pass at score >= this.", show_default="the stored labels"
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="YAML config (for its store).", show_default=_NO_CONFIG
    ),
    db: str | None = _DB_OPTION,
    fmt: str = typer.Option("table", "--format", help="table or json."),
) -> None:
    """Agreement of two scorer versions of a binding on the runs both scored."""
    import dataclasses

    import orjson

    from tracescore.config import ConfigError
    from tracescore.offline.compare import compare_versions

    try:
        store = _open_store(db or _load_config(config_file).store.url)
    except (ConfigError, ValueError) as exc:
        _usage_error(str(exc))
    result = compare_versions(store.engine, binding, versions[0], versions[1], threshold)
    if fmt == "json":
        typer.echo(orjson.dumps(dataclasses.asdict(result), option=orjson.OPT_INDENT_2).decode())
        return

    def number(value: float | None, spec: str = ".4f") -> str:
        return "-" if value is None else format(value, spec)

    a, b = versions
    typer.echo("\n".join([
        f"binding {binding}: version {a} vs {b}",
        f"  scored runs        {a}: {result.n_a}   {b}: {result.n_b}   paired: {result.n_paired}",
        f"  mean score         {a}: {number(result.mean_a)}   {b}: {number(result.mean_b)}",
        f"  mean difference    {number(result.mean_difference, '+.4f')} ({b} - {a})",
        f"  pearson r          {number(result.pearson)}",
        f"  label agreement    {number(result.label_agreement, '.1%')} of {result.n_labelled} "
        "labelled pairs",
    ]))
    if result.n_paired == 0:
        typer.echo(f"no run was scored by both versions of {binding!r}", err=True)
        raise typer.Exit(1)


@app.command()
def demo(
    endpoint: str = typer.Option(
        "http://127.0.0.1:4318", "--endpoint", help="OTLP/HTTP endpoint of the collector."
    ),
    rate_text: str = typer.Option(
        "2/s", "--rate", help="Agent traces per second: 2, 2/s or 90/min."
    ),
    duration: float = typer.Option(
        120.0, "--duration", min=0, help="Seconds to run (0: until Ctrl-C)."
    ),
    drop_after: float = typer.Option(
        30.0, "--drop-after", min=0,
        help="Seconds after which weather-bot's answers get worse and concierge's memory fails.",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Random seed, for repeatable traffic.", show_default="random"
    ),
    serve: bool = typer.Option(
        False, "--serve", help="Start the collector too, at --endpoint, with the demo's config "
        "(its alert rules and a conversation binding), and keep it running until Ctrl-C.",
    ),
    db: str = typer.Option(
        "sqlite:///tracescore-demo.db", "--db", help="With --serve: the collector's database."
    ),
    grpc_port: int = typer.Option(4317, "--grpc-port", help="With --serve: its OTLP/gRPC port."),
    print_config: bool = typer.Option(
        False, "--print-config", help="Print the demo's config (for tracescore serve --config) "
        "and exit.",
    ),
) -> None:
    """Send realistic agent traces (3 agents with tools and reasoning, and a multi-turn chat
    agent whose turns share a conversation id, in 4 services) to a collector; with --serve,
    start that collector first, configured for the demo."""
    from tracescore.offline.demo import parse_rate
    from tracescore.offline.demo_collector import (
        CollectorExited,
        demo_collector,
        demo_config_text,
    )

    if print_config:
        typer.echo(demo_config_text(), nl=False)
        return
    try:
        rate = parse_rate(rate_text)
    except ValueError as exc:
        _usage_error(str(exc))
    if not serve:
        _send_demo(endpoint, rate, duration, drop_after, seed)
        return
    try:
        with demo_collector(endpoint, db, grpc_port) as collector:
            _send_demo(endpoint, rate, duration, drop_after, seed)
            typer.echo(
                f"the collector keeps running with the demo's alert rules: open {endpoint}/ "
                "(Ctrl-C stops it)", err=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                collector.wait()
    except CollectorExited as exc:
        _fail(exc.code, str(exc))
    except TimeoutError as exc:
        _fail(1, str(exc))


def _send_demo(
    endpoint: str, rate: float, duration: float, drop_after: float, seed: int | None
) -> None:
    from tracescore.offline.demo import DEGRADING_AGENT, run_demo
    from tracescore.offline.demo_chat import CHAT_AGENT

    typer.echo(
        f"sending {rate:g} agent traces/s to {endpoint} "
        + (f"for {duration:g} s" if duration else "until Ctrl-C")
        + f"; {DEGRADING_AGENT} degrades and {CHAT_AGENT}'s memory fails after {drop_after:g} s",
        err=True,
    )
    sent = run_demo(endpoint, rate, duration, drop_after=drop_after, seed=seed)
    typer.echo(f"sent {sent} traces", err=True)


def _open_store(url: str) -> Any:
    """The existing store at ``url``, with every acknowledged request in it stored as rows (a
    collector that stopped may have left some in the ingest journal); a URL that cannot be used
    raises ``ValueError`` (a usage error), a database that does not exist, cannot be opened or
    has a schema this release cannot use exits 1."""
    from sqlalchemy.exc import ArgumentError

    from tracescore.config import ServerConfig
    from tracescore.ingest.unpack import drain
    from tracescore.store import open_store

    try:
        require_database(url)
        with database_errors():
            store = open_store(url)
            drain(store, ServerConfig().max_attribute_chars)
        return store
    except ArgumentError as exc:
        raise ValueError(f"invalid database URL: {exc}") from None


def _usage_error(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(2)


def _with_overrides(config: Config, overrides: dict[str, tuple[str, object]]) -> Config:
    """``config`` with command-line values applied (``{flag: (dotted key, value or None)}``),
    each validated by its section's model so a bad flag is refused like a bad config key."""
    from pydantic import BaseModel, ValidationError

    from tracescore.config import ConfigError

    values: dict[str, object] = {}
    sections: dict[str, BaseModel] = {}
    for flag, (dotted, value) in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.rpartition(".")
        if not section:
            values[key] = value
            continue
        current: BaseModel = sections.get(section, getattr(config, section))
        try:
            sections[section] = type(current).model_validate({**current.model_dump(), key: value})
        except ValidationError as exc:
            message = exc.errors(include_input=False, include_url=False)[0]["msg"]
            raise ConfigError(f"invalid {flag}: {message}") from None
    return config.model_copy(update={**values, **sections})


def _load_config(path: Path | None) -> Config:
    from tracescore.config import ConfigError, load_config

    try:
        return load_config(path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


if __name__ == "__main__":
    app()

"""``tracescore demo``: a scripted agent workload sent to a collector (or one it starts)."""

from __future__ import annotations

import contextlib

import typer

from tracescore.cli.common import fail, usage_error


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
        30.0,
        "--drop-after",
        min=0,
        help="Seconds after which weather-bot's answers get worse and concierge's memory fails.",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Random seed, for repeatable traffic.", show_default="random"
    ),
    serve: bool = typer.Option(
        False,
        "--serve",
        help="Start the collector too, at --endpoint, with the demo's config "
        "(its alert rules and a conversation binding), and keep it running until Ctrl-C.",
    ),
    db: str = typer.Option(
        "sqlite:///tracescore-demo.db", "--db", help="With --serve: the collector's database."
    ),
    grpc_port: int = typer.Option(4317, "--grpc-port", help="With --serve: its OTLP/gRPC port."),
    print_config: bool = typer.Option(
        False,
        "--print-config",
        help="Print the demo's config (for tracescore serve --config) and exit.",
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
        usage_error(str(exc))
    if not serve:
        _send_demo(endpoint, rate, duration, drop_after, seed)
        return
    try:
        with demo_collector(endpoint, db, grpc_port) as collector:
            if _send_demo(endpoint, rate, duration, drop_after, seed):
                return  # Ctrl-C while sending: it stops the collector too, on the way out
            typer.echo(
                f"the collector keeps running with the demo's alert rules: open {endpoint}/ "
                "(Ctrl-C stops it)",
                err=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                collector.wait()
    except CollectorExited as exc:
        fail(exc.code, str(exc))
    except TimeoutError as exc:
        fail(1, str(exc))


def _send_demo(
    endpoint: str, rate: float, duration: float, drop_after: float, seed: int | None
) -> bool:
    """Send the traffic; whether Ctrl-C (SIGINT) ended it."""
    from tracescore.offline.demo import DEGRADING_AGENT, run_demo
    from tracescore.offline.demo_chat import CHAT_AGENT

    typer.echo(
        f"sending {rate:g} agent traces/s to {endpoint} "
        + (f"for {duration:g} s" if duration else "until Ctrl-C")
        + f"; {DEGRADING_AGENT} degrades and {CHAT_AGENT}'s memory fails after {drop_after:g} s",
        err=True,
    )
    sent, interrupted = run_demo(endpoint, rate, duration, drop_after=drop_after, seed=seed)
    typer.echo(f"sent {sent} traces", err=True)
    return interrupted

"""``tracescore scorers``: the prebuilt scorers and their options, or an LLM scorer's prompts."""

from __future__ import annotations

import typer

from tracescore.cli.common import fail


def list_scorers(
    fmt: str = typer.Option("table", "--format", help="table or json."),
    show_prompts: str | None = typer.Option(
        None,
        "--show-prompts",
        metavar="NAME",
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
            fail(2, str(exc.args[0]))
        if not entry.uses_judge:
            fail(2, f"{show_prompts} is a code scorer: it asks no judge anything")
        from tracescore.scorers.llm.shown_prompts import render

        typer.echo(render(show_prompts), nl=False)
        return
    entries = registry.entries()
    if fmt == "json":
        listed = [
            {
                "name": e.name,
                "description": e.description,
                "uses_judge": e.uses_judge,
                "higher_is_better": e.higher_is_better,
                "conversation": e.conversation,
                "options": [
                    {
                        "name": o.name,
                        "type": o.annotation,
                        "default": o.default,
                        "description": o.description,
                    }
                    for o in e.options()
                ],
            }
            for e in entries
        ]
        typer.echo(orjson.dumps(listed, option=orjson.OPT_INDENT_2, default=str).decode())
        return
    from rich.console import Console
    from rich.table import Table

    from tracescore.compiled import describe

    table = Table(
        title="Scorers (bind by name in a config or with --scorer NAME:key=value)",
        caption=describe(),
    )
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

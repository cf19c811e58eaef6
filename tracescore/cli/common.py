"""What the commands share: exiting with a message and code, reading the config and applying
command-line values to it, and the options the scoring commands have in common.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from tracescore.config import Config


# What an option left unset means, shown as its default in --help.
NO_CONFIG = "none: the embedded defaults"


def fail(code: int, message: str) -> NoReturn:
    """Exit with ``code``, the reason on standard error."""
    typer.echo(message, err=True)
    raise typer.Exit(code)


def usage_error(message: str) -> NoReturn:
    """Exit 2: the command line asked for something that cannot be."""
    fail(2, message)


def with_overrides(config: Config, overrides: dict[str, tuple[str, object]]) -> Config:
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


def read_config(path: Path | None) -> Config:
    from tracescore.config import ConfigError, load_config

    try:
        return load_config(path)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


SCORER_OPTION = typer.Option(
    [],
    "--scorer",
    help="NAME[:key=value,…] (values read as YAML), or module:attr[:…] for a "
    "custom scorer; repeatable; replaces the config's bindings.",
)
JUDGE_OPTION = typer.Option(
    None,
    "--judge",
    help="Judge model for LLM scorers (litellm name).",
    show_default="the config's judges.default",
)
API_BASE_OPTION = typer.Option(
    None, "--api-base", help="OpenAI-compatible judge URL.", show_default="the model's provider"
)
STORE_DB_OPTION = typer.Option(
    None, "--db", help="Database URL.", show_default="the config's store, sqlite:///tracescore.db"
)

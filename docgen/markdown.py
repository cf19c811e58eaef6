"""Markdown building blocks shared by the reference generators."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence

_SPHINX_ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|obj):`~?([^`]+)`")


def prose(docstring: str | None) -> str:
    """A docstring as Markdown: Sphinx roles (``:mod:`x```) become code, paragraphs stay apart."""
    if not docstring:
        return ""
    return _SPHINX_ROLE.sub(r"``\1``", inspect.cleandoc(docstring))


def cell(text: str) -> str:
    """``text`` fit for one table cell: a single line, with its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """Inline code, with enough backticks around it for any backtick ``text`` holds."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; every cell is made single-line and pipe-safe."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)
    return "\n".join(lines)


def fenced(text: str, language: str = "text") -> str:
    """A fenced code block long enough to hold any fence inside ``text``."""
    fence = "`" * max(3, max((len(run) + 1 for run in re.findall("`{3,}", text)), default=3))
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"

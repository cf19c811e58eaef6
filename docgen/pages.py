"""Which generated part fills which marker of a hand-written docs page.

A page says where its reference goes with ``<!-- tracescore:generate NAME -->`` on a line of its
own, so the prose around a reference stays ordinary Markdown and the tables come from the code.
The part is committed after the marker, up to ``<!-- tracescore:end NAME -->``, so the pages read
whole on a forge without building the site; ``python -m docgen`` writes it again after a change
(the docs build regenerates it too, and ``tests/system/test_docs.py`` fails while a page is stale).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from docgen import api_reference, config_reference, metrics_reference, scorer_reference

GENERATORS: dict[str, Callable[[], str]] = {
    "config-reference": config_reference.render,
    "scorer-reference": scorer_reference.render,
    "rest-api-reference": api_reference.render,
    "metrics-reference": metrics_reference.render,
}

MARKER = re.compile(
    r"^<!-- tracescore:generate ([a-z-]+) -->$(?:.*?^<!-- tracescore:end \1 -->$)?",
    re.MULTILINE | re.DOTALL,
)


class UnknownGenerator(KeyError):
    """A page asks for a generated part that does not exist (a typo, or a removed generator)."""


def fill(markdown: str) -> str:
    """``markdown`` with every marker replaced by the part it names."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise UnknownGenerator(
                f"unknown generated part {name!r}; known: {', '.join(GENERATORS)}"
            )
        return (
            f"<!-- tracescore:generate {name} -->\n\n{GENERATORS[name]().strip()}\n\n"
            f"<!-- tracescore:end {name} -->"
        )

    return MARKER.sub(generated, markdown)


def generated_pages(docs: Path) -> list[Path]:
    """The pages of ``docs`` with a generated part."""
    return sorted(p for p in docs.rglob("*.md") if MARKER.search(p.read_text(encoding="utf-8")))


def write_pages(docs: Path) -> list[Path]:
    """Fill every generated part of ``docs`` in place; returns the pages that changed."""
    changed = []
    for path in generated_pages(docs):
        text = path.read_text(encoding="utf-8")
        if (filled := fill(text)) != text:
            path.write_text(filled, encoding="utf-8")
            changed.append(path)
    return changed

"""Which generated part fills which marker of a hand-written docs page.

A page says where its reference goes with ``<!-- tracescore:generate NAME -->`` on a line of its
own, so the prose around a reference stays ordinary Markdown and the tables come from the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from docgen import api_reference, config_reference, metrics_reference, scorer_reference

GENERATORS: dict[str, Callable[[], str]] = {
    "config-reference": config_reference.render,
    "scorer-reference": scorer_reference.render,
    "rest-api-reference": api_reference.render,
    "metrics-reference": metrics_reference.render,
}

MARKER = re.compile(r"^<!-- tracescore:generate ([a-z-]+) -->$", re.MULTILINE)


class UnknownGenerator(KeyError):
    """A page asks for a generated part that does not exist (a typo, or a removed generator)."""


def fill(markdown: str) -> str:
    """``markdown`` with every marker replaced by the part it names."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise UnknownGenerator(f"unknown generated part {name!r}; known: {', '.join(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)

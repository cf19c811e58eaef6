"""No module of the package runs over 500 lines without saying why in its docstring.

A long module is most often two jobs in one file; the few kept whole on purpose say so
(``Over 500 lines and kept whole: …``), so the next reader knows the length was weighed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tracescore"
LIMIT = 500
REASON = re.compile(r"\b(?:over|past) [45]00 lines\b", re.IGNORECASE)
"""How a long module's docstring states its reason (some say it from 400 lines on)."""


def test_every_module_over_500_lines_says_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") <= LIMIT:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if not REASON.search(docstring):
            unexplained.append(f"{path.relative_to(PACKAGE.parent)}: {text.count(chr(10))} lines")
    assert not unexplained, unexplained


def test_a_module_without_its_reason_is_found() -> None:
    """The rule's reading of a docstring: a long module says why, in those words, or fails."""
    quiet = '"""A module."""\n' + "x = 1\n" * LIMIT
    assert not REASON.search(ast.get_docstring(ast.parse(quiet)) or "")
    said = '"""A module.\n\nOver 500 lines and kept whole: one table."""\n'
    assert REASON.search(ast.get_docstring(ast.parse(said)) or "")

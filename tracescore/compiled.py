"""Whether this install has the code scorers' compiled loops, told without loading the scorers.

The Cython extensions (``tracescore/scorers/code/_tone_scan.pyx`` and ``_dice.pyx``) are optional
at build time: where no C compiler works, the build skips them and the package still installs
(``pyproject.toml``). The tone and content-similarity scorers then run the pure-Python
definitions the compiled loops are tested against (``tone_vader.py``, ``dice.py``): the same
scores, more time per case (``docs/install.md`` has the figures).

Both the scorers, to choose, and ``tracescore serve``, to say which one runs, ask here. The
serve parent of several service processes stays small on purpose and must not import the
scorers (~14 MB) to tell, so an extension counts as built when the import system's own finder
locates it in the package directory; the scorers then import it, and a build that is present
but cannot load fails loudly at start rather than falling back unnoticed.
"""

from __future__ import annotations

from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, FileFinder
from pathlib import Path
from typing import Literal

PACKAGE = "tracescore.scorers.code"
EXTENSIONS = ("_tone_scan", "_dice")
_DIRECTORY = Path(__file__).parent / "scorers" / "code"


@cache
def extensions_built() -> bool:
    """Every extension of ``EXTENSIONS`` is in place (one missing: the pure-Python loops for all,
    so that one install never mixes the two)."""
    finder = FileFinder(str(_DIRECTORY), (ExtensionFileLoader, EXTENSION_SUFFIXES))
    return all(finder.find_spec(f"{PACKAGE}.{name}") is not None for name in EXTENSIONS)


def implementation() -> Literal["compiled", "pure Python"]:
    return "compiled" if extensions_built() else "pure Python"


def describe() -> str:
    """One line for ``tracescore serve``'s start and ``tracescore scorers``: an install that fell
    back says so where an operator looks, since pip only shows the skipped build with -v."""
    if extensions_built():
        return "code scorers: compiled (the Cython extensions were built at install)"
    return (
        "code scorers: pure Python (built without a working C compiler): the same scores, but tone "
        "and content-similarity take longer per case (see docs/install.md)"
    )

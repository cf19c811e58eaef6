"""Where the repository and the tests' data live, for tests wherever they sit in the tree."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
CAPTURES = FIXTURES / "captures"

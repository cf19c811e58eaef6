"""Rows numbered in SQL, for benchmarks that seed millions of rows in one statement each."""

from __future__ import annotations

NUMBERS = {
    "sqlite": (
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :count - 1)",
        "n",
    ),
    "postgresql": ("", "generate_series(0, :count - 1) AS n(i)"),
}
"""How each database counts 0 … count - 1: a statement prefix and a row source."""

"""The ``consistency`` scorer (:mod:`.scorer`) and its checks; the checks' names are here, where
the registry's option schema reads them without loading the scorer."""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

CheckName: TypeAlias = Literal[
    "grounding", "contradiction", "entities", "non_answer", "truncation", "language", "leak"
]
CHECKS: tuple[CheckName, ...] = get_args(CheckName)
"""Every check, in the order labels and reasons name them."""

"""What every configuration section shares: strict keys, the duration type, the problem type.

A leaf module (it imports nothing from tracescore), so each part keeps its own section next to
its code and the top-level ``Config`` composes them without any part importing another's config.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


class Section(BaseModel):
    """A configuration section: an unknown key is an error naming it, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


def parse_duration(value: object) -> float:
    """Seconds from a number or a string such as ``90``, ``15m``, ``1h`` or ``7d``."""
    if isinstance(value, bool):  # pydantic reports ValueErrors (not TypeErrors) as field errors
        raise ValueError("a duration is a number of seconds or a string like '15m'")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    raise ValueError("a duration is a number of seconds or a string like '15m', '1h', '7d'")


Problem = tuple[tuple[str, ...], str]
"""A mistake in a configuration document: the key path (``scorers.3.after.binding``) and what
is wrong there. Each section checks its own cross-references into these; the top-level config
collects them and :mod:`tracescore.config_report` reports them with their lines."""


Duration = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]
"""Seconds, written as a number or as ``15m``, ``1h``, ``7d``."""


Matcher = Callable[[str], object]
"""Truthy when the value matches: a regex's match method (a match or None) or a bool test."""


def compile_pattern(pattern: str) -> Matcher:
    """``re:<regex>`` (full match), a glob when it has ``*?[``, else an exact string: the one
    pattern syntax of every section that names things by pattern (filters, conventions).
    Raises ``re.error`` for a bad regex."""
    if pattern.startswith("re:"):
        return re.compile(pattern[3:]).fullmatch
    if any(ch in pattern for ch in "*?["):
        return re.compile(fnmatch.translate(pattern)).match
    return pattern.__eq__

"""The runs a cost estimate prices: a seeded uniform sample of the distinct runs to score.

Runs with the same content are asked the same judge requests, which the verdict cache answers
after the first: copies of a run cost nothing. A sample of the runs themselves cannot price that:
it sees both copies of a run only when both fall in it, so extrapolating what it paid counts the
copies outside it as paid (a uniform sample of 100 of the 140 captured runs, of 84 distinct
contents, was priced 33 % over the real spend). So the sample is drawn from the distinct
contents, and every content's copies are counted (a judge without a cache pays for each).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracescore.extract.model import AgentRun

CONTENT = {"kind", "status", "error", "input", "output", "context", "tools", "ground_truth"}
"""The run fields scorers read; who, when and where (ids, times, service, usage) is left out."""
IDENTITY = frozenset({"id", "created_at", "tool_call_id"})
"""Keys within messages that tell copies apart without changing what a judge is shown."""


def content_key(run: AgentRun) -> int:
    """A 64-bit digest of what the scorers read of ``run``: equal for copies of a run."""
    content = _without_identity(run.model_dump(mode="json", include=CONTENT))
    digest = hashlib.blake2b(orjson.dumps(content, option=orjson.OPT_SORT_KEYS), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def _without_identity(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_identity(item) for key, item in value.items() if key not in IDENTITY}
    if isinstance(value, list):
        return [_without_identity(item) for item in value]
    return value


@dataclass
class RunSample:
    """Up to ``size`` of a binding's runs to score, a seeded uniform sample of their distinct
    contents (reservoir sampling: the same database gives the same sample)."""

    size: int
    runs: list[AgentRun] = field(default_factory=list, init=False)
    total: int = field(default=0, init=False)
    """Runs to score, copies included."""
    _keys: list[int] = field(default_factory=list, init=False, repr=False)
    _counts: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _chooser: random.Random = field(
        default_factory=lambda: random.Random(0), init=False, repr=False
    )

    def add(self, run: AgentRun) -> None:
        self.total += 1
        key = content_key(run)
        seen = self._counts.get(key, 0)
        self._counts[key] = seen + 1
        if seen:
            return
        if len(self.runs) < self.size:
            self.runs.append(run)
            self._keys.append(key)
        elif (slot := self._chooser.randrange(len(self._counts))) < self.size:
            self.runs[slot], self._keys[slot] = run, key

    @property
    def distinct(self) -> int:
        """Distinct contents among the runs to score."""
        return len(self._counts)

    @property
    def copies(self) -> list[int]:
        """How many runs to score have the content of each sampled run (itself included)."""
        return [self._counts[key] for key in self._keys]

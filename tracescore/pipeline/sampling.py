"""Deterministic ratio sampling by trace id, bit-compatible with Mastra's rule.

A trace is sampled at rate ``r`` when ``uint48_be(sha256(key)[:6]) / 2**48 < r``, with the trace
id (lowercase hex) as the key. Because the hash is fixed per trace, every binding with the same
rate makes the same decision for a trace, and rates nest: a trace sampled at 10 % is also
sampled at 20 %. Every process and every instance agrees without coordination.
"""

from __future__ import annotations

import hashlib

_SCALE = float(2**48)


def unit_hash(key: str) -> float:
    """The trace's position in [0, 1): the first six bytes of sha256(key), big-endian, / 2**48."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big") / _SCALE


def is_sampled(key: str, rate: float) -> bool:
    return sampled_at(unit_hash(key), rate) if 0.0 < rate < 1.0 else rate >= 1.0


def sampled_at(position: float, rate: float) -> bool:
    """:func:`is_sampled` for a trace whose :func:`unit_hash` is known: the worker hashes each
    trace id once and asks for every binding's rate."""
    return rate >= 1.0 or (rate > 0.0 and position < rate)

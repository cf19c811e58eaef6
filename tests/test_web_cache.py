"""The dashboard's aggregate memo: reused while young, recomputed once stale, bounded in size."""

from __future__ import annotations

from tracescore.web.cache import ExpiringCache


def test_values_are_reused_until_their_ttl_then_recomputed() -> None:
    now = [100.0]
    cache = ExpiringCache(size=2, clock=lambda: now[0])
    calls: list[str] = []

    def compute(name: str) -> str:
        calls.append(name)
        return name.upper()

    assert cache.get("a", 5, lambda: compute("a")) == "A"
    now[0] += 4.9
    assert cache.get("a", 5, lambda: compute("a")) == "A" and calls == ["a"]
    now[0] += 0.2
    assert cache.get("a", 5, lambda: compute("a")) == "A" and calls == ["a", "a"]
    # Beyond ``size`` the oldest entry goes.
    cache.get("b", 5, lambda: compute("b"))
    cache.get("c", 5, lambda: compute("c"))
    cache.get("a", 5, lambda: compute("a"))
    assert calls == ["a", "a", "b", "c", "a"]

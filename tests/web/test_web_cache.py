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

    # A value is aged from when it was ready, so a compute slower than the TTL is still reused.
    def slow() -> str:
        now[0] += 10
        return compute("slow")

    cache.get("s", 5, slow)
    assert cache.get("s", 5, slow) == "SLOW" and calls.count("slow") == 1
    calls.clear()
    # While one caller recomputes an expired value, the others get the previous one.
    now[0] += 6

    def recompute_while_asked_again() -> str:
        assert cache.get("s", 5, lambda: compute("again")) == "SLOW"
        return compute("fresh")

    assert cache.get("s", 5, recompute_while_asked_again) == "FRESH" and calls == ["fresh"]
    calls.clear()
    # Beyond ``size`` the oldest entry goes.
    cache.get("b", 5, lambda: compute("b"))
    cache.get("c", 5, lambda: compute("c"))
    cache.get("a", 5, lambda: compute("a"))
    assert calls == ["b", "c", "a"]

"""Long filler text and request token counts, for the judge input-budget tests."""

from __future__ import annotations

import random

from tracescore.judge.client import litellm


def filler(length: int, seed: int) -> str:
    """Log-like English text (what a scraped page or a tool's dump looks like)."""
    rng = random.Random(seed)
    words = [
        "shipment",
        "report",
        "delayed",
        "warehouse",
        "quarterly",
        "logistics",
        "status",
        "pallet",
        "invoice",
        "customs",
        "the",
        "of",
        "and",
        "was",
        "on",
        "for",
    ]
    lines = []
    size = 0
    while size < length:
        line = f"{rng.randint(1000, 99999)} " + " ".join(rng.choice(words) for _ in range(12)) + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:length]


def request_tokens(body: dict[str, object]) -> int:
    return int(litellm().token_counter(model="openai/gpt-4o-mini", messages=body["messages"]))

"""Token prices from litellm's bundled price map, shared by cost estimates and cost conditions.

The map is the JSON file litellm ships and prices judge calls from (offline, as
``LITELLM_LOCAL_MODEL_COST_MAP`` makes it). It is read here without importing litellm: the
import costs seconds of CPU and about 170 MB in every process, which a scoring process with a
``when: {cost_usd: …}`` paid for prices it looks up once per model (it halved
``benchmarks/pipeline.py --capacity --when``). Only the two prices of each model are kept.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

PRICE_MAP = "model_prices_and_context_window_backup.json"


@cache
def _price_map() -> dict[str, tuple[float, float]]:
    """USD per input and per output token by model name; empty without litellm installed."""
    spec = importlib.util.find_spec("litellm")  # finds the package without running it
    if spec is None or spec.origin is None:
        return {}
    try:
        entries = json.loads((Path(spec.origin).parent / PRICE_MAP).read_bytes())
    except (OSError, ValueError):
        return {}
    prices = {}
    for name, entry in entries.items():
        if isinstance(entry, dict) and isinstance(entry.get("input_cost_per_token"), int | float):
            output = entry.get("output_cost_per_token")
            prices[name] = (
                float(entry["input_cost_per_token"]),
                float(output) if isinstance(output, int | float) else 0.0,
            )
    return prices


@cache
def token_prices(model: str) -> tuple[float, float] | None:
    """USD per input and per output token of ``model`` (``openai/gpt-4o-mini`` is priced as
    ``gpt-4o-mini`` when the map has no entry for the prefixed name); None when litellm is not
    installed or has no price for it (a self-hosted model)."""
    prices = _price_map()
    found = prices.get(model)
    if found is None and "/" in model:
        found = prices.get(model.split("/", 1)[1])
    return found

"""Token prices from litellm's bundled price map, shared by cost estimates and cost conditions.

A leaf of ``judge/``: it imports litellm only when a price is first asked for (the import costs
seconds), and remembers each model's prices, since a cost condition asks once per run.
"""

from __future__ import annotations

from functools import cache

from tracescore.judge.client import litellm


@cache
def token_prices(model: str) -> tuple[float, float] | None:
    """USD per input and per output token of ``model``; None when litellm is not installed or
    has no price for it (a self-hosted model)."""
    try:
        module = litellm()
        price_in, _ = module.cost_per_token(model=model, prompt_tokens=1, completion_tokens=0)
        _, price_out = module.cost_per_token(model=model, prompt_tokens=0, completion_tokens=1)
    except Exception:  # noqa: BLE001 - litellm raises for models it has never heard of
        return None
    return float(price_in), float(price_out)

"""tracescore: score AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracescore.version import __version__

if TYPE_CHECKING:
    from tracescore.offline.runner import EvalResult, ItemResult, arun_evals, run_evals

_LAZY = {"run_evals", "arun_evals", "EvalResult", "ItemResult"}
__all__ = ["EvalResult", "ItemResult", "__version__", "arun_evals", "run_evals"]


def __getattr__(name: str) -> Any:
    # ``import tracescore`` stays instant (the CLI and every submodule import it first); the eval
    # runner and its pipeline dependencies load on first use of ``tracescore.run_evals``.
    if name in _LAZY:
        from tracescore.offline import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'tracescore' has no attribute {name!r}")

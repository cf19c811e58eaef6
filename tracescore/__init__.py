"""tracescore: score AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracescore.offline.runner import EvalResult, ItemResult, arun_evals, run_evals
    from tracescore.version import __version__

_LAZY = {"run_evals", "arun_evals", "EvalResult", "ItemResult"}
__all__ = ["EvalResult", "ItemResult", "__version__", "arun_evals", "run_evals"]


def __getattr__(name: str) -> Any:
    # ``import tracescore`` stays instant (the CLI and every submodule import it first); the eval
    # runner and its pipeline dependencies load on first use of ``tracescore.run_evals``, and
    # the version on first use too: reading it from the installed metadata scans sys.path's
    # distributions (~0.02 s of CPU), which each helper process paid for a version it never used.
    if name == "__version__":
        from tracescore.version import __version__

        return __version__
    if name in _LAZY:
        from tracescore.offline import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'tracescore' has no attribute {name!r}")

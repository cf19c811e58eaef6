"""tracescore: score AI agents from their OpenTelemetry traces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracescore.lazy_names import lazy_names

if TYPE_CHECKING:
    from tracescore.offline.runner import EvalResult, ItemResult, arun_evals, run_evals
    from tracescore.version import __version__

__all__ = ["EvalResult", "ItemResult", "__version__", "arun_evals", "run_evals"]

# ``import tracescore`` stays instant (the CLI and every submodule import it first): the eval
# runner and its pipeline dependencies load on first use of ``tracescore.run_evals``, and the
# version on first use too, since reading it from the installed metadata scans sys.path's
# distributions (~0.02 s of CPU), which each helper process paid for a version it never used.
__getattr__ = lazy_names(
    globals(),
    {
        "__version__": "tracescore.version",
        **dict.fromkeys(
            ("run_evals", "arun_evals", "EvalResult", "ItemResult"), "tracescore.offline.runner"
        ),
    },
)

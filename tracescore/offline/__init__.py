"""Scoring without the collector: files and datasets for CI, backfills of stored traces, the demo.

``run_evals`` is the Python entry point (Mastra's ``runEvals``); the ``tracescore score``,
``rescore``, ``compare`` and ``demo`` commands are built on the modules here.
"""

from tracescore.offline.runner import EvalResult, ItemResult, arun_evals, run_evals

__all__ = ["EvalResult", "ItemResult", "arun_evals", "run_evals"]

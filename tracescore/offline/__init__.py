"""Scoring without the collector: files and datasets for CI, backfills of stored traces, the demo.

``tracescore.run_evals`` (:mod:`tracescore.offline.runner`) is the Python entry point, Mastra's
``runEvals``; the ``tracescore score``, ``rescore``, ``compare`` and ``demo`` commands are built
on the modules here. Nothing is imported by this package itself, so ``tracescore demo`` does not
load the scoring stack.
"""

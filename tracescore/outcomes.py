"""What a stored score's reason says about its run, shared by the scorers that write it and the
store's aggregates that count it (a module of its own so that importing the scorers does not
load the store and SQLAlchemy, nor the store the scorers)."""

from __future__ import annotations

FAILED_RUN_REASON = "the run ended in error before answering: "
"""How the reason of a run that failed before answering starts (the run's error follows): the
score is ``not_scorable``, and error-rate figures count such rows as errors by this prefix."""

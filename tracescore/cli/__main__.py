"""``python -m tracescore.cli``: what the ``tracescore`` script runs."""

from tracescore.cli import app

app()

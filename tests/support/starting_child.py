"""A helper process for tests of :mod:`tracescore.helper_processes`: its import takes
``import_seconds`` (a child's imports and warm-up), and it marks in ``marks`` how far it got:
``main`` once its imports are done, ``finished`` once its own loop saw the service's stop."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tracescore import helper_processes

_SETTINGS = helper_processes.settings()
time.sleep(_SETTINGS["import_seconds"])


def _mark(name: str) -> None:
    (Path(_SETTINGS["marks"]) / name).touch()


def main() -> None:
    _mark("main")
    helper_processes.started()
    while os.read(0, 1024):  # wake-ups, until the service closes the pipe
        pass
    _mark("finished")

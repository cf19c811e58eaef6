"""An insights pass's helper process (:class:`~tracescore.helper_processes.OneShot`, started by
:class:`~tracescore.insights.task.InsightsLeader`).

Light to import: it watches its service's pipe before importing the pass's code (a second or
more of imports, several on a loaded machine), so a service killed meanwhile leaves nothing
behind. It runs :data:`PASS_NICENESS` lower than its service and without the cyclic garbage
collector: a rebuild makes millions of objects that reference counting frees, and what cycles
a pass leaves go with the process, which ends with the pass.
"""

from __future__ import annotations

import gc
import logging
import os
import sys

from tracescore.helper_processes import exit_after_service, log_to_stderr

PASS_NICENESS = 10
"""How much lower than its service a pass's process is scheduled (``nice``): below the reader
processes (5), since nobody waits on a pass."""


def main() -> None:
    """Watch the service, lower the priority, then run the pass of the process's settings."""
    log_to_stderr(logging.WARNING)
    exit_after_service(sys.stdin.fileno(), 0.0, "insights pass")
    os.nice(PASS_NICENESS)
    gc.disable()
    from tracescore.insights.task import run_child

    run_child()

"""Holder ids of processes that have ended, as a service killed and restarted leaves behind."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO

_PRINT_OWNER_ID = "from tracescore.owners import owner_id; print(owner_id())"


def ended_owner() -> str:
    """The holder id of a real process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_OWNER_ID],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return done.stdout.strip()

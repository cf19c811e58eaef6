"""Schema creation is safe when several replicas open an empty PostgreSQL at the same moment."""

from __future__ import annotations

import subprocess
import sys
import time

OPEN_AT = """
import sys, time
from tracescore.store import open_store
start = float(sys.argv[2])
while time.time() < start:
    pass
open_store(sys.argv[1]).close()
"""


def test_replicas_starting_together_all_create_the_schema(empty_pg_url: str) -> None:
    start = time.time() + 3.0  # every process has imported tracescore by then
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AT, empty_pg_url, str(start)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    failures = [p.communicate()[1] for p in processes if p.wait() != 0]
    assert failures == []

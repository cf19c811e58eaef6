"""Who holds a lease: an id naming this process, and whether the process an id names has ended.

Leases (the feedback scan, alert evaluation, retention, insights, a re-score) pass to another
instance when their holder stops renewing them, after up to a minute. When the holder was
killed on this very machine (``kill -9``, an out-of-memory kill) and the service restarted, the
new process can see that the old one is gone and take over at once rather than wait out the
lease: :func:`has_ended` is that check.

An id is ``host:pid:start:pidns:random``: the host name, the process id, the process's start
time (clock ticks since boot, from ``/proc``), its PID namespace and a random part that tells
apart the holders within one process. A process is known to have ended only where all of that
can be checked: the same host name and the same PID namespace (another container may reuse the
host name, never its namespace), and no live process with that id and start time (a pid can be
reused, its start time cannot). Anything else (another machine, an id of an older release, a
system without ``/proc``) is "not known to have ended", and its lease runs out as before.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

_PROC = Path("/proc")


def owner_id() -> str:
    """A new holder id for this process (see the module's docstring)."""
    pid = os.getpid()
    return (
        f"{socket.gethostname()}:{pid}:{_started(pid) or 0}:{_pid_namespace() or 0}:"
        f"{uuid.uuid4().hex[:8]}"
    )


def has_ended(owner: str) -> bool:
    """Whether ``owner`` names a process of this host and PID namespace that no longer runs
    (a zombie, killed but not yet reaped, has ended too)."""
    parts = owner.rsplit(":", 4)
    if len(parts) != 5 or not parts[1].isdigit():
        return False
    host, pid, started, namespace, _ = parts
    here = _pid_namespace()
    if host != socket.gethostname() or here is None or namespace != here:
        return False
    return _started(int(pid)) != started


def _started(pid: int) -> str | None:
    """The process's start time as ``/proc`` gives it; None if it is not running (or a zombie)."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _pid_namespace() -> str | None:
    """This process's PID namespace (``/proc/self/ns/pid``'s inode), None without ``/proc``."""
    try:
        return os.readlink(_PROC / "self" / "ns" / "pid").removeprefix("pid:[").removesuffix("]")
    except OSError:
        return None

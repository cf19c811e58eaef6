"""A service's helper processes (journal unpackers, scoring workers): started, watched,
replaced when they die, stopped with a deadline, and never left behind.

Each is a plain ``python -c`` subprocess running one module's ``main()``, not a
``multiprocessing`` one: spawn would start multiprocessing's resource tracker too (a 15 MB
process, for nothing to track) and re-import the service's main module in every child. The
program takes the service's ``sys.path`` first (as spawn does), so it imports the very
``tracescore`` its service runs: not, say, a source checkout in the working directory, which
``-c`` would put first.

- **Settings** travel as JSON in an environment variable, not on the command line, which every
  user of the machine can read (a store URL may hold a password).
- **Lifetime**: the child's standard input is a pipe from the service. The service writes
  wake-ups to it; its end closes however the service ends (stopped, or killed), which the child
  sees as end-of-file: it then winds down and exits within its ``shutdown_timeout``.
- **Reports**: the child writes JSON lines to its standard output (counts for the service's
  metrics); a thread of the service reads them.
- **Revival**: a child that dies (killed, out of memory) is replaced by :meth:`Child.revive`,
  which the service calls every second; one that keeps dying young (a database it cannot open,
  say) is restarted after 1, 2, 4 … 60 s.
- **Leftovers**: a child whose service was killed while it still had work could live on for up
  to its deadline; a service starting on the same store ends such children first
  (:func:`stop_leftovers`).
- **Shutdown**: a stopping service marks its children as not to be replaced
  (:func:`service_stopping`) and their owners stop them: the intake tells its unpackers to wind
  down as soon as the web server has stopped (:meth:`Child.wind_down`), and each owner's
  :meth:`Child.stop` then waits for its child, ending it a grace period past its
  ``shutdown_timeout``. A service whose own shutdown is stuck kills those still running
  (:func:`kill_all`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger(__name__)


def log_to_stderr(level: int) -> None:
    """Log lines as the service and every helper process writes them: the time in UTC, 24-hour,
    to the millisecond (``2026-05-04T12:00:00.250Z WARNING tracescore.…: …``). The scoring and
    unpacking processes wrote none, so their warnings could not be put beside the service's."""
    formatter = logging.Formatter(
        "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"
    )
    formatter.converter = time.gmtime
    handler = logging.StreamHandler()
    handler.setFormatter(formatter)
    logging.basicConfig(level=level, handlers=[handler])


_SETTINGS_VARIABLE = "TRACESCORE_CHILD_SETTINGS"
_PATH_VARIABLE = "TRACESCORE_CHILD_SYS_PATH"
_MARK = "tracescore child:"
"""Starts every child's program text, so its command line tells what it is."""
_YOUNG_SECONDS = 30.0
"""A child that dies sooner after its start is restarted after a growing delay."""
_MAX_BACKOFF_SECONDS = 60.0
EXIT_GRACE_SECONDS = 5.0
"""How long past its shutdown deadline a stopped child may take before it is ended."""
_STARTED: list[Child] = []
"""This process's children, for :func:`service_stopping` and :func:`kill_all`."""
_TERM_PAUSE_SECONDS = 3.0
"""How long a child ended by SIGTERM waits to be replaced (see :meth:`Child.revive`)."""


def _program(module: str, quits_while_starting: bool) -> str:
    # The terminal's Ctrl-C reaches the whole process group: the service handles it and then
    # closes the pipe. Ignored before the imports, or a child still importing would die with
    # a KeyboardInterrupt traceback instead of finishing its work.
    watch = (
        "from tracescore.helper_processes import quit_if_stopped_while_starting\n"
        "quit_if_stopped_while_starting(sys.stdin.fileno())\n"
    )
    return (
        f"# {_MARK} {module}\n"
        "import json, os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        f"sys.path[:] = json.loads(os.environ.pop({_PATH_VARIABLE!r}))\n"
        "from tracescore.batch_gc import freeze_at_exit\n"
        "freeze_at_exit()\n"
        f"{watch if quits_while_starting else ''}"
        f"from {module} import main\n"
        "main()\n"
    )


def _popen(
    module: str, settings: Mapping[str, Any], stdin: int, quits_while_starting: bool = False
) -> subprocess.Popen[bytes]:
    """``module.main()`` started with ``settings`` (see the module), reports on its stdout."""
    return subprocess.Popen(
        [sys.executable, "-c", _program(module, quits_while_starting)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        env={
            **os.environ,
            _SETTINGS_VARIABLE: json.dumps(settings),
            _PATH_VARIABLE: json.dumps(sys.path),
        },
    )


class Child:
    """One helper process of this service, running ``module.main()`` with ``settings``.

    ``settings`` must hold ``store_url`` and ``shutdown_timeout``; ``collector_pid`` is added
    (the service's process id), which tells a leftover from a live service's child.
    """

    def __init__(
        self,
        name: str,
        module: str,
        settings: Mapping[str, Any],
        on_report: Callable[[dict[str, Any]], None] | None = None,
        *,
        quits_while_starting: bool = False,
    ) -> None:
        self.name = name
        self.module = module
        self.settings = {**settings, "collector_pid": os.getpid()}
        self._on_report = on_report
        self._quits_while_starting = quits_while_starting
        """A child with nothing to finish before it calls :func:`started` or is woken (a
        scoring worker; an unpacker, whose collector wakes it for each entry): its first
        process exits at once when stopped sooner (:func:`quit_if_stopped_while_starting`).
        Not a replacement, which may have entries its predecessor was woken for."""
        self._process: subprocess.Popen[bytes] | None = None
        self._wake_writer: int | None = None
        self._stopped = False
        self._service_stopping = False
        """Set by :func:`service_stopping`: an end from then on is not replaced."""
        self._started_at = 0.0
        self._backoff = 0.0
        self._retry_at: float | None = None
        """When a dead process is replaced (None: none is dead)."""
        self._lock = threading.Lock()
        """Held to write a wake-up and to close the pipe: a closed descriptor's number may be
        reused at once, and a late wake-up would then go to another file."""

    def start(self) -> None:
        reader, writer = os.pipe()
        os.set_blocking(writer, False)
        try:
            quits = self._quits_while_starting and self._process is None
            process = _popen(self.module, self.settings, reader, quits)
        except BaseException:
            os.close(writer)
            raise
        finally:
            os.close(reader)  # the child has its own copy
        self._started_at = time.monotonic()
        with self._lock:
            self._process, self._wake_writer = process, writer
        if self not in _STARTED:
            _STARTED.append(self)
        threading.Thread(
            target=self._read_reports, args=(process,), name=f"{self.name} reports", daemon=True
        ).start()

    def _read_reports(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                try:
                    report = json.loads(line)
                except ValueError:
                    log.warning(
                        "%s (pid %d) wrote an unexpected line: %r",
                        self.name,
                        process.pid,
                        line[:200],
                    )
                    continue
                if self._on_report is not None:
                    try:
                        self._on_report(report)
                    except Exception:
                        log.exception(
                            "%s (pid %d): a report could not be applied", self.name, process.pid
                        )

    @property
    def pid(self) -> int | None:
        """The current process's id (None before the first start)."""
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """How the current process ended: its exit status, or minus the signal that ended it
        (``-15`` terminated, ``-9`` killed by :meth:`stop` after its grace); None while it runs."""
        return self._process.poll() if self._process else None

    def revive(self) -> bool:
        """Start a new process in place of one that died (not one that was stopped), at once or,
        if it died young, once its backoff has passed; True when it did."""
        process = self._process
        if self._stopped or process is None or process.poll() is None:
            return False
        if self._service_stopping:
            log.info(
                "%s (pid %d) ended with exit code %s while the service stops",
                self.name,
                process.pid,
                process.returncode,
            )
            self._stopped = True
            return False
        now = time.monotonic()
        terminated = process.returncode == -signal.SIGTERM
        if self._retry_at is None:  # found dead just now
            young = now - self._started_at < _YOUNG_SECONDS
            self._backoff = min(max(2 * self._backoff, 1.0), _MAX_BACKOFF_SECONDS) if young else 0.0
            # A SIGTERM may have been sent to the whole process group (a container stop, `kill
            # -TERM -<pgid>`): the service then starts stopping a moment later (its event loop
            # may be busy when the signal comes), and the death is no fault. Said (and acted on) only once that moment has passed without it.
            self._retry_at = now + max(self._backoff, _TERM_PAUSE_SECONDS if terminated else 0.0)
            if not terminated:
                self._log_death(process)
        if now < self._retry_at:
            return False
        if terminated:
            self._log_death(process)
        self._retry_at = None
        self._close_pipe()
        self.start()
        return True

    def _log_death(self, process: subprocess.Popen[bytes]) -> None:
        log.error(
            "%s (pid %d) ended with exit code %s; starting a new one%s",
            self.name,
            process.pid,
            process.returncode,
            f" in {self._backoff:g} s" if self._backoff else "",
        )

    def notify(self) -> None:
        """Wake the child (an unpacker: a new entry is in the journal)."""
        with (
            self._lock,
            contextlib.suppress(BlockingIOError, OSError),
        ):  # a wake-up is pending already
            if self._wake_writer is not None:
                os.write(self._wake_writer, b"\0")

    def wind_down(self) -> None:
        """Tell the child to wind down (it exits by itself within its ``shutdown_timeout``) and
        not to be revived, without waiting for it."""
        self._stopped = True
        self._close_pipe()

    def kill(self) -> None:
        """End the process now if it still runs (SIGKILL)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()

    def stop(self) -> None:
        """Tell the child to wind down; it exits by itself within its ``shutdown_timeout``, and
        is ended if it has not a few seconds after that."""
        self.wind_down()
        if self._process is not None:
            _end(
                self.name,
                self._process,
                float(self.settings["shutdown_timeout"]) + EXIT_GRACE_SECONDS,
            )

    def _close_pipe(self) -> None:
        with self._lock:
            if self._wake_writer is not None:
                os.close(self._wake_writer)
                self._wake_writer = None


def _end(name: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for ``process`` up to ``timeout``, then terminate it (and kill it if need be)."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning("%s (pid %d) did not exit in time; terminating it", name, process.pid)
        process.terminate()
        try:
            process.wait(EXIT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def service_stopping() -> None:
    """This process's service has started stopping: a child that ends now (the same group
    signal may have ended it) is not replaced, and its end is no error."""
    for child in _STARTED:
        child._service_stopping = True


def kill_all() -> None:
    """Kill the children of this process still running (a service whose own shutdown is stuck
    ends them before it exits, rather than leave them to outlive it): their work is durable
    already, an unpacker's entries in the journal and a scoring worker's claims under leases."""
    for child in _STARTED:
        child.kill()


# ---------------------------------------------------------------------------- the child's side


class OneShot:
    """A helper process that does one piece of work and exits: ``module.main()`` with
    ``settings``, its last report line its answer (:meth:`run`). Started like a :class:`Child`
    (the service's ``sys.path``, settings in the environment, standard input a pipe from the
    service whose end the child watches with :func:`exit_after_service`), so it goes with its
    service however that ends; never revived: its owner runs the next one."""

    def __init__(self, module: str, settings: Mapping[str, Any]) -> None:
        self.module = module
        self.settings = {**settings, "collector_pid": os.getpid()}
        self._process: subprocess.Popen[bytes] | None = None
        self._ended = False
        self._lock = threading.Lock()

    def run(self) -> dict[str, Any]:
        """Start it and wait for its end; its last report. RuntimeError if it ended without
        one (it failed: its traceback went to the service's standard error; or was ended)."""
        reader, writer = os.pipe()
        try:
            with self._lock:
                if self._ended:
                    raise RuntimeError(f"{self.module}: ended before it started")
                process = self._process = _popen(self.module, self.settings, reader)
            os.close(reader)
            reader = -1
            assert process.stdout is not None
            lines = process.stdout.read().splitlines()
            process.wait()
        finally:
            for end in (reader, writer):
                if end >= 0:
                    os.close(end)
            with self._lock:
                self._process = None
        if process.returncode != 0 or not lines:
            raise RuntimeError(f"{self.module}: its process ended ({process.returncode})")
        return dict(json.loads(lines[-1]))

    def end(self) -> None:
        """End it now if it runs (and refuse to start it after)."""
        with self._lock:
            self._ended = True
            if self._process is not None:
                self._process.terminate()


def settings() -> dict[str, Any]:
    """This child's settings (in a child process)."""
    return dict(json.loads(os.environ[_SETTINGS_VARIABLE]))


def report(stream: TextIO, document: Mapping[str, Any]) -> None:
    """Send a report line to the service (nothing happens if it is gone)."""
    with contextlib.suppress(OSError, ValueError):
        stream.write(json.dumps(document) + "\n")
        stream.flush()


def exit_after_service(wake: int, timeout: float, what: str) -> None:
    """End this process ``timeout`` seconds after its service closes ``wake`` (its end of the
    pipe), whatever the process is doing then, a call stuck on a locked or unreachable database
    included.

    A thread watches the pipe for its hang-up without reading it (the child's own loop reads
    the wake-ups), and then arms a timer: neither depends on the child's loop, which may be
    what is stuck. The loop winds down by itself sooner when it can.
    """

    def watch() -> None:
        _wait_for_hangup(wake)
        time.sleep(timeout)
        log.warning("%s: its service stopped %g s ago; exiting now", what, timeout)
        os._exit(0)

    threading.Thread(target=watch, name="service watch", daemon=True).start()


def _wait_for_hangup(wake: int) -> None:
    """Return once the service's end of the pipe ``wake`` is closed; reads nothing."""
    poller = select.poll()
    poller.register(wake, select.POLLHUP)
    while not any(event & (select.POLLHUP | select.POLLERR) for _, event in poller.poll()):
        time.sleep(0.2)  # wake-ups are waiting to be read by the loop: look again shortly


_starting = threading.Lock()
_started = False
"""Whether this child has begun its work (:func:`started`)."""


def quit_if_stopped_while_starting(wake: int) -> None:
    """Exit at once (status 0) if the service closes ``wake`` before this child calls
    :func:`started` and before any wake-up came: called first thing, before the imports.

    A scoring process spends about a second of CPU on its imports and warm-up (the scorers, the
    language model) before it claims anything, an unpacker half a second before it looks at the
    journal, and each noticed its service's stop only after them: a service stopped within
    seconds of its start (as most of the test suite's are) waited for that CPU, spent for
    nothing. Until then a scoring process holds nothing, and an unpacker that was never woken
    has no entry of its collector to finish (its collector journals only after starting it,
    and wakes it for each entry); so the child can end mid-import. A wake-up is left unread,
    for the child's own loop."""

    def watch() -> None:
        poller = select.poll()
        poller.register(wake, select.POLLIN | select.POLLHUP)
        if any(event & select.POLLIN for _, event in poller.poll()):
            return  # woken: there is work, and the child's loop will see the stop after it
        with _starting:
            if not _started:
                os._exit(0)

    threading.Thread(target=watch, name="start watch", daemon=True).start()


def started() -> None:
    """This child begins its work: from now on a stop is its own loop's to honour
    (see :func:`quit_if_stopped_while_starting`)."""
    global _started
    with _starting:
        _started = True


# ---------------------------------------------------------------------------- leftovers


def stop_leftovers(store_url: str, timeout: float) -> list[int]:
    """End the helper processes of earlier services on this store that outlived them (on this
    host); returns their process ids.

    A service killed with SIGKILL leaves its children finishing their work for up to their
    ``shutdown_timeout``; a service started meanwhile on the same store must not run beside
    them. Such a leftover is recognised by its program and settings (in ``/proc``), and by its
    parent: no longer the service that started it. It is asked to stop (SIGTERM: an unpacker's
    entries are durable in the journal and adopted, a worker's leases expire), and killed after
    ``timeout``.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    leftovers = []
    for directory in proc.iterdir():
        if not directory.name.isdigit() or int(directory.name) == os.getpid():
            continue
        try:
            if _MARK.encode() not in (directory / "cmdline").read_bytes():
                continue
            environment = dict(
                item.split(b"=", 1)
                for item in (directory / "environ").read_bytes().split(b"\0")
                if b"=" in item
            )
            found = json.loads(environment[_SETTINGS_VARIABLE.encode()])
            parent = int((directory / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, KeyError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if found.get("store_url") == store_url and parent != found.get("collector_pid"):
            leftovers.append(int(directory.name))
    for pid in leftovers:
        log.warning("stopping process %d, left running by an earlier service on this store", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in leftovers:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return leftovers


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False

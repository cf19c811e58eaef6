"""The judge loop: one background event loop, in its own thread, on which judge calls run.

litellm takes seconds to import and imports hundreds more modules on its first request, and
every call then spends milliseconds of CPU building the request and parsing the answer. On the
service's event loop that would freeze ingest and the API during the imports and tax every
other coroutine afterwards; here they only share the GIL. It also gives litellm one long-lived
loop, so its connection pools outlive callers that each start their own (``Scorer.run_sync``).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
EXIT_WAIT_SECONDS = 5.0
"""How long a process's exit waits for the judge loop to finish what it is running."""


def judge_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            if _thread is None:
                atexit.register(_stop_at_exit)
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(
                target=_loop.run_forever, name="tracescore-judge", daemon=True
            )
            _thread.start()
        return _loop


def _stop_at_exit() -> None:
    """Stop the judge loop and wait for its thread as the process exits.

    A daemon thread still running at exit is frozen wherever it is, an import's lock held
    included (litellm imports modules lazily, on its loop), and a finalizer that imports
    afterwards (litellm's HTTP clients do in ``__del__``) then waited for that lock forever:
    the process hung at exit. Exit handlers run while daemon threads still run, so the loop
    can finish the step it is in and end."""
    with _lock:
        loop, thread = _loop, _thread
    if loop is None or thread is None or loop.is_closed():
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(EXIT_WAIT_SECONDS)


async def on_judge_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the judge loop; cancelling the caller cancels it there too."""
    loop = judge_loop()
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

"""The judge loop: one background event loop, in its own thread, on which judge calls run.

litellm takes seconds to import and imports hundreds more modules on its first request, and
every call then spends milliseconds of CPU building the request and parsing the answer. On the
service's event loop that would freeze ingest and the API during the imports and tax every
other coroutine afterwards; here they only share the GIL. It also gives litellm one long-lived
loop, so its connection pools outlive callers that each start their own (``Scorer.run_sync``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def judge_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_loop.run_forever, name="tracescore-judge", daemon=True
            )
            thread.start()
        return _loop


async def on_judge_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the judge loop; cancelling the caller cancels it there too."""
    loop = judge_loop()
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

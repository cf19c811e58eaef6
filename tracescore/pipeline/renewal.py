"""Lease renewal while claimed work is in hand.

A claim's lease is how the others learn that its holder died: once it expires, another worker
takes the trace (or conversation) again. Work that outlasts the lease while its holder is alive
(a big batch, a slow judge) must therefore renew it, or it is scored twice over, the first
holder's completion dropped, and a trace that always takes that long is claimed for ever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)
_T = TypeVar("_T")


async def renewing(
    work: Awaitable[_T], renew: Callable[[], object], lease_seconds: float, what: str
) -> _T:
    """Await ``work`` while calling ``renew`` (in a thread: it writes to the database) every
    third of ``lease_seconds``; a failed renewal is logged, and the next one (or the lease)
    decides."""

    async def keep_renewing() -> None:
        while True:
            await asyncio.sleep(lease_seconds / 3)
            try:
                await asyncio.to_thread(renew)
            except Exception as exc:  # noqa: BLE001 - the database may be restarting
                log.warning("renewing the lease of %s failed: %s", what, exc)

    renewals = asyncio.create_task(keep_renewing())
    try:
        return await work
    finally:
        renewals.cancel()
        await asyncio.gather(renewals, return_exceptions=True)


async def free_ended_claims(expire_ended_claims: Callable[[], int], what: str) -> None:
    """Free, as a worker starts, the ``what`` claimed by processes that have ended (a service
    killed and restarted), so they are scored again now rather than when their leases run out.
    A failure (the database still starting) is logged: the leases run out anyway."""
    try:
        freed = await asyncio.to_thread(expire_ended_claims)
    except Exception as exc:  # noqa: BLE001 - an optimisation of what expiry does anyway
        log.warning("could not free the %s of ended processes: %s", what, exc)
        return
    if freed:
        log.info("%d %s claimed by processes that have ended are taken again now", freed, what)

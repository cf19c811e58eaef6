"""The shape of a service's background work, in a leaf module: the stages that make it
(monitoring, retention, feedback scans, scoring) and the service that runs it share one type.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeAlias

BackgroundFactory: TypeAlias = Callable[[], Coroutine[Any, Any, None]]
"""Starts one background loop when called. An async function, not any awaitable: the service
and the scoring process hand what it returns to ``asyncio.create_task``, which takes only
coroutines, and keep the task to cancel it and to log its failure by name."""

"""A progress bar for long offline jobs: rich, on stderr, and only when stderr is a terminal.

Output piped to a file or read by CI must stay clean (JSON and CSV go to stdout, and a log file
full of bar redraws helps nobody), so the bar switches itself off without a TTY.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; the bar shows only on a terminal and for more than a handful of items."""
    if not sys.stderr.isatty() or total < 20:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)

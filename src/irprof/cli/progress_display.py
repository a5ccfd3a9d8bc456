"""The spinner that shows a command's current stage and its elapsed time on stderr.

Shown only when stderr is a terminal (never in pipes, logs or CI output), transient: it leaves no
line behind, and starts with the first stage a command reports, so quick commands print nothing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from irprof.progress import listen


@contextlib.contextmanager
def stage_spinner(*, force: bool = False) -> Iterator[None]:
    """Install a stage listener drawing a spinner on stderr (if stderr is a TTY, or `force`)."""
    if not (force or sys.stderr.isatty()):
        yield
        return
    console = Console(stderr=True, force_terminal=True if force else None)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task: TaskID | None = None

    def show(description: str) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task(description, total=None)
        else:
            progress.update(task, description=description)

    try:
        with listen(show):
            yield
    finally:
        if task is not None:
            progress.stop()

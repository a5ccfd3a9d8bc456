"""Stages of long work (capture, annotate, report, convert), told to whoever listens.

Library code says what it is doing with `stage("correlating level tf")`; nothing is printed
unless a listener was installed with `listen` (the CLI installs a spinner with the elapsed time on
stderr when stderr is a terminal). Stages nest: the innermost is shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

Listener = Callable[[str], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("irprof_progress_listener", default=None)
_STACK: ContextVar[tuple[str, ...]] = ContextVar("irprof_progress_stack", default=())


@contextlib.contextmanager
def stage(description: str) -> Iterator[None]:
    """Report `description` for the duration of the block, then the enclosing stage again."""
    listener = _LISTENER.get()
    stack = _STACK.get()
    token = _STACK.set((*stack, description))
    if listener is not None:
        listener(description)
    try:
        yield
    finally:
        _STACK.reset(token)
        if listener is not None and stack:
            listener(stack[-1])


@contextlib.contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Send every stage started inside the block to `listener`."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)

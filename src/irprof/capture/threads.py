"""The threads a capture profiles with when `--threads` is not given.

One by default: an op's time then does not hinge on how many cores are free, so rankings hold
on a busy machine (docs/views.md, "Busy machines"). `IRPROF_CAPTURE_THREADS=N` changes the
default for TF and JAX captures, e.g. on a dedicated machine, or to keep a test suite of many
captures fast.
"""

from __future__ import annotations

import os

from irprof.errors import UsageError

THREADS_VARIABLE = "IRPROF_CAPTURE_THREADS"


def default_threads() -> int:
    """`IRPROF_CAPTURE_THREADS` when set (an integer of at least 1), else 1."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{THREADS_VARIABLE}={text!r}: expected an integer of at least 1")
    return int(text)

"""The profiler tracer options a TF capture requests, and the check that they were honoured.

TF 2.21's `tf.profiler.experimental.start` silently drops its options (docs/frameworks.md), so the
capture compares what it asked for with the `profile_options` the XSpace recorded and refuses a
trace taken with anything else. Kept free of TensorFlow so the rule is testable on its own.
"""

from __future__ import annotations

from collections.abc import Mapping

DEVICE_TRACER_LEVEL = 1  # CPU-only here; level 1 is what xprof's client asks for by default


def requested_tracer_options(host_level: int, python_level: int) -> dict[str, int]:
    """The options dict xprof's `trace` client takes (and the XSpace records back)."""
    return {
        "host_tracer_level": host_level,
        "python_tracer_level": python_level,
        "device_tracer_level": DEVICE_TRACER_LEVEL,
    }


def tracer_options_mismatch(
    requested: Mapping[str, int], recorded: Mapping[str, int], where: str
) -> str | None:
    """Why `recorded` does not honour `requested`, or None when every level matches."""
    if not recorded:
        return f"{where}: the profiler recorded no profile_options; cannot tell what it traced"
    wrong = {
        name: (level, recorded.get(name))
        for name, level in requested.items()
        if recorded.get(name) != level
    }
    if not wrong:
        return None
    details = ", ".join(f"{name} asked {asked} got {got}" for name, (asked, got) in wrong.items())
    return f"{where}: the profiler ignored the requested tracer options ({details})"

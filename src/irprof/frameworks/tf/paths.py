"""Portable source paths in TensorFlow's IR locations: the rule every stack shares.

The rule lives in `capture/paths.py` (also used by `capture jax`); this module keeps its names.
Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/paths.py`.
"""

from __future__ import annotations

from irprof.capture.paths import (
    IMPORT_ROOT,
    LAUNCH_FILES,
    FrameFilter,
    make_paths_portable,
    own_frame_filter,
    portable_path_mapper,
    rewrite_location,
)

__all__ = [
    "IMPORT_ROOT",
    "LAUNCH_FILES",
    "FrameFilter",
    "make_paths_portable",
    "own_frame_filter",
    "portable_path_mapper",
    "rewrite_location",
]

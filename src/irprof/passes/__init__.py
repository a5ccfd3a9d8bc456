"""irprof passes (frozen dataclasses, options as fields) and the mixed native/irprof pipeline."""

from irprof.passes.base import ModulePass
from irprof.passes.registry import get_all_passes

__all__ = ["ModulePass", "get_all_passes"]

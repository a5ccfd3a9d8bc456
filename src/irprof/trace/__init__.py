"""The unified, columnar event model every reader produces and every later stage consumes."""

from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Flows, HloProgram, Trace, Tracks

__all__ = ["EventKind", "Flows", "HloProgram", "Trace", "TraceBuilder", "Tracks"]

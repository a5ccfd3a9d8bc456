"""irprof: join ML profiler traces to the MLIR operations that produced them."""

from irprof.errors import IrprofError, TraceFormatError

__version__ = "0.1.0"
__all__ = ["IrprofError", "TraceFormatError", "__version__"]

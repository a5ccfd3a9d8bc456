"""irprof: join ML profiler traces to the MLIR operations that produced them.

The package's face is `irprof.api`, re-exported here and imported on first use, so that
`import irprof` stays cheap and needs no framework:

    irprof.read_trace(path)                  -> Trace
    irprof.capture_model(framework, script, out) -> Run
    irprof.open_run(path)                    -> Run (trace(), ir(level), profile(level),
                                                     coverage(level), top(...))
    irprof.annotate(run, level=None)         -> AnnotateOutcome
    irprof.report(run, out=None)             -> Path
    irprof.open_dataset(path)                -> DuckDB relation of the events (rank datasets,
                                                Parquet traces, traces, run bundles)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from irprof.errors import (
    BundleError,
    CaptureError,
    CorrelationError,
    IrprofError,
    MlirError,
    PipelineError,
    TraceFormatError,
    UsageError,
)

if TYPE_CHECKING:
    from irprof.api import (
        Run,
        annotate,
        capture_model,
        open_dataset,
        open_run,
        read_trace,
        report,
    )

__version__ = "0.1.0"

# `capture_model`, not `capture`: importing the `irprof.capture` package would shadow a function.
_API = frozenset(
    {"Run", "annotate", "capture_model", "open_dataset", "open_run", "read_trace", "report"}
)


def __getattr__(name: str) -> Any:
    if name in _API:
        from irprof import api

        return getattr(api, name)
    raise AttributeError(f"module 'irprof' has no attribute {name!r}")


__all__ = [
    "BundleError",
    "CaptureError",
    "CorrelationError",
    "IrprofError",
    "MlirError",
    "PipelineError",
    "Run",
    "TraceFormatError",
    "UsageError",
    "__version__",
    "annotate",
    "capture_model",
    "open_dataset",
    "open_run",
    "read_trace",
    "report",
]

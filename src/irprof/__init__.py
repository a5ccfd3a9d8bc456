"""irprof: join ML profiler traces to the MLIR operations that produced them.

The package's face is `irprof.api`, re-exported here and imported on first use, so that
`import irprof` stays cheap and needs no framework:

    irprof.read_trace(path)                  -> Trace
    irprof.capture_model(framework, script, out) -> Run
    irprof.open_run(path)                    -> Run: annotate, top, report, diff, export, dag,
                                                roofline, graph, sql, profile, coverage, ...
    irprof.annotate(run, level=None)         -> AnnotateOutcome (= run.annotate(level))
    irprof.report(run, out=None)             -> Path (= run.report(out))
    irprof.trace_dag(path) / op_graph(mlir)  -> DagView / OpGraph of a trace or annotated file
    irprof.open_sql(path) / open_dataset(path) -> DuckDB over traces, datasets, run bundles
    irprof.summarize_trace(path)             -> TraceSummary of one trace file
    irprof.convert_trace(path, out)          -> events.json / Parquet / a rank dataset
    irprof.opt(mlir, pipeline)               -> the module after an `irprof opt` pipeline

The tour: docs/api.md.
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
        convert_trace,
        mlgo_dataset,
        op_graph,
        open_dataset,
        open_run,
        open_sql,
        opt,
        read_trace,
        report,
        summarize_trace,
        trace_dag,
    )

__version__ = "0.1.0"


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
    "convert_trace",
    "mlgo_dataset",
    "op_graph",
    "open_dataset",
    "open_run",
    "open_sql",
    "opt",
    "read_trace",
    "report",
    "summarize_trace",
    "trace_dag",
    "tune",
]

# The API's names are imported on first use (`capture_model`, not `capture`: importing the
# `irprof.capture` package would shadow a function); the rest of `__all__` is defined above.
_API = frozenset(name for name in __all__ if name not in globals())

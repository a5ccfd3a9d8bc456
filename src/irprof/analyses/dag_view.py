"""The event DAG of a trace and, when asked, one step's critical path on it (`irprof dag`).

When the trace is an annotated run bundle's own, the critical path names the IR ops each of its
events was attributed to. See docs/views.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from irprof.analyses.critical_path import CriticalPath, critical_path
from irprof.analyses.trace_export import load_trace_export
from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.event_dag.model import DagFilter, EventDag, build_event_dag
from irprof.trace.model import Trace


@dataclass(frozen=True)
class DagView:
    """An event DAG and the critical path asked for (None when not asked)."""

    dag: EventDag
    critical_path: CriticalPath | None


def dag_view(
    trace: Trace,
    *,
    source: str,
    bundle: RunBundle | None = None,
    mode: str = "causal",
    event_filter: DagFilter | None = None,
    with_critical_path: bool = False,
    step: int | None = None,
) -> DagView:
    """The DAG of `trace` (read from `source`; `bundle`: the annotated run it is the trace of)."""
    event_dag = build_event_dag(trace, mode, event_filter)
    if len(event_dag) == 0:
        raise UsageError(f"{source}: no event passes the filters; nothing to write")
    path = None
    if with_critical_path:
        path = critical_path(event_dag, step=step, ops_by_event=_ops_by_event(bundle), trace=trace)
    return DagView(event_dag, path)


def _ops_by_event(bundle: RunBundle | None) -> Callable[[str, int], tuple[str, ...]]:
    """(event name, start) -> `level: op` of every annotated op the event was attributed to
    (none for a trace that is not an annotated bundle's)."""
    if bundle is None or not bundle.annotated_levels():
        return lambda name, ts_ns: ()
    refs = load_trace_export(bundle).ops_by_event_name()

    def ops_at(name: str, ts_ns: int) -> tuple[str, ...]:
        return tuple(f"{r.level}: {r.name}" for r in refs.get(name, ()) if r.ran(ts_ns))

    return ops_at

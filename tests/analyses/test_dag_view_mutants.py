"""`dag_view`: the DAG of a trace (causal by default, filtered), the error when no event
passes the filters, and the critical path only when asked: of the step asked for, following
the trace's synchronisations, its events named by the annotated ops they were attributed to.

Written from the survivors of `analyses/dag_view.py`. The bundle is the views' synthetic TF
model (`tests/analyses/test_support.py`) with a Chrome trace written here: two profiler steps,
the Conv2D's kernel in the first, the MatMul's in the second (the longer step).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import irprof.analyses.dag_view as dag_view_module
from irprof.analyses.dag_view import dag_view
from irprof.analyses.trace_export import OpRef
from irprof.bundle import RunBundle
from irprof.errors import UsageError
from irprof.event_dag.model import DagFilter
from tests.analyses.test_support import make_bundle

CONV = "sequential/conv1/Conv2D"
MATMUL = "sequential/dense1/MatMul"


def bundle_with_trace(root: Path, *, annotate: bool = True) -> RunBundle:
    bundle = make_bundle(root, annotate=annotate)
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1,
         "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": f"{CONV}:Conv2D", "pid": 1, "tid": 1, "ts": 10,
         "dur": 50},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 200, "dur": 300},
        {"ph": "X", "cat": "cpu_op", "name": f"{MATMUL}:MatMul", "pid": 1, "tid": 1, "ts": 210,
         "dur": 200},
    ]  # fmt: skip
    (bundle.trace_dir / "t.json").write_text(json.dumps({"traceEvents": events}))
    manifest = dataclasses.replace(bundle.manifest(), trace_files=("trace/t.json",))
    bundle.write_manifest(manifest)
    return RunBundle(bundle.root)


def names_on_path(view_path: object) -> list[tuple[str, tuple[str, ...]]]:
    events = getattr(view_path, "events", ())
    return [(event.name, event.ops) for event in events]


def test_the_dag_alone_by_default(tmp_path: Path) -> None:
    bundle = bundle_with_trace(tmp_path / "run")
    view = dag_view(bundle.trace(), source="t.json", bundle=bundle)
    assert view.critical_path is None
    assert view.dag.mode == "causal"
    assert len(view.dag) == 4  # two steps, two kernels


def test_the_critical_path_of_each_step_names_its_ops(tmp_path: Path) -> None:
    bundle = bundle_with_trace(tmp_path / "run")
    trace = bundle.trace()
    longest = dag_view(trace, source="t.json", bundle=bundle, with_critical_path=True)
    path = longest.critical_path
    assert path is not None and path.step == 1 and path.steps == 2  # the longer step
    assert (f"{MATMUL}:MatMul", (f"tf: {MATMUL}",)) in names_on_path(path)
    assert path.syncs_followed  # the trace was given: its synchronisations were looked for
    first = dag_view(trace, source="t.json", bundle=bundle, with_critical_path=True, step=0)
    assert first.critical_path is not None and first.critical_path.step == 0
    assert (f"{CONV}:Conv2D", (f"tf: {CONV}",)) in names_on_path(first.critical_path)


def test_a_trace_without_its_annotated_bundle_names_no_ops(tmp_path: Path) -> None:
    bundle = bundle_with_trace(tmp_path / "run")
    for other in (None, bundle_with_trace(tmp_path / "bare", annotate=False)):
        view = dag_view(bundle.trace(), source="t.json", bundle=other, with_critical_path=True)
        assert view.critical_path is not None
        assert all(ops == () for _, ops in names_on_path(view.critical_path))


def test_filters_and_the_error_when_nothing_passes(tmp_path: Path) -> None:
    bundle = bundle_with_trace(tmp_path / "run")
    trace = bundle.trace()
    one = dag_view(trace, source="t.json", event_filter=DagFilter(name_regex="MatMul"))
    assert len(one.dag) == 1  # one node is a DAG
    long = dag_view(trace, source="t.json", event_filter=DagFilter(min_dur_ns=150_000))
    assert len(long.dag) == 2  # the second step (300 us) and the MatMul (200 us)
    with pytest.raises(UsageError) as error:
        dag_view(trace, source="t.json", event_filter=DagFilter(name_regex="nothing"))
    assert str(error.value) == "t.json: no event passes the filters; nothing to write"


def test_an_event_name_several_ops_ran_names_the_op_whose_event_starts_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ops share an event name (torch's `aten::linear`), the critical path names only the
    ops that list the event's start (210 us) among their own events', and every op that lists
    none; the annotated levels are replaced here by two refs of the MatMul's event name."""
    bundle = bundle_with_trace(tmp_path / "run")

    def ref(name: str, starts: frozenset[int]) -> OpRef:
        return OpRef("tf", 0, name, "tf.MatMul", "model.py:1", "main", starts=starts)

    refs: dict[str, tuple[OpRef, ...]] = {
        f"{MATMUL}:MatMul": (
            ref("mine", frozenset({210_000})),
            ref("other", frozenset({5_000})),
            ref("every", frozenset()),
        )
    }

    class Export:
        def ops_by_event_name(self) -> dict[str, tuple[OpRef, ...]]:
            return refs

    monkeypatch.setattr(dag_view_module, "load_trace_export", lambda bundle: Export())
    view = dag_view(bundle.trace(), source="t.json", bundle=bundle, with_critical_path=True)
    assert view.critical_path is not None
    assert (f"{MATMUL}:MatMul", ("tf: mine", "tf: every")) in names_on_path(view.critical_path)

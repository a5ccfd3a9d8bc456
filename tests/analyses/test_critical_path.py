"""Critical path of a step on the causal event DAG: hand-checked cases, a property on random
traces, the highlighted DOT, and `irprof dag --critical-path` on a real annotated capture."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irprof.analyses.critical_path import critical_path
from irprof.analyses.trace_export import load_trace_export
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.errors import UsageError
from irprof.event_dag import build_event_dag
from irprof.renderers.dag_dot import PATH_COLOR, render_dag_dot
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace
from tests.analyses.test_support import fixture_jax_bundle  # noqa: F401  (found by its name)

Event = tuple[str, int, int, int]  # name, track, start, end


def trace_of(*events: Event, flows: tuple[tuple[int, int], ...] = ()) -> Trace:
    builder = TraceBuilder()
    rows = []
    for name, track, start, end in events:
        kind = EventKind.STEP if name.startswith("step") else EventKind.RUNTIME
        rows.append(builder.add(start, end - start, builder.track(1, track), name, kind))
    for number, (src, dst) in enumerate(flows):
        builder.flow(rows[src], rows[dst], number)
    return builder.build()


def names(trace: Trace, step: int | None = None) -> list[str]:
    path = critical_path(build_event_dag(trace), step=step)
    return [event.name for event in path.events]


def test_nested_chain_outweighs_a_shorter_concurrent_event() -> None:
    trace = trace_of(("A", 1, 0, 100), ("B", 1, 10, 40), ("C", 1, 50, 90), ("D", 2, 20, 80))
    path = critical_path(build_event_dag(trace))
    assert [event.name for event in path.events] == ["A", "B", "C"]
    assert {event.name: event.self_ns for event in path.events} == {"A": 30, "B": 30, "C": 40}
    assert path.length_ns == 100 == path.span_ns


def test_a_flow_carries_the_path_to_the_work_it_started() -> None:
    # L launches K on another track; M follows L on the launching track.
    trace = trace_of(("L", 1, 0, 10), ("M", 1, 20, 30), ("K", 2, 15, 115), flows=((0, 2),))
    path = critical_path(build_event_dag(trace))
    assert [event.name for event in path.events] == ["L", "K"]
    assert path.length_ns == 110


def test_a_caller_waiting_for_work_it_handed_off_is_not_busy() -> None:
    # W calls X, which hands Y to another track; W blocks until Y is done.
    trace = trace_of(("W", 1, 0, 100), ("X", 1, 0, 10), ("Y", 2, 5, 95), flows=((1, 2),))
    path = critical_path(build_event_dag(trace))
    assert [event.name for event in path.events] == ["W", "X", "Y"]
    assert {event.name: event.self_ns for event in path.events} == {"W": 5, "X": 0, "Y": 90}
    assert path.length_ns == 95


def test_without_the_flow_the_tracks_are_independent() -> None:
    trace = trace_of(("L", 1, 0, 10), ("M", 1, 20, 30), ("K", 2, 15, 115))
    assert names(trace) == ["K"]


def test_a_nested_chain_returns_to_its_callers_next_event() -> None:
    # P's last child ends, then P's sibling Q follows: one chain P -> c -> Q.
    trace = trace_of(("P", 1, 0, 50), ("c", 1, 5, 45), ("Q", 1, 60, 100), ("R", 2, 0, 70))
    assert names(trace) == ["P", "c", "Q"]


def test_steps_are_windows_and_markers_are_not_work() -> None:
    trace = trace_of(
        ("step0", 1, 0, 100),
        ("a", 2, 10, 30),
        ("step1", 1, 100, 300),
        ("b", 2, 110, 200),
        ("c", 2, 210, 290),
    )
    assert names(trace, step=0) == ["a"]
    assert names(trace) == ["b", "c"]  # default: the longest step
    with pytest.raises(UsageError, match=r"steps 0\.\.1"):
        names(trace, step=2)


intervals = st.lists(
    st.tuples(st.integers(1, 3), st.integers(0, 200), st.integers(0, 60)), min_size=1, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(intervals, st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=6))
def test_path_work_never_exceeds_the_window(
    spans: list[tuple[int, int, int]], links: list[tuple[int, int]]
) -> None:
    events = [
        (f"e{i}", track, start, start + length) for i, (track, start, length) in enumerate(spans)
    ]
    flows = tuple((a, b) for a, b in links if a < len(events) and b < len(events) and a != b)
    path = critical_path(build_event_dag(trace_of(*events, flows=flows)))
    assert 0 < path.length_ns <= path.span_ns or path.length_ns == 0
    assert path.length_ns == sum(event.self_ns for event in path.events)
    assert all(event.self_ns <= event.dur_ns for event in path.events)


def test_dot_draws_the_path_even_past_the_node_limit() -> None:
    trace = trace_of(*(("x", 2, 10 * i, 10 * i + 9) for i in range(20)), ("tiny", 1, 0, 1))
    dag = build_event_dag(trace)
    tiny = next(node for node in range(len(dag)) if dag.node_name(node) == "tiny")
    dot = render_dag_dot(dag, max_nodes=3, highlight=(tiny,))
    assert f"n{tiny} [" in dot and "penwidth=3" in dot and PATH_COLOR in dot
    assert "critical path: 1 events" in dot


def test_path_of_a_real_capture_names_the_ir_ops_of_its_kernels(jax_bundle: RunBundle) -> None:
    refs = load_trace_export(jax_bundle).ops_by_event_name()
    ops = {name: tuple(f"{r.level}: {r.name}" for r in found) for name, found in refs.items()}
    path = critical_path(
        build_event_dag(jax_bundle.trace()), ops_by_event=lambda name, ts: ops.get(name, ())
    )
    assert 0 < path.length_ns <= path.span_ns
    conv = [event for event in path.events if event.name == "conv_general_dilated.1"]
    assert conv and all(e.ops == ("stablehlo: jit(mlp)/conv_general_dilated",) for e in conv)
    assert all(event.ops == ops.get(event.name, ()) for event in path.events)


def test_cli_lists_the_path_with_its_ir_ops(
    jax_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dot = tmp_path / "dag.dot"
    argv = ["dag", str(jax_bundle.root), "-o", str(tmp_path / "dag.json"), "--dot", str(dot)]
    assert main([*argv, "--critical-path"]) == 0
    out = capsys.readouterr().out
    assert "critical path of the whole trace" in out and "IR ops" in out
    assert PATH_COLOR in dot.read_text()
    assert main([*argv, "--critical-path", "--step", "3"]) == 2  # no step markers
    assert main([*argv, "--step", "0"]) == 2  # --step without --critical-path

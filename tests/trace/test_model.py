"""The columnar Trace and its builder: ordering, interning, args, selection, flows."""

from __future__ import annotations

import numpy as np
import pytest

from irprof.trace import EventKind, TraceBuilder


def _small_trace() -> TraceBuilder:
    builder = TraceBuilder()
    main = builder.track(1, 10, "python3", "main")
    worker = builder.track(1, 11, "python3", "worker")
    builder.add(500, 100, worker, "kernel", EventKind.KERNEL, {"hlo_op": "fusion.1"})
    builder.add(100, 1000, main, "step", EventKind.STEP)
    builder.add(200, 300, main, "aten::linear", EventKind.FRAMEWORK_OP, {"Input Dims": [[2, 3]]})
    builder.add(100, 50, main, "aten::linear", EventKind.FRAMEWORK_OP)
    builder.flow(2, 0, 7)  # aten::linear -> kernel, rows before sorting
    return builder


def test_build_orders_by_start_then_longest_first() -> None:
    trace = _small_trace().build()
    assert trace.ts_ns.tolist() == [100, 100, 200, 500]
    # the longer event at the same start comes first, so parents precede children
    assert [trace.name_of(i) for i in range(4)] == [
        "step",
        "aten::linear",
        "aten::linear",
        "kernel",
    ]
    assert trace.dur_ns.dtype == np.int64 and trace.track.dtype == np.int32


def test_strings_are_interned_once() -> None:
    trace = _small_trace().build()
    assert trace.strings.count("aten::linear") == 1
    assert trace.name[1] == trace.name[2]


def test_args_follow_their_event_through_sorting() -> None:
    trace = _small_trace().build()
    assert trace.args(3) == {"hlo_op": "fusion.1"}
    assert trace.args(2) == {"Input Dims": [[2, 3]]}
    assert trace.args(0) == {}
    assert trace.arg_column("hlo_op") == [None, None, None, "fusion.1"]


def test_flows_are_remapped_when_rows_move() -> None:
    trace = _small_trace().build()
    assert len(trace.flows) == 1
    src, dst = int(trace.flows.src[0]), int(trace.flows.dst[0])
    assert trace.name_of(src) == "aten::linear" and trace.dur_ns[src] == 300
    assert trace.name_of(dst) == "kernel"


def test_select_keeps_rows_and_drops_dangling_flows() -> None:
    trace = _small_trace().build()
    kernels = trace.select(trace.rows_of_kind(EventKind.KERNEL))
    assert len(kernels) == 1 and kernels.name_of(0) == "kernel"
    assert kernels.args(0) == {"hlo_op": "fusion.1"}
    assert len(kernels.flows) == 0


def test_span_and_track_labels() -> None:
    trace = _small_trace().build()
    assert trace.span_ns() == (100, 1100)
    assert trace.tracks.label(0) == "python3/main"


@pytest.mark.parametrize("label", [k.label for k in EventKind])
def test_kind_labels_round_trip(label: str) -> None:
    assert EventKind.from_label(label).label == label


def test_track_names_given_later_fill_in() -> None:
    builder = TraceBuilder()
    row = builder.track(5, 6)
    builder.name_process(5, "/host:CPU")
    assert builder.track(5, 6, thread="tf_Compute") == row
    builder.add(0, 1, row, "x")
    trace = builder.build()
    assert trace.tracks.label(row) == "/host:CPU/tf_Compute"

"""Behaviour a user reads as numbers, pinned where a plausible one-line bug went unnoticed before.

Each test names the bug it catches: a reversed tie-break in B/E pairing, B args winning over E
args, coverage ratios swapped or 1.0 on nothing, trivial ops counted as non-trivial, device-plane
events not read as kernels, the device "Steps" line, picosecond rounding.
"""

from __future__ import annotations

import json
from pathlib import Path

from irprof.coverage import Coverage, load_coverages, save_coverages
from irprof.mlir.context import make_context
from irprof.mlir.keys import parse_origin
from irprof.mlir.load import load_module
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import derive_op_keys
from irprof.readers import read_trace
from irprof.readers.xplane_proto.xplane_pb2 import XSpace
from irprof.trace.model import EventKind

FIXTURES = Path(__file__).parent / "fixtures"


def _chrome(tmp_path: Path, events: list[dict[str, object]]) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_back_to_back_slices_on_one_thread_pair_in_order(tmp_path: Path) -> None:
    # GIVEN B@0 E@5 B@5 E@10 on one thread (the second B starts when the first E ends)
    events = [
        {"ph": "B", "name": "first", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "B", "name": "second", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10},
    ]
    trace = read_trace(_chrome(tmp_path, events))
    # THEN two 5 us slices, not one of 10 us and one of 0 us
    durations = {trace.name_of(row): int(trace.dur_ns[row]) for row in range(len(trace))}
    assert durations == {"first": 5000, "second": 5000}


def test_end_args_override_begin_args_on_a_shared_key(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "op", "pid": 1, "tid": 1, "ts": 0, "args": {"k": "begin", "b": 1}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3, "args": {"k": "end", "e": 2}},
    ]
    trace = read_trace(_chrome(tmp_path, events))
    assert trace.args(0) == {"k": "end", "b": 1, "e": 2}


def test_time_and_op_coverage_are_different_ratios() -> None:
    coverage = Coverage(
        level="tf",
        profiled_ns=1000,
        attributed_ns=900,
        ops_total=12,
        ops_nontrivial=8,
        ops_annotated=3,
        ops_nontrivial_annotated=2,
    )
    assert coverage.time_coverage == 0.9
    assert coverage.nontrivial_coverage == 0.25


def test_coverage_json_carries_the_ratios_a_reader_sees(tmp_path: Path) -> None:
    coverage = Coverage("tf", 1000, 900, 12, 8, 3, 2, ops_not_executed=2)
    save_coverages(tmp_path / "coverage.json", {"tf": coverage})
    record = json.loads((tmp_path / "coverage.json").read_text())["levels"]["tf"]
    assert (record["time_coverage"], record["nontrivial_coverage"]) == (0.9, 0.25)
    assert record["nontrivial_coverage_with_removed"] == 0.2  # 2 of 8 + 2 removed
    assert record["profiled_ns"] == 1000 and record["ops_not_executed"] == 2
    assert load_coverages(tmp_path / "coverage.json") == {"tf": coverage}


def test_nothing_profiled_is_zero_coverage_not_full() -> None:
    coverage = Coverage("tf", 0, 0, 3, 2, 0, 0)
    assert coverage.time_coverage == 0.0 and coverage.nontrivial_coverage == 0.0


def test_an_annotated_trivial_op_is_counted_annotated_but_not_non_trivial() -> None:
    keyed = derive_op_keys(load_module(FIXTURES / "mlir" / "jax.stablehlo.mlir", make_context()))
    names = [op.name for op, _ in keyed]
    constant = names.index("stablehlo.constant")
    dot = names.index("stablehlo.dot_general")
    coverage = coverage_for(
        keyed, [constant, dot], level="stablehlo", profiled_ns=10, attributed_ns=10
    )
    assert (coverage.ops_total, coverage.ops_nontrivial) == (11, 6)
    assert coverage.ops_annotated == 2
    assert coverage.ops_nontrivial_annotated == 1  # the constant does not count as non-trivial


def _device_space() -> XSpace:
    space = XSpace()
    plane = space.planes.add(id=1, name="/device:GPU:0")
    for key, name in ((1, "volta_sgemm_128x64_nn"), (2, "step 7")):
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = name
    stream = plane.lines.add(id=5, name="Stream #13(Compute)", timestamp_ns=1_000)
    # 1,499 ps starts at 1.499 ns: rounds to 1 ns; 2,500 ps of duration: rounds half to even
    stream.events.add(metadata_id=1, offset_ps=1_499, duration_ps=2_500)
    steps = plane.lines.add(id=6, name="Steps", timestamp_ns=1_000)
    steps.events.add(metadata_id=2, offset_ps=0, duration_ps=10_000_000)
    return space


def test_device_plane_events_are_kernels_and_its_steps_line_is_steps(tmp_path: Path) -> None:
    path = tmp_path / "gpu.xplane.pb"
    path.write_bytes(_device_space().SerializeToString())
    trace = read_trace(path)
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds == {"volta_sgemm_128x64_nn": EventKind.KERNEL, "step 7": EventKind.STEP}
    (kernel,) = [row for row in range(len(trace)) if trace.name_of(row).startswith("volta")]
    assert int(trace.ts_ns[kernel]) == 1_001
    assert int(trace.dur_ns[kernel]) in (2, 3)  # 2.5 ns: never 0, never the raw 2,500
    assert int(trace.dur_ns[trace.name.tolist().index(trace.string_id("step 7"))]) == 10_000


def test_a_steps_line_on_the_host_plane_is_not_a_step(tmp_path: Path) -> None:
    space = XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "work"
    line = plane.lines.add(id=5, name="Steps", timestamp_ns=0)
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=5_000)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    trace = read_trace(path)
    assert EventKind(int(trace.kind[0])) == EventKind.RUNTIME


def test_end_args_merge_into_a_begin_without_args(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "op", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 2, "args": {"e": 2}},
    ]
    trace = read_trace(_chrome(tmp_path, events))
    assert trace.args(0) == {"e": 2}


def test_an_xprof_long_name_must_end_with_the_event_type_to_be_a_tf_op(tmp_path: Path) -> None:
    # xprof's trace_viewer names a TF op event by its type; `long_name` is "node:type"
    events = [
        {"ph": "X", "name": "MatMul", "pid": 1, "tid": 1, "ts": 0, "dur": 2,
         "args": {"long_name": "dense/MatMul:MatMul"}},
        {"ph": "X", "name": "Relu", "pid": 1, "tid": 1, "ts": 3, "dur": 2,
         "args": {"long_name": "dense/MatMul:MatMul"}},
    ]  # fmt: skip
    trace = read_trace(_chrome(tmp_path, events))
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds["MatMul"] == EventKind.FRAMEWORK_OP
    assert kinds["Relu"] != EventKind.FRAMEWORK_OP  # its long_name names another op


def test_an_origin_stamp_needs_a_level_and_an_index() -> None:
    assert parse_origin("torch#12") == ("torch", 12)
    assert parse_origin("#3") is None and parse_origin("torch#") is None
    assert parse_origin("torch") is None and parse_origin("torch#x") is None

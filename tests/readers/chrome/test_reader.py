"""Chrome Trace Event JSON reader: phases, units, nesting, flows, metadata, real fixtures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from irprof.readers import read_trace
from irprof.trace.model import EventKind, Trace


def write_trace(tmp_path: Path, document: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def by_name(trace: Trace, name: str) -> list[int]:
    return [row for row in range(len(trace)) if trace.name_of(row) == name]


def test_relative_microseconds_are_converted_to_exact_integer_nanoseconds(tmp_path: Path) -> None:
    # GIVEN large relative microsecond timestamps with nanosecond fractions (float64 territory)
    events = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1700000000123.456, "dur": 10.001},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4000000000999.999, "dur": 0.001},
    ]
    # WHEN read
    trace = read_trace(write_trace(tmp_path, {"traceEvents": events}))
    # THEN every nanosecond is kept
    assert trace.ts_ns.tolist() == [1700000000123456, 4000000000999999]
    assert trace.dur_ns.tolist() == [10001, 1]
    assert trace.names() == ["a", "b"]


def test_epoch_microseconds_beyond_float_precision_are_read_exactly(tmp_path: Path) -> None:
    # GIVEN epoch microseconds: a float64 holds 1700000000123456.789 only to ~0.25 us
    text = (
        '[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1700000000123456.789,"dur":1.5},'
        '{"ph":"X","name":"b","pid":1,"tid":1,"ts":1700000000123457.001,"dur":0.25}]'
    )
    path = tmp_path / "epoch.json"
    path.write_text(text)
    trace = read_trace(path)
    assert trace.ts_ns.tolist() == [1700000000123456789, 1700000000123457001]
    assert trace.dur_ns.tolist() == [1500, 250]


def test_kineto_base_time_makes_timestamps_epoch(tmp_path: Path) -> None:
    document = {
        "baseTimeNanoseconds": 1790857026000000000,
        "displayTimeUnit": "ms",
        "traceEvents": [{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 5.5, "dur": 1}],
    }
    trace = read_trace(write_trace(tmp_path, document))
    assert trace.ts_ns.tolist() == [1790857026000005500]
    # displayTimeUnit only changes how viewers display times: recorded, not applied.
    assert trace.metadata["display_time_unit"] == "ms"
    assert trace.dur_ns.tolist() == [1000]


def test_bare_array_form_and_missing_closing_bracket(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 2, "ts": 1, "dur": 2}]
    whole = read_trace(write_trace(tmp_path, events, "array.json"))
    streamed = tmp_path / "streamed.json"
    streamed.write_text(json.dumps(events)[:-1] + ",\n")
    cut = read_trace(streamed)
    assert whole.names() == cut.names() == ["a"]
    assert whole.ts_ns.tolist() == cut.ts_ns.tolist() == [1000]


def test_begin_end_pairs_nest_per_thread_and_unbalanced_ones_are_reported(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0, "args": {"a": 1}},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "B", "name": "other", "pid": 1, "tid": 2, "ts": 2},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10, "args": {"b": 2}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 5},
        {"ph": "B", "name": "never closed", "pid": 1, "tid": 3, "ts": 6},
    ]
    trace = read_trace(write_trace(tmp_path, events))
    assert trace.names() == ["outer", "inner", "other"]
    assert trace.dur_ns.tolist() == [10000, 2000, 2000]
    (outer,) = by_name(trace, "outer")
    assert trace.args(outer) == {"a": 1, "b": 2}  # E args merge into B's
    assert trace.tracks.label(int(trace.track[by_name(trace, "other")[0]])) == "1/2"
    assert any("without an open 'B'" in warning for warning in trace.warnings)
    assert any("never closed" in warning for warning in trace.warnings)


def test_instants_counters_and_metadata_names(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "trainer"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 3, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": 3, "args": {"sort_index": 1}},
        {"ph": "i", "name": "mark", "pid": 7, "tid": 3, "ts": 4, "s": "t"},
        {"ph": "C", "name": "memory", "pid": 7, "ts": 5, "args": {"bytes": 1024}},
        {"ph": "X", "name": "work", "pid": 7, "tid": 3, "ts": 1, "dur": 9},
    ]
    trace = read_trace(write_trace(tmp_path, {"traceEvents": events}))
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds == {
        "mark": EventKind.INSTANT,
        "memory": EventKind.COUNTER,
        "work": EventKind.OTHER,
    }
    (memory,) = by_name(trace, "memory")
    assert trace.args(memory) == {"bytes": 1024}
    (work,) = by_name(trace, "work")
    assert trace.tracks.label(int(trace.track[work])) == "trainer/main"
    assert trace.metadata["sort_index"] == {"thread_sort_index:7:3": 1}


def test_kineto_categories_map_to_kinds(tmp_path: Path) -> None:
    def event(cat: str, name: str, ts: int) -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1}

    events = [
        event("cpu_op", "aten::mm", 0),
        event("kernel", "gemm", 2),
        event("gpu_memcpy", "Memcpy HtoD", 4),
        event("python_function", "model.py(3): forward", 6),
        event("user_annotation", "ProfilerStep#3", 8),
        event("user_annotation", "my_region", 10),
        event("cuda_runtime", "cudaLaunchKernel", 12),
        {"ph": "X", "name": "fusion.2", "pid": 1, "tid": 1, "ts": 14, "dur": 1,
         "args": {"hlo_op": "fusion.2", "hlo_module": "jit_f"}},
    ]  # fmt: skip
    trace = read_trace(write_trace(tmp_path, {"traceEvents": events}))
    labels = [EventKind(int(kind)).label for kind in trace.kind]
    assert labels == [
        "framework_op",
        "kernel",
        "memcpy",
        "python",
        "step",
        "annotation",
        "runtime",
        "kernel",
    ]


def test_flow_start_binds_to_enclosing_slice_and_end_to_next_or_enclosing(tmp_path: Path) -> None:
    # GIVEN a CPU op launching a kernel (Kineto ac2g) and a classic s -> t -> f chain
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 20},
        {"ph": "X", "cat": "cuda_runtime", "name": "launch", "pid": 1, "tid": 1, "ts": 5, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 8},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": 0, "tid": 7, "ts": 30,
         "bp": "e"},
        {"ph": "X", "name": "A", "pid": 2, "tid": 1, "ts": 0, "dur": 4},
        {"ph": "X", "name": "B", "pid": 2, "tid": 2, "ts": 5, "dur": 4},
        {"ph": "X", "name": "C", "pid": 2, "tid": 3, "ts": 12, "dur": 4},
        {"ph": "s", "cat": "chain", "id": "0x1", "pid": 2, "tid": 1, "ts": 2},
        {"ph": "t", "cat": "chain", "id": "0x1", "pid": 2, "tid": 2, "ts": 6},
        {"ph": "f", "cat": "chain", "id": "0x1", "pid": 2, "tid": 3, "ts": 11},
    ]  # fmt: skip
    trace = read_trace(write_trace(tmp_path, {"traceEvents": events}))
    links = {
        (trace.name_of(int(src)), trace.name_of(int(dst)))
        for src, dst in zip(trace.flows.src, trace.flows.dst, strict=True)
    }
    # THEN the launch (innermost enclosing slice) links to the kernel; f without bp=e binds to
    # the next slice on its thread (C starts at 12, after the f at 11)
    assert links == {("launch", "gemm"), ("A", "B"), ("B", "C")}
    assert 9 in trace.flows.flow_id.tolist()


def test_non_object_args_are_wrapped_so_every_row_decodes_to_a_dict(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": None},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": 5},
        {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"k": "v"}},
    ]
    trace = read_trace(write_trace(tmp_path, events))
    assert [trace.args(row) for row in range(3)] == [{}, {"args": 5}, {"k": "v"}]


def test_gzip_is_transparent(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(events).encode()))
    assert read_trace(path).names() == ["a"]


def test_pytorch_fixture(fixtures: Path) -> None:
    trace = read_trace(fixtures / "traces" / "torch_mlp.trace.json.gz")
    ops = trace.rows_of_kind(EventKind.FRAMEWORK_OP)
    names = [trace.name_of(int(row)) for row in ops]
    # Two iterations of Linear -> ReLU -> Linear -> sum
    assert names.count("aten::linear") == 4
    assert names.count("aten::relu") == 2
    assert names.count("aten::addmm") == 4
    steps = [trace.name_of(int(row)) for row in trace.rows_of_kind(EventKind.STEP)]
    assert steps == ["ProfilerStep#0", "ProfilerStep#1"]
    first_linear = ops[names.index("aten::linear")]
    args = trace.args(int(first_linear))
    assert args["Input Dims"] == [[8, 32], [64, 32], [64]]
    assert "nn.Module: Linear_0" in args["Call stack"]
    # Kineto's baseTimeNanoseconds makes times epoch ns (after 2020-01-01)
    assert int(trace.ts_ns.min()) > 1_577_836_800_000_000_000
    # aten::linear nests inside its step annotation on the same thread
    step_rows = trace.rows_of_kind(EventKind.STEP)
    step_start, step_end = int(trace.ts_ns[step_rows[0]]), int(trace.end_ns[step_rows[0]])
    assert step_start <= int(trace.ts_ns[first_linear]) < step_end


def test_jax_perfetto_fixture(fixtures: Path) -> None:
    trace = read_trace(fixtures / "traces" / "jax_mlp.perfetto_trace.json.gz")
    kernels = trace.rows_of_kind(EventKind.KERNEL)
    assert len(kernels) == 21  # 7 thunks x 3 steps
    hlo_ops = {trace.args(int(row))["hlo_op"] for row in kernels}
    assert "ynn_fusion.1" in hlo_ops
    assert {trace.name_of(int(row)) for row in trace.rows_of_kind(EventKind.STEP)} == {"train"}
    assert {trace.tracks.thread[int(t)] for t in np.unique(trace.track)} >= {"python"}


def test_xprof_trace_viewer_fixture_agrees_with_its_xplane(fixtures: Path) -> None:
    # GIVEN xprof's trace_viewer JSON and the XSpace it was converted from
    viewer = read_trace(fixtures / "traces" / "tf_matmul.trace_viewer.json.gz")
    xplane = read_trace(fixtures / "traces" / "tf_matmul.xplane.pb")
    viewer_ops = viewer.rows_of_kind(EventKind.FRAMEWORK_OP)
    xplane_ops = xplane.rows_of_kind(EventKind.FRAMEWORK_OP)
    # THEN both readers find the same TF ops ("node:type" is the xplane name, the viewer's
    # long_name) with the same durations to the nanosecond
    viewer_pairs = sorted(
        (viewer.args(int(row))["long_name"], int(viewer.dur_ns[row])) for row in viewer_ops
    )
    xplane_pairs = sorted((xplane.name_of(int(row)), int(xplane.dur_ns[row])) for row in xplane_ops)
    assert viewer_pairs == xplane_pairs
    assert len(viewer_pairs) > 0

"""XPlane reader: XSpaces built in code (units, stats, refs, flows, epoch) and real fixtures."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from irprof.readers import read_trace
from irprof.readers.xplane_proto.profile_options_pb2 import ProfileOptions
from irprof.readers.xplane_proto.xplane_pb2 import XEvent, XPlane, XSpace, XStat
from irprof.trace.model import EventKind, Trace

START_NS = 1_795_000_000_000_000_000


def add_stat_names(plane: XPlane, names: list[str]) -> dict[str, int]:
    ids = {}
    for index, name in enumerate(names, start=1):
        plane.stat_metadata[index].id = index
        plane.stat_metadata[index].name = name
        ids[name] = index
    return ids


def task_environment(space: XSpace, options: ProfileOptions | None = None) -> None:
    plane = space.planes.add(name="Task Environment")
    ids = add_stat_names(plane, ["profile_start_time", "profile_stop_time", "profile_options"])
    plane.stats.add(metadata_id=ids["profile_start_time"], uint64_value=START_NS)
    plane.stats.add(metadata_id=ids["profile_stop_time"], uint64_value=START_NS + 10**9)
    if options is not None:
        plane.stats.add(metadata_id=ids["profile_options"], bytes_value=options.SerializeToString())


def host_space() -> XSpace:
    """A TF-like host plane: a step on the python line, two ops on an executor thread."""
    space = XSpace(hostnames=["box"])
    task_environment(space, ProfileOptions(host_tracer_level=3, python_tracer_level=1))
    plane = space.planes.add(id=0, name="/host:CPU")
    ids = add_stat_names(
        plane,
        ["step_num", "dbl", "u64", "i64", "str", "bytes", "ref", "kernel_name", "_p", "_pt",
         "_c", "_ct"],
    )  # fmt: skip
    metadata = {
        1: ("train", ""),
        2: ("dense/MatMul:_MklMatMul", "_MklMatMul"),
        3: ("ExecutorState::Process", ""),
        4: ("ThreadpoolListener::Record", ""),
        5: ("ThreadpoolListener::StartRegion", ""),
    }
    for key, (name, display) in metadata.items():
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = name
        plane.event_metadata[key].display_name = display
    python = plane.lines.add(id=11, name="python", timestamp_ns=1000)
    step = python.events.add(metadata_id=1, offset_ps=0, duration_ps=9_000_000)
    step.stats.add(metadata_id=ids["step_num"], int64_value=3)
    record = python.events.add(metadata_id=4, offset_ps=1_000_000, duration_ps=0)
    record.stats.add(metadata_id=ids["_p"], uint64_value=77)
    record.stats.add(metadata_id=ids["_pt"], int64_value=15)
    compute = plane.lines.add(id=22, name="tf_Compute/22", timestamp_ns=2000)
    region = compute.events.add(metadata_id=5, offset_ps=0, duration_ps=0)
    region.stats.add(metadata_id=ids["_c"], uint64_value=77)
    region.stats.add(metadata_id=ids["_ct"], int64_value=15)
    process = compute.events.add(metadata_id=3, offset_ps=500_400, duration_ps=4_000_200)
    op = compute.events.add(metadata_id=2, offset_ps=1_000_499, duration_ps=2_000_002)
    op.stats.extend(
        [
            XStat(metadata_id=ids["dbl"], double_value=1.5),
            XStat(metadata_id=ids["u64"], uint64_value=2**64 - 1),
            XStat(metadata_id=ids["i64"], int64_value=-5),
            XStat(metadata_id=ids["str"], str_value="text"),
            XStat(metadata_id=ids["bytes"], bytes_value=b"\x00\x01"),
            XStat(metadata_id=ids["ref"], ref_value=ids["kernel_name"]),
        ]
    )
    del process
    return space


def read_space(tmp_path: Path, space: XSpace) -> Trace:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return read_trace(path)


def row_named(trace: Trace, name: str) -> int:
    (row,) = [row for row in range(len(trace)) if trace.name_of(row) == name]
    return row


def test_times_are_epoch_ns_from_task_environment_with_ps_rounding(tmp_path: Path) -> None:
    trace = read_space(tmp_path, host_space())
    op = row_named(trace, "dense/MatMul:_MklMatMul")
    # line 2000 ns after profile start; start 1_000_499 ps -> 1000 ns, end 3_000_501 ps -> 3001
    assert int(trace.ts_ns[op]) == START_NS + 2000 + 1000
    assert int(trace.dur_ns[op]) == 2001
    process = row_named(trace, "ExecutorState::Process")
    # start 500.4 ns -> 500, end 4500.6 ns -> 4501: rounded ends keep the op nested inside
    assert int(trace.ts_ns[process]) == START_NS + 2000 + 500
    assert int(trace.end_ns[process]) == START_NS + 2000 + 4501
    assert trace.metadata["profile_start_time_ns"] == START_NS


def test_stats_of_every_kind_and_metadata_names_become_args(tmp_path: Path) -> None:
    trace = read_space(tmp_path, host_space())
    args = trace.args(row_named(trace, "dense/MatMul:_MklMatMul"))
    assert args == {
        "display_name": "_MklMatMul",
        "tf_op_name": "dense/MatMul",
        "tf_op_type": "_MklMatMul",
        "dbl": 1.5,
        "u64": 2**64 - 1,
        "i64": -5,
        "str": "text",
        "bytes": base64.b64encode(b"\x00\x01").decode(),
        "ref": "kernel_name",
    }


def test_kinds_tracks_flows_and_recorded_options(tmp_path: Path) -> None:
    trace = read_space(tmp_path, host_space())
    kinds = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert kinds == {
        "train": EventKind.STEP,
        "dense/MatMul:_MklMatMul": EventKind.FRAMEWORK_OP,
        "ExecutorState::Process": EventKind.RUNTIME,
        "ThreadpoolListener::Record": EventKind.INSTANT,
        "ThreadpoolListener::StartRegion": EventKind.INSTANT,
    }
    labels = {trace.tracks.label(row) for row in range(len(trace.tracks))}
    assert labels == {"/host:CPU/python", "/host:CPU/tf_Compute/22"}
    links = [
        (trace.name_of(int(src)), trace.name_of(int(dst)))
        for src, dst in zip(trace.flows.src, trace.flows.dst, strict=True)
    ]
    assert links == [("ThreadpoolListener::Record", "ThreadpoolListener::StartRegion")]
    assert trace.metadata["profile_options"]["host_tracer_level"] == 3
    assert trace.metadata["profile_options"]["python_tracer_level"] == 1
    assert trace.metadata["hostnames"] == ["box"]


def test_absolute_line_timestamps_are_not_shifted_again(tmp_path: Path) -> None:
    space = XSpace()
    task_environment(space)
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "scope"
    line = plane.lines.add(id=1, name="worker", timestamp_ns=START_NS + 5)
    line.events.append(XEvent(metadata_id=1, offset_ps=1000, duration_ps=1000))
    trace = read_space(tmp_path, space)
    assert trace.ts_ns.tolist() == [START_NS + 6]


def test_tensorflow_fixture(fixtures: Path) -> None:
    trace = read_trace(fixtures / "traces" / "tf_matmul.xplane.pb")
    ops = {trace.name_of(int(row)) for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP)}
    # host_tracer_level 3 records the cheap kernels (_Arg, _Retval) as well
    assert {"MatMul:_MklMatMul", "Relu:Relu", "x:_Arg", "identity_retval_RetVal:_Retval"} <= ops
    assert trace.metadata["profile_options"]["host_tracer_level"] == 3
    start = trace.metadata["profile_start_time_ns"]
    stop = trace.metadata["profile_stop_time_ns"]
    assert start <= int(trace.ts_ns.min()) and int(trace.end_ns.max()) <= stop
    threads = {trace.tracks.thread[int(track)] for track in np.unique(trace.track)}
    assert "python" in threads and any(t.startswith("tf_Compute/") for t in threads)
    assert len(trace.flows) > 0


def test_jax_fixture_keeps_hlo_programs_and_thunks(fixtures: Path) -> None:
    trace = read_trace(fixtures / "traces" / "jax_mlp.xplane.pb")
    programs = {program.name: program for program in trace.hlo_programs}
    assert "jit_mlp" in programs and programs["jit_mlp"].proto[:1] != b""
    thunks = trace.rows_of_kind(EventKind.KERNEL)
    assert len(thunks) == 21  # 7 thunks x 3 steps
    args = trace.args(int(thunks[0]))
    assert args["hlo_module"] == "jit_mlp"
    assert args["program_id"] == programs["jit_mlp"].program_id
    assert len(trace.rows_of_kind(EventKind.STEP)) == 3
    assert trace.metadata["plane_stats"]["/host:metadata"]["jax_version"] == "0.10.2"

"""`renderers/perfetto_proto.py` checked figure by figure: the achieved-GFLOP/s counter tracks
(FLOP / ns summed over the running op slices, computed here from the input), track descriptors,
slice placement on boundaries, annotations, counters and flow numbering."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import pytest

from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.trace_costs import CostedTraceExport, load_costed_trace_export
from irprof.analyses.trace_export import MeasuredEvents, TraceExport
from irprof.manifest import Manifest
from irprof.opprofile import ProfileData
from irprof.registry import load_reference
from irprof.renderers.perfetto_proto import RENDERER, perfetto_trace
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Tracks
from tests.renderers.test_perfetto_proto import annotations as notes_of
from tests.renderers.test_perfetto_proto import decode

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

MANIFEST = Manifest("tf", "m.py", "e", 1, "cpu", {}, ("tf",), ())


def descriptors(trace: Any) -> dict[int, Any]:
    return {
        p.track_descriptor.uuid: p.track_descriptor
        for p in trace.packet
        if p.HasField("track_descriptor")
    }


def by_name(trace: Any) -> dict[str, Any]:
    return {d.name: d for d in descriptors(trace).values()}


def op(index: int, kernel: str, **profile: Any) -> ProfiledOp:
    data = ProfileData(
        count=profile.get("count", 2),
        total_ns=profile.get("total_ns", 100),
        mean_ns=profile.get("mean_ns", 50),
        min_ns=1,
        max_ns=99,
        first_ts_ns=0,
        fraction=profile.get("fraction", 0.25),
        kernels=(kernel,),
        group=profile.get("group", ""),
        group_size=profile.get("group_size", 0),
        share_basis=profile.get("share_basis", ""),
    )
    return ProfiledOp(
        index=index,
        op_name=f"dialect.op{index}",
        function=profile.get("function", "main"),
        runtime_name=profile.get("runtime_name", f"rt{index}"),
        scope="",
        source=profile.get("source", f"model.py:{index}:1"),
        chain=(),
        location=f"loc{index}",
        profile=data,
        trivial=False,
    )


def module(*ops: ProfiledOp) -> ProfiledModule:
    return ProfiledModule("m.mlir", tuple(ops), {})


def counter_values(trace: Any, track_name: str) -> list[tuple[int, float]]:
    uuid = by_name(trace)[track_name].uuid
    return [
        (p.timestamp, p.track_event.double_counter_value)
        for p in trace.packet
        if p.HasField("track_event")
        and p.track_event.track_uuid == uuid
        and p.track_event.type == pb.TrackEvent.TYPE_COUNTER
    ]


def expected_rates(
    events: list[tuple[int, int, float]],
) -> list[tuple[int, float]]:
    """(start, duration, flops) -> the summed FLOP/ns after every change, one value per time."""
    times = sorted({t for start, dur, _ in events for t in (start, start + dur)})
    out = []
    for t in times:
        total = sum(work / dur for start, dur, work in events if start <= t < start + dur)
        out.append((t, max(0.0, round(total, 9))))
    return out


def flop_export() -> tuple[bytes, list[tuple[int, int, str]]]:
    builder = TraceBuilder()
    track = builder.track(3, 4, "proc", "stream")
    events = [(0, 100, "k1"), (50, 100, "k2"), (100, 100, "k3"), (150, 0, "k4"), (300, 30, "k5")]
    for start, dur, name in events:
        builder.add(start, dur, track, name, EventKind.KERNEL)
    levels = (
        ("hlo", module(op(0, "k1"), op(1, "k2"), op(2, "k3"), op(3, "k4"), op(4, "k5"))),
        ("tf", module(op(0, "k2"))),
    )
    flops = {
        ("hlo", 0): 1000.0,
        ("hlo", 1): 3000.0,
        ("hlo", 2): 500.0,
        ("hlo", 3): 7000.0,  # zero duration: no rate
        ("hlo", 4): 10.0,  # 1/3 FLOP/ns: the sum comes back to 0 exactly
        ("tf", 0): 4000.0,
    }
    export = CostedTraceExport(builder.build(), "t", MANIFEST, levels, flops_per_event=flops)
    return perfetto_trace(export, pb), events


def test_flop_rate_track_is_flops_over_duration_summed_over_running_ops() -> None:
    data, events = flop_export()
    trace = decode(data)
    work = {"k1": 1000.0, "k2": 3000.0, "k3": 500.0, "k5": 10.0}
    hlo = [(start, dur, work[name]) for start, dur, name in events if name in work]
    assert counter_values(trace, "achieved GFLOP/s · IR level hlo") == expected_rates(hlo)
    assert counter_values(trace, "achieved GFLOP/s · IR level tf") == expected_rates(
        [(50, 100, 4000.0)]
    )
    # k1 and k3 meet at 100: one value there, the sum after both changes (30 - 10 + 5).
    assert dict(counter_values(trace, "achieved GFLOP/s · IR level hlo"))[100] == 35.0
    tracks = by_name(trace)
    root = tracks["irprof IR"]
    for level in ("hlo", "tf"):
        rate = tracks[f"achieved GFLOP/s · IR level {level}"]
        assert rate.parent_uuid == root.uuid and rate.HasField("counter")
        assert not tracks[f"IR level {level}"].HasField("counter")
    assert not root.HasField("parent_uuid")
    ir_slices = {
        notes_of(p.track_event)["kernel"]: notes_of(p.track_event)
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
        and p.track_event.track_uuid == tracks["IR level hlo"].uuid
    }
    assert ir_slices["k1"]["flops"] == 1000 and ir_slices["k5"]["flops"] == 10
    assert type(ir_slices["k1"]["flops"]) is int  # an int annotation, not a double
    assert "flops" not in ir_slices["k4"]


def test_flop_rate_needs_a_costed_export() -> None:
    builder = TraceBuilder()
    track = builder.track(3, 4, "proc", "stream")
    builder.add(0, 10, track, "k1", EventKind.KERNEL)
    export = TraceExport(builder.build(), "t", MANIFEST, (("hlo", module(op(0, "k1"))),))
    names = set(by_name(decode(perfetto_trace(export, pb))))
    assert not any(name.startswith("achieved") for name in names)


def test_first_packet_and_sequence_ids() -> None:
    data, _ = flop_export()
    trace = decode(data)
    first = trace.packet[0]
    assert first.first_packet_on_sequence
    assert first.sequence_flags == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    assert all(p.trusted_packet_sequence_id == 1 for p in trace.packet)
    uuids = [p.track_descriptor.uuid for p in trace.packet if p.HasField("track_descriptor")]
    assert len(set(uuids)) == len(uuids) and min(uuids) > 1 << 20
    events = [p for p in trace.packet if p.HasField("track_event")]
    assert [p.timestamp for p in events] == sorted(p.timestamp for p in events)


def test_process_and_thread_descriptors_carry_ids_that_fit_int32() -> None:
    builder = TraceBuilder()
    small = builder.track(12, 34, "host", "worker")
    big_tid = builder.track(12, 2**31, "host", "line")
    big_pid = builder.track(-(2**31) - 1, 5, "hashed", "t5")
    edge = builder.track(-(2**31), 2**31 - 1, "edge", "")
    for row, track in enumerate((small, big_tid, big_pid, edge)):
        builder.add(row * 10, 5, track, f"e{row}", EventKind.RUNTIME)
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    tracks = by_name(trace)
    host = tracks["host"]
    assert host.process.pid == 12 and host.process.process_name == "host"
    assert not host.HasField("thread") and not host.HasField("parent_uuid")
    worker = tracks["worker"]
    assert (worker.thread.pid, worker.thread.tid, worker.thread.thread_name) == (12, 34, "worker")
    assert worker.parent_uuid == host.uuid and not worker.HasField("process")
    line = tracks["line"]
    assert not line.HasField("thread") and not line.HasField("process")
    assert line.parent_uuid == host.uuid
    hashed = tracks["hashed"]
    assert not hashed.HasField("process") and not hashed.HasField("thread")
    assert not tracks["t5"].HasField("thread")
    assert tracks["edge"].process.pid == -(2**31)
    edge_thread = tracks[str(2**31 - 1)]
    assert (edge_thread.thread.pid, edge_thread.thread.tid) == (-(2**31), 2**31 - 1)


def placed(events: list[tuple[str, int, int]]) -> dict[str, str]:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    for name, start, duration in events:
        builder.add(start, duration, track, name, EventKind.RUNTIME)
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    tracks = descriptors(trace)
    worker = by_name(trace)["worker"].uuid
    for d in tracks.values():
        if "overlap" in d.name:
            assert d.parent_uuid == worker
    return {
        p.track_event.name: tracks[p.track_event.track_uuid].name
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
    }


def test_equal_starts_longest_first_nest() -> None:
    # Given in short-first order: the longer one is placed first and the shorter nests in it.
    assert set(placed([("short", 0, 10), ("long", 0, 100)]).values()) == {"worker"}


def test_three_way_overlap_numbers_overlap_tracks() -> None:
    got = placed([("a", 0, 100), ("b", 50, 100), ("c", 90, 100), ("d", 200, 10)])
    assert got == {
        "a": "worker",
        "b": "worker (overlap 1)",
        "c": "worker (overlap 2)",
        "d": "worker",
    }


def test_zero_length_slices_at_a_parent_end_and_after() -> None:
    got = placed(
        [
            ("parent", 0, 100),
            ("tick", 100, 0),  # at the parent's end
            ("tock", 100, 0),  # the same instant again
            ("over", 99, 2),  # starts inside parent, ends after it: overlaps
            ("after", 101, 10),
        ]
    )
    assert got["parent"] == "worker" and got["over"] == "worker (overlap 1)"
    assert got["after"] == "worker"


def test_slice_lengths_and_order_on_a_track() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    builder.add(10, 90, track, "outer", EventKind.RUNTIME)
    builder.add(40, 60, track, "inner", EventKind.KERNEL)
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    seen = [
        (p.timestamp, p.track_event.type, p.track_event.name, list(p.track_event.categories))
        for p in trace.packet
        if p.HasField("track_event")
    ]
    begin, end = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
    assert seen == [
        (10, begin, "outer", ["runtime"]),
        (40, begin, "inner", ["kernel"]),
        (100, end, "", []),
        (100, end, "", []),
    ]


def test_argument_annotations_by_type() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    args = {
        "flag": True,
        "n": -(2**63),
        "top": 2**63 - 1,
        "huge": 2**63,
        "x": 1.5,
        "s": "text",
        "xs": [1, 2],
    }
    builder.add(0, 10, track, "slice", EventKind.RUNTIME, args=args)
    builder.add(20, 0, track, "mark", EventKind.INSTANT, args={"s": "at"})
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    events = {p.track_event.name: p for p in trace.packet if p.track_event.name}
    notes = {n.name: n for n in events["slice"].track_event.debug_annotations}
    assert notes["flag"].WhichOneof("value") == "bool_value" and notes["flag"].bool_value
    assert notes["n"].int_value == -(2**63) and notes["top"].int_value == 2**63 - 1
    assert notes["huge"].legacy_json_value == str(2**63)
    assert notes["x"].WhichOneof("value") == "double_value" and notes["x"].double_value == 1.5
    assert notes["s"].string_value == "text"
    assert notes["xs"].legacy_json_value == "[1,2]"
    mark = events["mark"]
    assert mark.timestamp == 20 and mark.track_event.type == pb.TrackEvent.TYPE_INSTANT
    assert list(mark.track_event.categories) == ["instant"]
    assert notes_of(mark.track_event) == {"s": "at"}
    assert mark.track_event.track_uuid == by_name(trace)["worker"].uuid


def test_counter_tracks_per_name_and_key() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    builder.add(0, 0, track, "mem", EventKind.COUNTER, args={"value": 1, "free": 2.5, "ok": True})
    builder.add(5, 0, track, "mem", EventKind.COUNTER, args={"value": 3})
    builder.add(5, 0, track, "load", EventKind.COUNTER, args={"load": 0.5})
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    tracks = by_name(trace)
    assert {"mem", "mem.free", "load"} <= set(tracks) and "mem.ok" not in tracks
    assert all(tracks[name].HasField("counter") for name in ("mem", "mem.free", "load"))
    assert counter_values(trace, "mem") == [(0, 1.0), (5, 3.0)]
    assert counter_values(trace, "mem.free") == [(0, 2.5)]
    assert counter_values(trace, "load") == [(5, 0.5)]


def op_link_export() -> Any:
    builder = TraceBuilder()
    host = builder.track(1, 1, "host", "cpu")
    dev = builder.track(2, 9, "gpu", "stream")
    launch = builder.add(0, 5, host, "launch", EventKind.RUNTIME)
    kernel = builder.add(10, 20, dev, "gemm", EventKind.KERNEL)
    count = builder.add(12, 0, dev, "c", EventKind.COUNTER, args={"value": 1})
    builder.flow(launch, kernel, 77)
    builder.flow(launch, count, 78)  # to a counter: not kept
    levels = (
        (
            "tf",
            module(
                op(
                    3,
                    "gemm",
                    group="g1",
                    group_size=2,
                    share_basis="flops",
                    total_ns=40,
                    count=2,
                    mean_ns=20,
                    fraction=0.5,
                )
            ),
        ),
        ("hlo", module(op(1, "gemm", function="", runtime_name="", source=""))),
    )
    return decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, levels), pb))


def test_op_links_and_the_trace_flows_are_numbered_in_order() -> None:
    trace = op_link_export()
    tracks = descriptors(trace)
    begins = {
        (tracks[p.track_event.track_uuid].name, p.track_event.name): p.track_event
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
    }
    gemm = begins[("stream", "gemm")]
    tf_op = begins[("IR level tf", "rt3")]
    hlo_op = begins[("IR level hlo", "dialect.op1")]
    # The op link starts on the kernel; the trace's own launch -> kernel flow ends there.
    assert list(gemm.flow_ids) == [1] and list(gemm.terminating_flow_ids) == [2]
    assert list(tf_op.flow_ids) == [1] and not tf_op.terminating_flow_ids
    assert list(hlo_op.terminating_flow_ids) == [1] and not hlo_op.flow_ids
    launch = begins[("cpu", "launch")]
    assert list(launch.flow_ids) == [2] and not launch.terminating_flow_ids
    ends: dict[int, int] = defaultdict(int)
    for p in trace.packet:
        for flow in p.track_event.terminating_flow_ids:
            ends[flow] += 1
    assert dict(ends) == {1: 1, 2: 1}
    assert notes_of(gemm)["irprof_ops"] == '["tf: rt3","hlo: dialect.op1"]'
    assert list(tf_op.categories) == ["irprof.op"]


def test_op_annotations() -> None:
    trace = op_link_export()
    notes = {
        p.track_event.name: notes_of(p.track_event)
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
    }
    assert notes["rt3"] == {
        "op": "dialect.op3",
        "level": "tf",
        "location": "model.py:3:1",
        "function": "main",
        "runtime_name": "rt3",
        "kernel": "gemm",
        "total_ns": 40,
        "count": 2,
        "mean_ns": 20,
        "fraction": 0.5,
        "group": "g1",
        "group_size": 2,
        "share_basis": "flops",
    }
    assert notes["dialect.op1"] == {
        "op": "dialect.op1",
        "level": "hlo",
        "location": "loc1",
        "kernel": "gemm",
        "total_ns": 100,
        "count": 2,
        "mean_ns": 50,
        "fraction": 0.25,
    }


def test_unnamed_processes_and_threads_are_named_by_their_ids() -> None:
    builder = TraceBuilder()
    track = builder.track(41, 42, "p", "t")
    builder.add(0, 10, track, "e", EventKind.RUNTIME)
    builder.add(20, 10, track, "f", EventKind.RUNTIME)
    builder.add(25, 10, track, "g", EventKind.RUNTIME)  # overlaps f: named after the thread
    built = builder.build()
    trace = dataclasses.replace(built, tracks=Tracks(("",), ("",), (41,), (42,)))
    tracks = by_name(decode(perfetto_trace(TraceExport(trace, "t", MANIFEST, ()), pb)))
    assert tracks["pid 41"].process.pid == 41
    assert tracks["tid 42"].thread.tid == 42
    assert tracks["tid 42 (overlap 1)"].parent_uuid == tracks["tid 42"].uuid


def test_flows_from_an_instant_to_a_slice() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    mark = builder.add(0, 0, track, "mark", EventKind.INSTANT)
    work = builder.add(5, 10, track, "work", EventKind.RUNTIME)
    builder.flow(mark, work, 9)
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    events = {p.track_event.name: p.track_event for p in trace.packet if p.track_event.name}
    assert list(events["mark"].flow_ids) == [1]
    assert list(events["work"].terminating_flow_ids) == [1]


def test_renderer_writes_the_same_bytes_and_reads_the_costed_export() -> None:
    builder = TraceBuilder()
    track = builder.track(3, 4, "proc", "stream")
    builder.add(0, 10, track, "k1", EventKind.KERNEL)
    levels = (("hlo", module(op(0, "k1"))),)
    export = CostedTraceExport(
        builder.build(), "t", MANIFEST, levels, flops_per_event={("hlo", 0): 50.0}
    )
    assert RENDERER.render(export) == perfetto_trace(export, pb)
    assert counter_values(decode(RENDERER.render(export)), "achieved GFLOP/s · IR level hlo") == [
        (0, 5.0),
        (10, 0.0),
    ]
    assert load_reference(RENDERER.input) is load_costed_trace_export
    assert (RENDERER.name, RENDERER.extension) == ("perfetto", ".pftrace")


def test_flop_rate_at_a_shared_last_end_and_one_ns_ops() -> None:
    builder = TraceBuilder()
    track = builder.track(3, 4, "proc", "stream")
    # k1 and k2 end together at 100, the last time: one value there; k3 runs 1 ns.
    events = [(0, 100, "k1"), (50, 50, "k2"), (10, 1, "k3")]
    for start, dur, name in events:
        builder.add(start, dur, track, name, EventKind.KERNEL)
    levels = (("hlo", module(op(0, "k1"), op(1, "k2"), op(2, "k3"))),)
    flops = {("hlo", 0): 200.0, ("hlo", 1): 100.0, ("hlo", 2): 6.0}
    export = CostedTraceExport(builder.build(), "t", MANIFEST, levels, flops_per_event=flops)
    trace = decode(perfetto_trace(export, pb))
    work = {"k1": 200.0, "k2": 100.0, "k3": 6.0}
    expected = expected_rates([(start, dur, work[name]) for start, dur, name in events])
    assert counter_values(trace, "achieved GFLOP/s · IR level hlo") == expected
    assert expected == [(0, 2.0), (10, 8.0), (11, 2.0), (50, 4.0), (100, 0.0)]


def test_overlapping_ops_of_one_level_go_to_an_ir_overlap_track() -> None:
    trace = decode(flop_export()[0])
    tracks = by_name(trace)
    level, overlap = tracks["IR level hlo"], tracks["IR level hlo (overlap 1)"]
    assert overlap.parent_uuid == level.uuid
    lane_of = {
        notes_of(p.track_event)["kernel"]: p.track_event.track_uuid
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
        and p.track_event.categories == ["irprof.op"]
        and notes_of(p.track_event)["level"] == "hlo"
    }
    # k2 (50-150) overlaps k1 (0-100); k3 (100-200) follows k1; k4 (150, 0 ns) nests in k3.
    assert lane_of == {
        "k1": level.uuid,
        "k2": overlap.uuid,
        "k3": level.uuid,
        "k4": level.uuid,
        "k5": level.uuid,
    }


def test_an_int_argument_past_64_bits_is_written_as_json() -> None:
    """A trace's JSON may hold ints past 64 bits; orjson refuses them, the export does not."""
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    builder.add(0, 10, track, "slice", EventKind.RUNTIME, args={"low": -(2**63) - 1})
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", MANIFEST, ()), pb))
    event = next(p.track_event for p in trace.packet if p.track_event.name == "slice")
    assert notes_of(event) == {"low": str(-(2**63) - 1)}


def test_an_event_name_two_ops_ran_links_each_event_to_the_op_that_ran_it() -> None:
    """Two ops of one event name (torch's `aten::linear`), each listing the start of its own
    event (`event_ts`, read from the opprofiles): the event at 10 ns names only the first op,
    the one at 50 ns only the second; an op listing no starts would take both."""
    builder = TraceBuilder()
    track = builder.track(1, 1, "host", "cpu")
    builder.add(10, 20, track, "linear", EventKind.RUNTIME)
    builder.add(50, 20, track, "linear", EventKind.RUNTIME)
    levels = (("torch", module(op(0, "linear", count=2), op(1, "linear", count=3))),)
    measured = MeasuredEvents(
        kernels={}, starts={}, by_profile={(0, ("linear",), 2): (10,), (0, ("linear",), 3): (50,)}
    )
    export = TraceExport(builder.build(), "t", MANIFEST, levels, measured=measured)
    trace = decode(perfetto_trace(export, pb))
    linked = {
        p.timestamp: [
            n.legacy_json_value for n in p.track_event.debug_annotations if n.name == "irprof_ops"
        ]
        for p in trace.packet
        if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN and p.track_event.name == "linear"
    }
    assert linked == {10: ['["torch: rt0"]'], 50: ['["torch: rt1"]']}

"""`irprof export --to perfetto`: a native `.pftrace`, decoded with Perfetto's own protos and
checked the way the trace processor reads it (tracks, nesting, flows, annotations)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.trace_export import load_trace_export
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.renderers.base import get_export_renderers
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    fixture_jax_bundle,
    fixture_tf_bundle,
)

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


def decode(data: bytes) -> Any:
    trace = pb.Trace()
    trace.ParseFromString(data)
    return trace


def annotations(event: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for note in event.debug_annotations:
        kind = note.WhichOneof("value")
        found[note.name] = getattr(note, kind) if kind else None
    return found


def check_track_sequences(trace: Any) -> dict[int, list[tuple[int, Any]]]:
    """Per track, in file order: timestamps never decrease and every END closes an open slice
    (what the trace processor needs to build nested slices without errors)."""
    slices: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    open_count: dict[int, int] = defaultdict(int)
    last_ts = 0
    for packet in trace.packet:
        if not packet.HasField("track_event"):
            continue
        assert packet.timestamp >= last_ts, "packets are in time order"
        last_ts = packet.timestamp
        event = packet.track_event
        uuid = event.track_uuid
        if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_count[uuid] += 1
            slices[uuid].append((packet.timestamp, event))
        elif event.type == pb.TrackEvent.TYPE_SLICE_END:
            assert open_count[uuid] > 0, f"END without an open slice on track {uuid}"
            open_count[uuid] -= 1
    assert not any(open_count.values()), "every slice is closed"
    return slices


def test_tf_export_has_a_track_per_level_flows_and_op_annotations(
    tf_bundle: RunBundle, tmp_path: Path
) -> None:
    out = tmp_path / "run.pftrace"
    assert main(["export", str(tf_bundle.root), "--to", "perfetto", "-o", str(out)]) == 0
    trace = decode(out.read_bytes())
    tracks = {
        p.track_descriptor.uuid: p.track_descriptor
        for p in trace.packet
        if p.HasField("track_descriptor")
    }
    ir_root = next(uuid for uuid, d in tracks.items() if d.name == "irprof IR")
    levels = {d.name for d in tracks.values() if d.parent_uuid == ir_root}
    assert levels == {f"IR level {level}" for level in tf_bundle.annotated_levels()}
    slices = check_track_sequences(trace)
    level_uuids = {uuid for uuid, d in tracks.items() if d.name.startswith("IR level")}
    ir_slices = [e for uuid in level_uuids for _, e in slices.get(uuid, [])]
    export = load_trace_export(tf_bundle)
    refs = export.ops_by_event_name()
    attributed = [e for e in export.trace.strings if e in refs]
    assert attributed and ir_slices
    # The fused oneDNN conv kernel: one slice per member op, each annotated with its op.
    conv = [annotations(e) for e in ir_slices if annotations(e).get("op") == "tf.Conv2D"]
    assert conv and all(note["kernel"].endswith("_MklNativeFusedConv2D") for note in conv)
    assert all(note["location"] and note["level"] == "tf" for note in conv)
    assert all(note["group_size"] == 3 for note in conv)
    # Flows: each op link starts on a kernel slice and ends on exactly one IR slice; the trace's
    # own flows (not to or from a counter) are kept too, each once.
    starts: dict[int, int] = defaultdict(int)
    ends: dict[int, int] = defaultdict(int)
    for packet in trace.packet:
        event = packet.track_event
        for flow in event.flow_ids:
            starts[flow] += 1
        for flow in event.terminating_flow_ids:
            ends[flow] += 1
    assert starts and set(starts) == set(ends)
    assert all(count == 1 for count in ends.values())
    kernel_count = sum(
        1
        for uuid, events in slices.items()
        if uuid not in level_uuids
        for _, e in events
        if e.name in refs
    )
    kinds = export.trace.kind
    own_flows = sum(
        1
        for src, dst in zip(export.trace.flows.src, export.trace.flows.dst, strict=True)
        if EventKind.COUNTER not in (kinds[src], kinds[dst])
    )
    assert own_flows > 0
    assert len(ends) == kernel_count + own_flows


def test_overlapping_events_on_one_track_go_to_overlap_tracks() -> None:
    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    builder.add(0, 100, track, "a", EventKind.RUNTIME)
    builder.add(50, 100, track, "b", EventKind.RUNTIME)  # overlaps a without nesting in it
    builder.add(60, 10, track, "c", EventKind.RUNTIME)  # nests in a (and b): stays on the track
    builder.add(200, 0, track, "zero", EventKind.RUNTIME)
    builder.add(210, 0, track, "tick", EventKind.COUNTER, args={"value": 3.5})
    from irprof.analyses.trace_export import TraceExport
    from irprof.bundle import Manifest
    from irprof.renderers.perfetto_proto import perfetto_trace

    manifest = Manifest("tf", "m.py", "e", 1, "cpu", {}, ("tf",), ())
    data = perfetto_trace(TraceExport(builder.build(), "t", manifest, ()), pb)
    trace = decode(data)
    names = {
        p.track_descriptor.uuid: p.track_descriptor.name
        for p in trace.packet
        if p.HasField("track_descriptor")
    }
    slices = check_track_sequences(trace)
    placed = {e.name: names[uuid] for uuid, events in slices.items() for _, e in events}
    assert placed == {"a": "worker", "b": "worker (overlap 1)", "c": "worker", "zero": "worker"}
    counter = [p for p in trace.packet if p.track_event.type == pb.TrackEvent.TYPE_COUNTER]
    assert [p.track_event.double_counter_value for p in counter] == [3.5]
    assert names[counter[0].track_event.track_uuid] == "tick"


def placed_tracks(events: list[tuple[str, int, int]]) -> dict[str, str]:
    """Export (name, start, duration) runtime events of one thread; event name -> track name."""
    from irprof.analyses.trace_export import TraceExport
    from irprof.bundle import Manifest
    from irprof.renderers.perfetto_proto import perfetto_trace

    builder = TraceBuilder()
    track = builder.track(1, 7, "host", "worker")
    for name, start, duration in events:
        builder.add(start, duration, track, name, EventKind.RUNTIME)
    manifest = Manifest("tf", "m.py", "e", 1, "cpu", {}, ("tf",), ())
    trace = decode(perfetto_trace(TraceExport(builder.build(), "t", manifest, ()), pb))
    names = {
        p.track_descriptor.uuid: p.track_descriptor.name
        for p in trace.packet
        if p.HasField("track_descriptor")
    }
    slices = check_track_sequences(trace)
    return {e.name: names[uuid] for uuid, events in slices.items() for _, e in events}


def test_children_ending_with_their_parent_and_touching_slices_need_no_overlap_track() -> None:
    placed = placed_tracks(
        [
            ("parent", 0, 100),
            ("child", 40, 60),  # ends exactly when the parent does: nests
            ("next", 100, 50),  # starts exactly when the parent ends: follows on the track
            ("same", 200, 50),
            ("twin", 200, 50),  # identical to `same`: nests in it
        ]
    )
    assert set(placed.values()) == {"worker"}, placed


def test_perfetto_and_chrome_are_two_formats() -> None:
    renderers = get_export_renderers()
    assert renderers.get("perfetto").extension == ".pftrace"
    assert renderers.get("chrome").extension == ".json"

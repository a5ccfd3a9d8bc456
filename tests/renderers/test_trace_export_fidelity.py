"""Exports keep what the trace had: its processes and threads with their own ids and names, its
flows (launch -> kernel), and slices for every annotated level, including levels whose ops were
measured through another level (torch's linalg ops, carried down from their torch op)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.trace_export import load_trace_export
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.renderers.chrome_trace import IR_PROCESS_NAME, chrome_trace
from irprof.renderers.perfetto_proto import perfetto_trace
from tests.analyses.test_support import fixture_tf_bundle  # noqa: F401  (found by its name)

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module", name="torch_bundle")
def fixture_torch_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The real torch CNN capture, annotated at both levels."""
    root = tmp_path_factory.mktemp("torch") / "run"
    shutil.copytree(FIXTURES / "torch" / "cnn", root)
    bundle = RunBundle(root)
    annotate_bundle(bundle, "torch")
    annotate_bundle(bundle, "linalg")
    return bundle


def _raw_events(bundle: RunBundle) -> list[dict[str, Any]]:
    path = bundle.primary_trace_path
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    events: list[dict[str, Any]] = json.loads(data)["traceEvents"]
    return events


def test_chrome_export_keeps_the_traces_pids_tids_and_names(torch_bundle: RunBundle) -> None:
    raw = _raw_events(torch_bundle)
    exported = chrome_trace(load_trace_export(torch_bundle))["traceEvents"]

    # Every complete event of the trace with numeric ids is on its own (pid, tid) in the export
    # (Kineto writes a few string "pids", such as "Spans": those are renumbered).
    def numeric(e: dict[str, Any]) -> bool:
        return isinstance(e["pid"], int) and isinstance(e["tid"], int)

    raw_slots = Counter((e["pid"], e["tid"]) for e in raw if e.get("ph") == "X" and numeric(e))
    out_slots = Counter(
        (e["pid"], e["tid"])
        for e in exported
        if e.get("ph") == "X" and e.get("cat") != "irprof.op" and (e["pid"], e["tid"]) in raw_slots
    )
    assert out_slots == raw_slots and sum(raw_slots.values()) > 500
    # No empty process label: an unnamed process is left for the viewer to call by its pid.
    names = [e["args"]["name"] for e in exported if e.get("name") == "process_name"]
    assert "" not in names and IR_PROCESS_NAME in names


def test_chrome_export_keeps_the_traces_flows(tf_bundle: RunBundle) -> None:
    export = load_trace_export(tf_bundle)  # XPlane flows: op -> kernel, host -> executor
    exported = chrome_trace(export)["traceEvents"]
    starts = [e for e in exported if e.get("ph") == "s"]
    finishes = [e for e in exported if e.get("ph") == "f"]
    assert len(starts) == len(finishes) == len(export.trace.flows) > 0
    # Each flow starts where its source event starts and ends where its target starts.
    base = int(export.trace.ts_ns.min())
    for start, finish in zip(starts, finishes, strict=True):
        assert start["id"] == finish["id"] and finish["bp"] == "e"
    src_ts = sorted(
        round((int(export.trace.ts_ns[r]) - base) / 1000, 3) for r in export.trace.flows.src
    )
    assert sorted(e["ts"] for e in starts) == src_ts


def test_linalg_level_exports_a_slice_per_event_of_its_torch_op(torch_bundle: RunBundle) -> None:
    export = load_trace_export(torch_bundle)
    exported = chrome_trace(export)["traceEvents"]
    by_level = Counter(e["args"]["level"] for e in exported if e.get("cat") == "irprof.op")
    assert by_level["linalg"] > 0  # before: an "IR level linalg" track with no slices
    # Independently: the linalg profile names its torch origin (`reattach:torch#7`, or
    # `reattach:torch#7 split 1/2` for one of several linalg ops); the torch profile names the
    # events of each origin (all events of its names, or where the names ran other ops too the
    # starts of its own); each such event in the trace gets one slice per linalg op.
    torch_profile = json.loads((torch_bundle.root / "opprofile.torch.json").read_text())
    linalg_profile = json.loads((torch_bundle.root / "opprofile.linalg.json").read_text())
    upper = {
        e["key"]["origin"]: e["profile"]
        for e in torch_profile["entries"]
        if e.get("profile") and e["key"].get("origin")
    }
    names = Counter(export.trace.strings[i] for i in export.trace.name.tolist())

    def events_of(origin: str) -> int:
        profile = upper.get(origin)
        if profile is None:
            return 0
        return len(profile.get("event_ts", [])) or sum(names[k] for k in profile["kernels"])

    sources = [
        e["profile"]["source"]
        for e in linalg_profile["entries"]
        if e.get("profile") and e["profile"]["source"].startswith("reattach:")
    ]
    expected = sum(events_of(s.removeprefix("reattach:").split(" ")[0]) for s in sources)
    assert by_level["linalg"] == expected


def test_perfetto_export_gives_tracks_the_traces_pids_and_keeps_flows(
    torch_bundle: RunBundle,
) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    export = load_trace_export(torch_bundle)
    trace = pb.Trace()
    trace.ParseFromString(perfetto_trace(export, pb))
    pids = {
        p.track_descriptor.process.pid
        for p in trace.packet
        if p.track_descriptor.HasField("process")
    }
    threads = {
        (p.track_descriptor.thread.pid, p.track_descriptor.thread.tid)
        for p in trace.packet
        if p.track_descriptor.HasField("thread")
    }
    tracks = export.trace.tracks
    small = [(pid, tid) for pid, tid in zip(tracks.pid, tracks.tid, strict=True) if pid < 2**31]
    assert pids == {pid for pid, _ in small} and 20523 in pids  # the profiled process
    assert threads == {(pid, tid) for pid, tid in small if tid < 2**31}


def test_perfetto_export_keeps_the_traces_flows(tf_bundle: RunBundle) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    export = load_trace_export(tf_bundle)
    trace = pb.Trace()
    trace.ParseFromString(perfetto_trace(export, pb))
    terminating = [f for p in trace.packet for f in p.track_event.terminating_flow_ids]
    refs = export.ops_by_event_name()
    op_links = sum(1 for i in export.trace.name.tolist() if export.trace.strings[i] in refs)
    assert len(export.trace.flows) > 0
    assert len(terminating) == op_links + len(export.trace.flows)


def test_each_event_is_joined_to_the_ops_of_its_own_fx_node(torch_bundle: RunBundle) -> None:
    """Torch names every layer's event by its aten op (each conv is `aten::conv2d`): an event is
    joined to the torch ops of the one FX node it ran for (the node is the middle part of the
    runtime name `module|node|target`), not to every op that lists its event name."""
    exported = chrome_trace(load_trace_export(torch_bundle))["traceEvents"]
    nodes_of_name: dict[str, set[str]] = {}
    checked = 0
    for event in exported:
        refs = [ref for ref in event.get("args", {}).get("irprof", []) if ref["level"] == "torch"]
        if not refs:
            continue
        nodes = {ref["name"].split("|")[1] for ref in refs}
        assert len(nodes) == 1, (event["name"], event["ts"], sorted(nodes))
        nodes_of_name.setdefault(event["name"], set()).update(nodes)
        checked += 1
    assert checked >= 10
    # The property has teeth: some event names ran several nodes.
    assert any(len(nodes) >= 2 for nodes in nodes_of_name.values())

"""`renderers/chrome_trace.py` checked event by event on a small hand-made export: the whole
document is written out here from the input (times in microseconds from the first event,
metadata events, one IR slice per op an event maps to, flows numbered from 1), and the ids a
viewer cannot hold (2^53 and beyond, or two tracks on one (pid, tid)) are renumbered on the
boundary."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.trace_export import TraceExport
from irprof.manifest import Manifest
from irprof.opprofile import ProfileData
from irprof.renderers.chrome_trace import CHROME, IR_PROCESS_NAME, chrome_trace
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace, Tracks

MANIFEST = Manifest("jax", "model.py", "main", 1, "cpu", {}, ("hlo",), ("trace.json",))
BASE = 5_000_000  # the first event's start, ns


def op(index: int, kernel: str, *, runtime_name: str, source: str = "") -> ProfiledOp:
    profile = ProfileData(
        count=1, total_ns=10, mean_ns=10, min_ns=10, max_ns=10, first_ts_ns=0, fraction=0.5,
        kernels=(kernel,), source="trace",
    )  # fmt: skip
    return ProfiledOp(
        index=index,
        op_name=f"stablehlo.op{index}",
        function=f"fn{index}",
        runtime_name=runtime_name,
        scope="",
        source=source or f"model.py:{index}:1",
        chain=(),
        location=f"loc{index}",
        profile=profile,
        trivial=False,
    )


def small_export() -> TraceExport:
    """Two processes (one unnamed), three threads (one unnamed), every event kind's shape."""
    builder = TraceBuilder()
    main = builder.track(7, 3, "host", "main")
    other = builder.track(7, 4, "host", "worker")
    device = builder.track(9, 1, "", "stream 1")
    builder.add(BASE, 1_234_567, main, "step", EventKind.STEP, args={"n": 1})
    builder.add(BASE + 1, 999, device, "k1", EventKind.KERNEL)
    builder.add(BASE + 2_500, 0, other, "mark", EventKind.INSTANT)
    builder.add(BASE + 3_001, 0, main, "mem", EventKind.COUNTER, args={"bytes": 4})
    builder.add(BASE + 7_000, 1, device, "k2", EventKind.KERNEL, args={"grid": 2})
    builder.flow(0, 1, 77)
    builder.flow(2, 4, 1 << 60)
    trace = builder.build()
    # Unnamed threads and processes (the builder would fill in the ids).
    tracks = trace.tracks
    trace = dataclasses.replace(
        trace,
        tracks=Tracks((*tracks.process[:2], ""), (tracks.thread[0], "", tracks.thread[2]),
                      tracks.pid, tracks.tid),
    )  # fmt: skip
    levels = (
        # Two ops for k1 at this level; k2's op has a runtime name equal to its name.
        ("hlo", ProfiledModule("m.mlir", (op(0, "k1", runtime_name="fusion"),
                                          op(1, "k1", runtime_name=""),
                                          op(2, "k2", runtime_name="dot")), {})),
        ("tf", ProfiledModule("t.mlir", (op(5, "k2", runtime_name="MatMul"),), {})),
    )  # fmt: skip
    return TraceExport(trace, "trace.json", MANIFEST, levels)


def us(ns: int) -> float:
    """Nanoseconds as microseconds, written out with their three decimals."""
    whole, frac = divmod(ns, 1000)
    return float(f"{whole}.{frac:03d}")


def ref(level: str, index: int, name: str, runtime: str = "") -> dict[str, Any]:
    arg = {
        "level": level,
        "op": f"stablehlo.op{index}",
        "name": name,
        "location": f"model.py:{index}:1",
        "function": f"fn{index}",
    }
    return arg | ({"runtime_name": runtime} if runtime else {})


def test_the_whole_document_of_a_small_export() -> None:
    document = chrome_trace(small_export())
    k1_refs = [ref("hlo", 0, "fusion"), ref("hlo", 1, "stablehlo.op1")]
    k2_refs = [ref("hlo", 2, "dot"), ref("tf", 5, "MatMul")]
    ir_pid = 10  # one past the largest exported pid (9)
    expected = [
        # Process 9 has no name: no process_name event (the viewer says "Process 9").
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "host", "id": 7}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 3,
         "args": {"name": "main", "id": 3}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 4,
         "args": {"name": "tid 4", "id": 4}},
        {"ph": "M", "name": "thread_name", "pid": 9, "tid": 1,
         "args": {"name": "stream 1", "id": 1}},
        {"ph": "M", "name": "process_name", "pid": ir_pid, "args": {"name": IR_PROCESS_NAME}},
        {"ph": "M", "name": "thread_name", "pid": ir_pid, "tid": 1,
         "args": {"name": "IR level hlo"}},
        {"ph": "M", "name": "thread_name", "pid": ir_pid, "tid": 2,
         "args": {"name": "IR level tf"}},
        {"name": "step", "pid": 7, "tid": 3, "ts": 0.0, "cat": "step", "ph": "X",
         "dur": 1234.567, "args": {"n": 1}},
        {"name": "k1", "pid": 9, "tid": 1, "ts": 0.001, "cat": "kernel", "ph": "X",
         "dur": 0.999, "args": {"irprof": k1_refs}},
        *[{"ph": "X", "name": r["name"], "cat": "irprof.op", "pid": ir_pid, "tid": 1,
           "ts": 0.001, "dur": 0.999, "args": {**r, "kernel": "k1"}} for r in k1_refs],
        {"name": "mark", "pid": 7, "tid": 4, "ts": 2.5, "cat": "instant", "ph": "i", "s": "t"},
        {"name": "mem", "pid": 7, "tid": 3, "ts": 3.001, "cat": "counter", "ph": "C",
         "args": {"bytes": 4}},
        {"name": "k2", "pid": 9, "tid": 1, "ts": 7.0, "cat": "kernel", "ph": "X",
         "dur": 0.001, "args": {"grid": 2, "irprof": k2_refs}},
        {"ph": "X", "name": "dot", "cat": "irprof.op", "pid": ir_pid, "tid": 1, "ts": 7.0,
         "dur": 0.001, "args": {**k2_refs[0], "kernel": "k2"}},
        {"ph": "X", "name": "MatMul", "cat": "irprof.op", "pid": ir_pid, "tid": 2, "ts": 7.0,
         "dur": 0.001, "args": {**k2_refs[1], "kernel": "k2"}},
        # Flows renumbered from 1; only the finish binds to the enclosing slice ("e").
        {"ph": "s", "id": 1, "name": "flow", "cat": "flow", "pid": 7, "tid": 3, "ts": 0.0},
        {"ph": "f", "id": 1, "name": "flow", "cat": "flow", "pid": 9, "tid": 1, "ts": 0.001,
         "bp": "e"},
        {"ph": "s", "id": 2, "name": "flow", "cat": "flow", "pid": 7, "tid": 4, "ts": 2.5},
        {"ph": "f", "id": 2, "name": "flow", "cat": "flow", "pid": 9, "tid": 1, "ts": 7.0,
         "bp": "e"},
    ]  # fmt: skip
    assert document["traceEvents"] == expected
    assert document["displayTimeUnit"] == "ns"
    assert document["metadata"] == {
        "irprof": {
            "model": "model.py",
            "framework": "jax",
            "trace": "trace.json",
            "base_ts_ns": BASE,
            "levels": ["hlo", "tf"],
        }
    }
    # Key order is part of the document a reader diffs: as written above.
    assert [list(e) for e in document["traceEvents"]] == [list(e) for e in expected]


def test_times_are_microseconds_with_three_decimals() -> None:
    for ns in (0, 1, 999, 1000, 1001, 1_234_567, 10**15 + 1):
        assert round(ns / 1000.0, 3) == us(ns)
    export = small_export()
    starts = [e["ts"] for e in chrome_trace(export)["traceEvents"] if e.get("cat") == "kernel"]
    assert starts == [us(1), us(7_000)]


def test_the_renderer_writes_the_document_as_json() -> None:
    export = small_export()
    assert (CHROME.name, CHROME.extension) == ("chrome", ".json")
    assert CHROME.input == "irprof.analyses.trace_export:load_trace_export"
    assert orjson.loads(CHROME.render(export)) == chrome_trace(export)


def one_event_trace(pid: int, tid: int, more: tuple[tuple[int, int], ...] = ()) -> Trace:
    builder = TraceBuilder()
    for number, (p, t) in enumerate(((pid, tid), *more)):
        track = builder.track(p, t, f"proc {p}", f"thread {t}")
        builder.add(100 + number, 5, track, f"e{number}", EventKind.KERNEL)
    return builder.build()


def placed(trace: Trace) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """(pid, tid) of each event, (exported pid, original id) of the process names, IR pid."""
    document = chrome_trace(TraceExport(trace, "t", MANIFEST, ()))
    events = document["traceEvents"]
    slices = [(e["pid"], e["tid"]) for e in events if e["ph"] == "X"]
    names = [(e["pid"], e["args"].get("id", -1)) for e in events if e["name"] == "process_name"]
    ir = [e["pid"] for e in events if e["name"] == "process_name" and "id" not in e["args"]]
    return slices, names[:-1], ir[0]


def test_ids_a_viewer_can_hold_are_kept_up_to_two_to_the_53() -> None:
    safe = 2**53 - 1
    assert placed(one_event_trace(safe, 5)) == ([(safe, 5)], [(safe, safe)], safe + 1)
    assert placed(one_event_trace(-safe, -safe)) == ([(-safe, -safe)], [(-safe, -safe)], 1)
    assert placed(one_event_trace(4, safe)) == ([(4, safe)], [(4, 4)], 5)


def test_ids_from_two_to_the_53_on_are_renumbered_from_one() -> None:
    big = 2**53
    # The pids in sorted order get 1, 2, ...; every track its own tid from 1; the original
    # pid stays in the process_name event's args.
    slices, names, ir = placed(one_event_trace(big, 2, more=((3, 2), (3, 8))))
    assert slices == [(2, 1), (1, 2), (1, 3)]
    assert names == [(1, 3), (2, big)]  # in the order of the new numbers
    assert ir == 3
    assert placed(one_event_trace(-big, 1)) == ([(1, 1)], [(1, -big)], 2)
    assert placed(one_event_trace(1, big)) == ([(1, 1)], [(1, 1)], 2)
    assert placed(one_event_trace(1, -big))[0] == [(1, 1)]


def test_two_tracks_on_one_pid_and_tid_are_renumbered() -> None:
    trace = one_event_trace(4, 6, more=((4, 7),))
    tracks = trace.tracks
    twice = dataclasses.replace(trace, tracks=Tracks(tracks.process, tracks.thread, (4, 4), (6, 6)))
    slices, names, ir = placed(twice)
    assert slices == [(1, 1), (1, 2)]
    assert names == [(1, 4)]
    assert ir == 2
    thread_ids = [
        e["args"]["id"]
        for e in chrome_trace(TraceExport(twice, "t", MANIFEST, ()))["traceEvents"]
        if e["name"] == "thread_name"
    ]
    assert thread_ids == [6, 6]  # the originals, in the metadata


def test_an_empty_trace_has_base_zero_and_only_the_ir_process() -> None:
    trace = TraceBuilder().build()
    document = chrome_trace(TraceExport(trace, "t", MANIFEST, ()))
    assert document["metadata"]["irprof"]["base_ts_ns"] == 0
    assert document["traceEvents"] == [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": IR_PROCESS_NAME}}
    ]

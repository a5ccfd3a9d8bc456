"""Trace export as Chrome trace-event JSON (`--to chrome`; Perfetto's UI and chrome://tracing
open it). The native Perfetto export is `perfetto_proto`.

Design notes: docs/views.md, "Module notes", `renderers/chrome_trace.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from irprof.analyses.trace_export import OpRef, TraceExport
from irprof.trace.model import EventKind, Tracks

IR_PROCESS_NAME = "irprof IR"


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def _op_arg(ref: OpRef) -> dict[str, Any]:
    arg = {
        "level": ref.level,
        "op": ref.op_name,
        "name": ref.name,
        "location": ref.location,
        "function": ref.function,
    }
    if ref.runtime_name and ref.runtime_name != ref.name:
        # Only ops named through a call differ; other ops' args stay as they always were.
        arg["runtime_name"] = ref.runtime_name
    return arg


JS_SAFE = 2**53  # JSON readers in JavaScript keep 53 bits of an integer


def _process_thread_ids(tracks: Tracks) -> tuple[list[int], list[int], dict[int, int]]:
    """Each track's pid and tid in the export, and original pid -> exported pid.

    The trace's own ids are kept when a viewer can hold them (every id under 2^53) and no two
    tracks share a (pid, tid); otherwise (XPlane's 64-bit line ids) they are renumbered from 1,
    the originals staying in the metadata events' args."""
    pairs = list(zip(tracks.pid, tracks.tid, strict=True))
    keep = len(set(pairs)) == len(pairs) and all(
        abs(pid) < JS_SAFE and abs(tid) < JS_SAFE for pid, tid in pairs
    )
    if keep:
        return list(tracks.pid), list(tracks.tid), {pid: pid for pid in dict.fromkeys(tracks.pid)}
    pid_of = {pid: number for number, pid in enumerate(sorted(set(tracks.pid)), start=1)}
    return [pid_of[pid] for pid in tracks.pid], list(range(1, len(tracks) + 1)), pid_of


def _flow_events(
    export: TraceExport, base: int, track_pid: list[int], track_tid: list[int]
) -> list[dict[str, Any]]:
    """The trace's own flows (launch -> kernel, send -> receive) as `s` / `f` event pairs bound
    to the enclosing slices; ids renumbered from 1 (a 64-bit id does not survive JavaScript)."""
    trace = export.trace
    events: list[dict[str, Any]] = []
    ts, track = trace.ts_ns, trace.track
    for number, (src, dst) in enumerate(
        zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True), start=1
    ):
        for phase, row in (("s", src), ("f", dst)):
            event: dict[str, Any] = {
                "ph": phase,
                "id": number,
                "name": "flow",
                "cat": "flow",
                "pid": track_pid[int(track[row])],
                "tid": track_tid[int(track[row])],
                "ts": _us(int(ts[row]) - base),
            }
            if phase == "f":
                event["bp"] = "e"  # bind to the slice starting at this time, not the next one
            events.append(event)
    return events


def chrome_trace(export: TraceExport) -> dict[str, Any]:
    """The Chrome trace-event document of `export`."""
    trace = export.trace
    base = int(trace.ts_ns.min()) if len(trace) else 0
    tracks = trace.tracks
    track_pid, track_tid, pid_of = _process_thread_ids(tracks)
    events: list[dict[str, Any]] = []
    for pid, number in pid_of.items():
        name = next(tracks.process[i] for i in range(len(tracks)) if tracks.pid[i] == pid)
        if name:  # unnamed: the viewer's own "Process <pid>" says more than an empty label
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": number,
                    "args": {"name": name, "id": pid},
                }
            )
    for row in range(len(tracks)):
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": track_pid[row],
                "tid": track_tid[row],
                "args": {
                    "name": tracks.thread[row] or f"tid {tracks.tid[row]}",
                    "id": tracks.tid[row],
                },
            }
        )
    ops_of = export.ops_by_event_name()
    ir_pid = max([0, *pid_of.values()]) + 1
    level_tid = {level: position + 1 for position, (level, _) in enumerate(export.levels)}
    events.append(
        {"ph": "M", "name": "process_name", "pid": ir_pid, "args": {"name": IR_PROCESS_NAME}}
    )
    for level, tid in level_tid.items():
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": ir_pid,
                "tid": tid,
                "args": {"name": f"IR level {level}"},
            }
        )
    strings = trace.strings
    ts_list, dur_list = trace.ts_ns.tolist(), trace.dur_ns.tolist()
    track_list, name_list, kind_list = (
        trace.track.tolist(),
        trace.name.tolist(),
        trace.kind.tolist(),
    )
    for row in range(len(trace)):
        name = strings[name_list[row]]
        track = track_list[row]
        ts = _us(ts_list[row] - base)
        args = trace.args(row)
        event: dict[str, Any] = {
            "name": name,
            "pid": track_pid[track],
            "tid": track_tid[track],
            "ts": ts,
            "cat": EventKind(kind_list[row]).label,
        }
        kind = kind_list[row]
        if kind == EventKind.COUNTER:
            event["ph"] = "C"
        elif kind == EventKind.INSTANT:
            event["ph"] = "i"
            event["s"] = "t"
        else:
            event["ph"] = "X"
            event["dur"] = _us(dur_list[row])
        refs = tuple(ref for ref in ops_of.get(name, ()) if ref.ran(ts_list[row]))
        if refs:
            args = {**args, "irprof": [_op_arg(ref) for ref in refs]}
        if args:
            event["args"] = args
        events.append(event)
        for ref in refs:
            events.append(
                {
                    "ph": "X",
                    "name": ref.name,
                    "cat": "irprof.op",
                    "pid": ir_pid,
                    "tid": level_tid[ref.level],
                    "ts": ts,
                    "dur": _us(dur_list[row]),
                    "args": {**_op_arg(ref), "kernel": name},
                }
            )
    events.extend(_flow_events(export, base, track_pid, track_tid))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "metadata": {
            "irprof": {
                "model": export.manifest.model,
                "framework": export.manifest.framework,
                "trace": export.trace_path,
                "base_ts_ns": base,
                "levels": list(level_tid),
            }
        },
    }


@dataclass(frozen=True)
class ChromeTraceRenderer:
    """`trace.json` for chrome://tracing or Perfetto (both read this format)."""

    name: str = "chrome"
    extension: str = ".json"
    # What the renderer reads from a run bundle: `(bundle, level | None) -> TraceExport`.
    input: str = "irprof.analyses.trace_export:load_trace_export"

    def render(self, data: TraceExport) -> bytes:
        """JSON bytes."""
        return orjson.dumps(chrome_trace(data))


CHROME = ChromeTraceRenderer()

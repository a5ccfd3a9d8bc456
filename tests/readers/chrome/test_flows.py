"""Chrome flow binding, exactly: which slice each `s`/`t`/`f` point binds to, how points chain
into links, and how many points find no slice (the reader's warning)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from irprof.readers import read_trace
from irprof.readers.chrome.flows import MAX_WALK_BACK
from irprof.trace.model import Trace

UNBOUND = re.compile(r"(\d+) flow event\(s\) found no slice to bind to")


def slice_event(name: str, tid: int, ts: int, dur: int) -> dict[str, Any]:
    return {"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def flow_event(ph: str, flow_id: int, tid: int, ts: int, bp: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": ph, "cat": "flow", "name": "f", "id": flow_id}
    event.update(pid=1, tid=tid, ts=ts)
    if bp is not None:
        event["bp"] = bp
    return event


def read(tmp_path: Path, events: list[dict[str, Any]]) -> Trace:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return read_trace(path)


def links(trace: Trace) -> list[tuple[str, str, int]]:
    """(source name, destination name, flow id) of every link, sorted."""
    flows = trace.flows
    return sorted(
        (trace.name_of(int(src)), trace.name_of(int(dst)), int(flow_id))
        for src, dst, flow_id in zip(flows.src, flows.dst, flows.flow_id, strict=True)
    )


def unbound(trace: Trace) -> int:
    """Flow points the reader reported as bound to no slice (0 when it reported none)."""
    counts = [int(match[1]) for warning in trace.warnings if (match := UNBOUND.search(warning))]
    assert len(counts) <= 1
    return counts[0] if counts else 0


def test_point_at_the_end_of_the_first_slice_binds_to_it(tmp_path: Path) -> None:
    """A slice encloses its end instant; the trace's first row (row 0) is a valid flow source."""
    events = [
        slice_event("first", 1, 0, 10),
        slice_event("target", 2, 20, 5),
        flow_event("s", 1, 1, 10),
        flow_event("f", 1, 2, 20, bp="e"),
    ]
    trace = read(tmp_path, events)
    assert trace.name_of(0) == "first"
    assert links(trace) == [("first", "target", 1)]
    assert trace.flows.src.tolist() == [0]
    assert unbound(trace) == 0


def test_point_after_finished_children_binds_to_the_enclosing_parent(tmp_path: Path) -> None:
    """Walking back past finished children: the parent encloses points up to its end."""
    events = [
        slice_event("parent", 1, 0, 100),
        slice_event("child1", 1, 10, 10),  # ends at 20
        slice_event("child2", 1, 30, 10),  # ends at 40
        slice_event("D", 2, 200, 10),
        slice_event("E", 2, 220, 10),
        slice_event("F", 2, 240, 10),
        flow_event("s", 1, 1, 25),  # after child1: the parent is one step back
        flow_event("s", 2, 1, 50),  # after child2: two steps back
        flow_event("s", 3, 1, 100),  # the parent's end instant, after both children
        flow_event("f", 1, 2, 200, bp="e"),
        flow_event("f", 2, 2, 220, bp="e"),
        flow_event("f", 3, 2, 240, bp="e"),
    ]
    trace = read(tmp_path, events)
    assert links(trace) == [("parent", "D", 1), ("parent", "E", 2), ("parent", "F", 3)]
    assert unbound(trace) == 0


def test_points_outside_every_slice_of_their_thread_are_unbound(tmp_path: Path) -> None:
    """Before the first slice, or in a gap between slices, a point binds to nothing, even when
    a later slice of the thread is still open at that time elsewhere in the order."""
    events = [
        slice_event("A", 1, 3, 1),  # [3, 4]
        slice_event("B", 1, 10, 10),  # [10, 20]
        slice_event("D", 2, 30, 10),
        slice_event("E", 2, 50, 10),
        flow_event("s", 1, 1, 1),  # before A
        flow_event("s", 2, 1, 7),  # between A and B
        flow_event("f", 1, 2, 30, bp="e"),
        flow_event("f", 2, 2, 50, bp="e"),
    ]
    trace = read(tmp_path, events)
    assert links(trace) == []
    assert unbound(trace) == 2


def test_flow_end_without_bp_binds_to_the_next_slice_starting_at_or_after_it(
    tmp_path: Path,
) -> None:
    """`f` without bp="e": the slice starting at its instant, else the next one; none after the
    last slice. A point on a thread with no slice at all binds to nothing."""
    events = [
        slice_event("A", 1, 0, 10),
        slice_event("B", 2, 20, 10),
        slice_event("C", 2, 40, 10),
        flow_event("s", 1, 1, 5),
        flow_event("f", 1, 2, 20),  # B starts exactly here
        flow_event("s", 2, 1, 5),
        flow_event("f", 2, 2, 35),  # inside no slice: the next one, C
        flow_event("s", 3, 1, 5),
        flow_event("f", 3, 2, 60),  # after every slice of thread 2
        flow_event("s", 4, 9, 5),  # thread 9 has no slice
        flow_event("f", 4, 2, 45, bp="e"),
    ]
    trace = read(tmp_path, events)
    assert links(trace) == [("A", "B", 1), ("A", "C", 2)]
    assert unbound(trace) == 2


def test_flows_chain_by_category_and_id_and_an_end_closes_its_chain(tmp_path: Path) -> None:
    """Points link only to the next point of the same flow; after an `f`, the same id starts a
    new flow; a flow left open (no `f`) does not run into the next flow."""
    events = [
        slice_event("A1", 1, 0, 10),
        slice_event("A2", 1, 20, 10),
        slice_event("A3", 1, 40, 10),
        slice_event("B1", 2, 0, 10),
        slice_event("B2", 2, 20, 10),
        slice_event("B3", 2, 40, 10),
        flow_event("s", 1, 1, 1),
        flow_event("t", 1, 2, 2),  # flow 1 never ends
        flow_event("s", 2, 1, 21),
        flow_event("f", 2, 2, 22, bp="e"),
        flow_event("s", 2, 1, 41),  # flow 2 again, after its end
        flow_event("f", 2, 2, 42, bp="e"),
    ]
    trace = read(tmp_path, events)
    assert links(trace) == [("A1", "B1", 1), ("A2", "B2", 2), ("A3", "B3", 2)]
    assert unbound(trace) == 0


def test_link_columns_keep_their_types_and_wide_ids_exactly(tmp_path: Path) -> None:
    """Links are int32 rows with int64 flow ids: an id beyond float precision stays exact."""
    wide = 2**53 + 1
    events = [
        slice_event("launch", 1, 0, 10),
        slice_event("kernel", 2, 20, 10),
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": wide, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": wide, "pid": 1, "tid": 2, "ts": 20,
         "bp": "e"},
    ]  # fmt: skip
    flows = read(tmp_path, events).flows
    assert flows.flow_id.tolist() == [wide]
    assert flows.src.tolist() == [0] and flows.dst.tolist() == [1]
    assert flows.src.dtype == np.int32 and flows.dst.dtype == np.int32
    assert flows.flow_id.dtype == np.int64


def _walk_back_trace(tmp_path: Path, children: int) -> Trace:
    """A parent on thread 1 with `children` finished children, a flow start after the last
    child (inside the parent only), ending in a slice on thread 2."""
    events = [slice_event("parent", 1, 0, 10 * children)]
    events += [slice_event(f"child{index}", 1, 1 + 2 * index, 1) for index in range(children)]
    events += [
        slice_event("target", 2, 20 * children, 1),
        flow_event("s", 1, 1, 2 * children + 1),
        flow_event("f", 1, 2, 20 * children, bp="e"),
    ]
    return read(tmp_path, events)


def test_walk_back_finds_the_parent_within_the_bound_and_reports_unbound_beyond(
    tmp_path: Path,
) -> None:
    """The search for an enclosing slice looks at most MAX_WALK_BACK slices back."""
    assert MAX_WALK_BACK == 4096
    within = _walk_back_trace(tmp_path, MAX_WALK_BACK)
    assert links(within) == [("parent", "target", 1)]
    assert unbound(within) == 0
    beyond = _walk_back_trace(tmp_path, MAX_WALK_BACK + 1)
    assert links(beyond) == []
    assert unbound(beyond) == 1

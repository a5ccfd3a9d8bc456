"""`Trace.select` by a boolean mask and by no rows, what a selection keeps besides the events,
a Trace made without flows, `iter_rows` and `to_arrow`.

Written from the survivors of `trace/model.py`'s first mutation run: every test selected rows by
index (a mask read as indices 0 and 1 went unnoticed), none selected no rows, checked the HLO
programs and warnings of a selection, selected from a Trace built without flows (their default
arrays index the remap table), or called `iter_rows` or `to_arrow`.
"""

from __future__ import annotations

import json

import numpy as np

from irprof.trace.model import EventKind, Flows, HloProgram, Trace, Tracks

ARGS = [b'{"a":1}', b"", b'{"b":2}', b'{"c":3}']


def _trace(flows: Flows | None = None) -> Trace:
    """Four events on one track: names e0..e3, times 10, 20, 30, 40; e1 has no args."""
    lengths = [len(part) for part in ARGS]
    offsets = np.array([0, *np.cumsum(lengths).tolist()], dtype=np.int64)
    columns = {
        "ts_ns": np.array([10, 20, 30, 40], np.int64),
        "dur_ns": np.array([1, 2, 3, 4], np.int64),
        "track": np.zeros(4, np.int32),
        "name": np.array([0, 1, 2, 3], np.int32),
        "kind": np.array(
            [EventKind.KERNEL, EventKind.OTHER, EventKind.KERNEL, EventKind.STEP], np.int8
        ),
        "strings": ("e0", "e1", "e2", "e3"),
        "tracks": Tracks(("p",), ("t",), (1,), (2,)),
        "args_offsets": offsets,
        "args_blob": b"".join(ARGS),
        "metadata": {"source": "test"},
        "hlo_programs": (HloProgram(7, "module", b"\x01\x02"),),
        "warnings": ("1 negative duration read as 0",),
    }
    if flows is None:
        return Trace(**columns)  # type: ignore[arg-type]
    return Trace(**columns, flows=flows)  # type: ignore[arg-type]


def _links() -> Flows:
    # e0 -> e1, e1 -> e3, e2 -> e3
    return Flows(
        np.array([0, 1, 2], np.int32), np.array([1, 3, 3], np.int32), np.array([5, 6, 7], np.int64)
    )


def test_select_by_boolean_mask_keeps_the_true_rows() -> None:
    trace = _trace(_links())
    kept = trace.select(np.array([False, True, False, True]))
    assert kept.ts_ns.tolist() == [20, 40]
    assert kept.names() == ["e1", "e3"]
    assert [kept.args(0), kept.args(1)] == [{}, {"c": 3}]
    # Only e1 -> e3 joins two kept rows: now row 0 -> row 1.
    assert (kept.flows.src.tolist(), kept.flows.dst.tolist()) == ([0], [1])
    assert kept.flows.flow_id.tolist() == [6]


def test_select_keeps_the_programs_warnings_and_metadata() -> None:
    trace = _trace()
    kept = trace.select(np.array([2], np.int64))
    assert kept.hlo_programs == (HloProgram(7, "module", b"\x01\x02"),)
    assert kept.warnings == ("1 negative duration read as 0",)
    assert kept.metadata == {"source": "test"}
    assert kept.args(0) == {"b": 2}


def test_select_of_no_rows_has_no_args() -> None:
    kept = _trace().select(np.zeros(0, np.int64))
    assert len(kept) == 0
    assert kept.args_blob == b""
    assert kept.args_offsets.tolist() == [0]
    empty = _trace().select(np.zeros(4, np.bool_))
    assert len(empty) == 0 and empty.args_blob == b""


def test_a_trace_made_without_flows_selects() -> None:
    trace = _trace()
    assert len(trace.flows) == 0
    assert trace.flows.src.dtype == trace.flows.dst.dtype == np.int32
    assert trace.flows.flow_id.dtype == np.int64
    kept = trace.select(np.array([0, 3], np.int64))
    assert kept.names() == ["e0", "e3"] and len(kept.flows) == 0


def test_iter_rows_is_every_row_in_order() -> None:
    assert list(_trace().iter_rows()) == [0, 1, 2, 3]


def test_to_arrow_is_one_row_per_event() -> None:
    table = _trace().to_arrow()
    assert table.num_rows == 4
    assert table.column("ts_ns").to_pylist() == [10, 20, 30, 40]
    assert table.column("name").to_pylist() == ["e0", "e1", "e2", "e3"]
    assert table.column("kind").to_pylist() == ["kernel", "other", "kernel", "step"]
    args = table.column("args").to_pylist()
    assert args[1] is None
    assert [json.loads(text) for text in args if text is not None] == [{"a": 1}, {"b": 2}, {"c": 3}]

"""Chrome reader columns, exactly: track numbering and names from `M` events, kinds from
categories, args and names, and each row's args surviving the reorder by time."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from irprof.readers import read_trace
from irprof.readers.chrome.columns import ArgsText, args_blob, compact_table, last_metadata_rows
from irprof.trace.model import EventKind, Trace


def read(tmp_path: Path, events: list[dict[str, Any]], name: str = "trace.json") -> Trace:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return read_trace(path)


def work(name: str, pid: int | str, tid: int | str, ts: float, **fields: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": 1, **fields}


def meta(kind: str, pid: int, tid: int | None = None, **args: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "name": kind, "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


def kinds(trace: Trace) -> dict[str, EventKind]:
    return {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}


def test_integer_pids_and_tids_number_tracks_in_numeric_order(tmp_path: Path) -> None:
    """Tracks follow (pid, tid) numerically, whatever order the file first names them in."""
    events = [work("a", 7, 5, 0), work("b", 3, 2, 1), work("c", 7, 2, 2)]
    tracks = read(tmp_path, events).tracks
    assert tracks.pid == (3, 7, 7)
    assert tracks.tid == (2, 2, 5)
    assert tracks.process == ("3", "7", "7")
    assert tracks.thread == ("2", "2", "5")


def test_string_tids_keep_first_seen_order_and_get_a_crc32_id(tmp_path: Path) -> None:
    """A tid table with a string in it is not sortable: first-seen order, crc32 of the text."""
    events = [work("a", 1, 5, 0), work("b", 1, "stream 7", 1), work("c", 1, 2, 2)]
    tracks = read(tmp_path, events).tracks
    assert tracks.tid == (5, zlib.crc32(b"stream 7"), 2)
    assert tracks.thread == ("5", "stream 7", "2")


def test_process_names_reach_their_own_process_when_every_event_shares_one_tid(
    tmp_path: Path,
) -> None:
    """One tid, two pids: each process's name goes to that process's track only."""
    events = [
        meta("process_name", 1, 1, name="one"),
        meta("process_name", 2, 1, name="two"),
        work("a", 1, 1, 0),
        work("b", 2, 1, 1),
    ]
    tracks = read(tmp_path, events).tracks
    assert tracks.process == ("one", "two")
    assert tracks.pid == (1, 2) and tracks.tid == (1, 1)


def test_later_metadata_overrides_earlier_and_other_metadata_is_kept(tmp_path: Path) -> None:
    """The last `process_name` of a process wins; a thread name after it is still applied."""
    events = [
        meta("process_name", 1, name="old"),
        meta("process_name", 1, name="new"),
        meta("thread_name", 1, 1, name="main"),
        work("a", 1, 1, 0),
    ]
    trace = read(tmp_path, events)
    assert trace.tracks.label(int(trace.track[0])) == "new/main"


def test_metadata_of_different_names_and_threads_is_all_applied(tmp_path: Path) -> None:
    """A thread name on one thread and a sort index on another are both kept (no two
    (metadata name, thread) pairs are mistaken for one)."""
    events = [
        meta("thread_name", 1, 2, name="second"),
        work("work1", 1, 1, 0),
        meta("thread_sort_index", 1, 1, sort_index=5),
        work("work2", 1, 2, 1),
    ]
    trace = read(tmp_path, events)
    assert trace.tracks.thread == ("1", "second")
    assert trace.metadata["sort_index"] == {"thread_sort_index:1:1": 5}


def test_metadata_without_usable_args_falls_back_to_the_ids(tmp_path: Path) -> None:
    """Names missing from an M event fall back to the pid or tid; args that are not an object
    are ignored, and the M events after them still count."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 2, "args": [1]},
        meta("thread_name", 2, 1, name="after"),
        {"ph": "M", "name": "process_name", "pid": 1},
        meta("thread_name", 1, 1),
        work("a", 1, 1, 0),
        work("b", 2, 1, 1),
    ]
    tracks = read(tmp_path, events).tracks
    assert tracks.process == ("1", "2")
    assert tracks.thread == ("1", "after")


def test_process_labels_go_to_the_sort_index_metadata(tmp_path: Path) -> None:
    """Kineto's `process_labels` ("GPU 0") are kept per pid; no labels give ""."""
    events = [
        meta("process_labels", 1, labels="GPU 0"),
        meta("process_labels", 2),
        work("a", 1, 1, 0),
    ]
    trace = read(tmp_path, events)
    assert trace.metadata["sort_index"] == {"process_labels:1": "GPU 0", "process_labels:2": ""}


def test_uncategorised_events_are_classified_from_args_name_and_duration(tmp_path: Path) -> None:
    """Without a known category: TF ops by `long_name` "<node>:<name>", "$" names as Python,
    zero duration as instant, anything else OTHER; kinds are int8 codes."""
    events = [
        work("MatMul", 1, 1, 0, args={"long_name": "dense/MatMul:MatMul"}),
        work("Conv2D", 1, 1, 1, args={"long_name": "dense/MatMul:MatMul"}),
        work("listed", 1, 1, 2, args=["long_name"]),
        work("$ python.py:3 f", 1, 1, 3),
        {"ph": "X", "name": "zero", "pid": 1, "tid": 1, "ts": 4, "dur": 0},
        {"ph": "X", "name": "one_ns", "pid": 1, "tid": 1, "ts": 5, "dur": 0.001},
        work("misc", 1, 1, 6, cat="unknown_category"),
    ]
    trace = read(tmp_path, events)
    assert kinds(trace) == {
        "MatMul": EventKind.FRAMEWORK_OP,
        "Conv2D": EventKind.OTHER,
        "listed": EventKind.OTHER,
        "$ python.py:3 f": EventKind.PYTHON,
        "zero": EventKind.INSTANT,
        "one_ns": EventKind.OTHER,
        "misc": EventKind.OTHER,
    }
    assert trace.kind.dtype == np.int8


def test_collective_kernels_are_told_by_name_among_kernels_only(tmp_path: Path) -> None:
    """Kernels named nccl*/rccl*/ccl_*/c10d* (any case) are collectives; a CPU op with such a
    name stays a framework op, other kernels stay kernels."""
    events = [
        work("ncclDevKernel_AllReduce_Sum_f32", 0, 7, 0, cat="kernel"),
        work("RCCL_AllGather", 0, 7, 2, cat="kernel"),
        work("ncclDevKernel_AllReduce_Sum_f32", 0, 7, 4, cat="kernel"),
        work("gemm", 0, 7, 6, cat="kernel"),
        work("c10d::allreduce_", 1, 1, 0, cat="cpu_op"),
    ]
    trace = read(tmp_path, events)
    assert [EventKind(int(kind)) for kind in trace.kind] == [
        EventKind.COLLECTIVE,
        EventKind.FRAMEWORK_OP,
        EventKind.COLLECTIVE,
        EventKind.COLLECTIVE,
        EventKind.KERNEL,
    ]
    assert [trace.name_of(row) for row in range(len(trace))] == [
        "ncclDevKernel_AllReduce_Sum_f32",
        "c10d::allreduce_",
        "RCCL_AllGather",
        "ncclDevKernel_AllReduce_Sum_f32",
        "gemm",
    ]


def test_each_row_keeps_its_args_when_time_order_differs_from_file_order(tmp_path: Path) -> None:
    """Sorting rows by time carries each row's own args along."""
    events = [
        work("a", 1, 1, 0, args={"i": 0}),
        work("b", 1, 1, 10, args={"i": 1}),
        work("c", 1, 1, 5, args={"i": 2}),
    ]
    trace = read(tmp_path, events)
    assert trace.names() == ["a", "c", "b"]
    assert [trace.args(row) for row in range(3)] == [{"i": 0}, {"i": 2}, {"i": 1}]


def test_merged_end_args_change_only_their_begin_row(tmp_path: Path) -> None:
    """A `B` row gets its `E`'s args merged in; the rows around it, and a `B` row that is the
    last row, keep exactly their own args."""
    middle = [
        work("w", 1, 1, 0, args={"j": 0}),
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 1, "args": {"a": 1}},
        work("x", 1, 1, 2, args={"k": "v"}),
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10, "args": {"b": 2}},
    ]
    trace = read(tmp_path, middle, "middle.json")
    assert trace.names() == ["w", "outer", "x"]
    assert [trace.args(row) for row in range(3)] == [{"j": 0}, {"a": 1, "b": 2}, {"k": "v"}]
    last = [
        work("x", 1, 1, 0, args={"k": "v"}),
        {"ph": "B", "name": "last", "pid": 1, "tid": 1, "ts": 2, "args": {"a": 1}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 10, "args": {"b": 2}},
    ]
    trace = read(tmp_path, last, "last.json")
    assert trace.names() == ["x", "last"]
    assert [trace.args(row) for row in range(2)] == [{"k": "v"}, {"a": 1, "b": 2}]


def test_one_non_object_args_row_is_wrapped_and_the_rows_before_it_kept(tmp_path: Path) -> None:
    """A single number as args becomes {"args": n}; an object row before it is untouched."""
    events = [work("a", 1, 1, 0, args={"k": 1}), work("b", 1, 1, 1, args=5)]
    trace = read(tmp_path, events)
    assert [trace.args(row) for row in range(2)] == [{"k": 1}, {"args": 5}]


def test_args_text_indexes_rows_and_slices() -> None:
    """ArgsText is a sequence of each row's raw args: length, items, slices."""
    text = ArgsText(b'{"a":1}{}5', np.array([7, 2, 1], dtype=np.int64))
    assert len(text) == 3
    assert text[0] == b'{"a":1}'
    assert list(text[1:]) == [b"{}", b"5"]
    assert list(text[::2]) == [b'{"a":1}', b"5"]


def test_empty_selections_give_empty_int64_columns() -> None:
    """No rows: an empty blob with the one offset 0; no metadata rows."""
    text = ArgsText(b"{}", np.array([2], dtype=np.int64))
    blob, offsets = args_blob(text, np.zeros(0, dtype=np.int64), {})
    assert blob == b""
    assert offsets.tolist() == [0] and offsets.dtype == np.int64
    none = np.zeros(0, dtype=np.int64)
    rows = last_metadata_rows(none, np.array([0, 1], dtype=np.int64), none)
    assert rows.rows.tolist() == [] and rows.track.tolist() == []
    assert rows.rows.dtype == np.int64 and rows.track.dtype == np.int64


def test_compact_table_drops_unused_entries_and_renumbers() -> None:
    """Unused table entries go, order is kept, ids are renumbered as int64."""
    ids, table = compact_table(np.array([2, 0, 2], dtype=np.int64), ["a", "b", "c"])
    assert table == ["a", "c"]
    assert ids.tolist() == [1, 0, 1] and ids.dtype == np.int64

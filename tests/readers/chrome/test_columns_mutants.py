"""Chrome reader columns at their edges: ids of the extreme pids and tids, kinds from `hlo_op`
and `step_num` args, interning in first-seen order.

Written from the mutants of `readers/chrome/columns.py` the first tests let through: an int64
pid of exactly -2**63 hashed as if it did not fit, 2**63 kept as an int, an uncategorised event
with `hlo_op` or `step_num` args left OTHER, `null` args wrapped, a lone `M` event given its
row for its track, two metadata keys made equal, bytes past the args in the gathered blob.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from irprof.readers import read_trace
from irprof.readers.chrome.columns import (
    ArgsText,
    args_blob,
    intern,
    last_metadata_rows,
    numeric_id,
)
from irprof.trace.model import EventKind, Trace

LOWEST = -(2**63)
HIGHEST = 2**63 - 1


def read(tmp_path: Path, events: list[dict[str, Any]]) -> Trace:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return read_trace(path)


def work(name: str, ts: float, **fields: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 2, **fields}


def test_ints_int64_holds_stay_and_the_next_ones_get_the_crc32_of_their_text() -> None:
    assert numeric_id(LOWEST) == LOWEST
    assert numeric_id(HIGHEST) == HIGHEST
    assert numeric_id(HIGHEST + 1) == zlib.crc32(b"9223372036854775808")
    assert numeric_id(LOWEST - 1) == zlib.crc32(b"-9223372036854775809")
    assert numeric_id("stream 7") == zlib.crc32(b"stream 7")


def test_a_pid_of_the_lowest_int64_keeps_its_value_in_the_tracks(tmp_path: Path) -> None:
    trace = read(tmp_path, [{"ph": "X", "name": "a", "pid": LOWEST, "tid": 3, "ts": 0, "dur": 1}])
    assert trace.tracks.pid == (LOWEST,)
    assert trace.tracks.tid == (3,)
    assert trace.tracks.process == (str(LOWEST),)


def test_uncategorised_hlo_op_args_make_a_kernel_and_step_num_args_a_step(
    tmp_path: Path,
) -> None:
    """`hlo_op` is checked before `step_num`; a known category wins over both."""
    events = [
        work("fusion.3", 0, args={"hlo_op": "fusion.3"}),
        work("train", 10, args={"step_num": 4}),
        work("both", 20, args={"step_num": 1, "hlo_op": "x"}),
        work("op", 30, cat="cpu_op", args={"hlo_op": "x"}),
        work("plain", 40, args={"hlo": 1, "step": 2}),
    ]
    trace = read(tmp_path, events)
    found = {trace.name_of(row): EventKind(int(trace.kind[row])) for row in range(len(trace))}
    assert found == {
        "fusion.3": EventKind.KERNEL,
        "train": EventKind.STEP,
        "both": EventKind.KERNEL,
        "op": EventKind.FRAMEWORK_OP,
        "plain": EventKind.OTHER,
    }


def test_intern_numbers_values_in_first_seen_order() -> None:
    ids, table = intern(["b", "a", "b", 7, "a"])
    assert ids.tolist() == [0, 1, 0, 2, 1]
    assert table == ["b", "a", 7]


def test_null_args_read_as_no_args_and_other_values_are_wrapped(tmp_path: Path) -> None:
    events = [
        work("none", 0, args=None),
        work("number", 10, args=3),
        work("object", 20, args={"k": 1}),
        work("missing", 30),
    ]
    trace = read(tmp_path, events)
    assert trace.names() == ["none", "number", "object", "missing"]
    assert [trace.args(row) for row in range(4)] == [{}, {"args": 3}, {"k": 1}, {}]


def i64(*values: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.asarray(values, dtype=np.int64)


def test_a_lone_metadata_row_keeps_its_own_track() -> None:
    kept = last_metadata_rows(i64(3), i64(0, 0, 0, 5), i64(0, 0, 0, 1))
    assert kept.rows.tolist() == [3]
    assert kept.track.tolist() == [5]


def test_metadata_of_different_names_never_share_a_key() -> None:
    """Name 0 on track 1 and name 1 on track 0 (largest track 2) are two keys: both kept."""
    kept = last_metadata_rows(i64(0, 1), i64(1, 0, 2), i64(0, 1, 0))
    assert kept.rows.tolist() == [0, 1]
    assert kept.track.tolist() == [1, 0]


def test_the_gathered_blob_holds_exactly_the_rows_args() -> None:
    text = ArgsText([b'{"a":1}{"bb":22}', b'{"c":3}'], i64(7, 9, 0, 7))
    blob, offsets = args_blob(text, i64(3, 0, 1, 2), {})
    assert blob == b'{"c":3}{"a":1}{"bb":22}'
    assert offsets.tolist() == [0, 7, 14, 23, 23]


def test_a_read_trace_blob_is_the_args_text_and_nothing_after_it(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1,'
        ' "args": {"k":2}}, {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1,'
        ' "args": {"j":[1]}}]}'
    )
    trace = read_trace(path)
    assert trace.args_blob == b'{"j":[1]}{"k":2}'
    assert trace.args_offsets.tolist() == [0, 9, 16]

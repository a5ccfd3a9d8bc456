"""Flow ids the streamed Chrome conversion keeps in its first pass: a flow without an id, and
negative integer ids in a segment before the first string id.

Written from the survivors of `readers/chrome/stream_flows.py`'s first mutation run: no test
trace had a flow event without `id` (its numeric id is 0) or a negative integer id kept as int64
before a later string id turned the ids into Python values.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from irprof.readers.chrome.reader import PHASE_FLOW_END, PHASE_FLOW_START
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.readers.chrome.stream_flows import FlowStore, flow_points
from irprof.trace.io import load_parquet
from tests.readers.chrome.test_stream import write_document


def _slice(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": "op", "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def _flow(ph: str, ts: float, flow_id: Any = None) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": ph, "name": "link", "cat": "ac2g", "pid": 1, "tid": 1}
    event["ts"] = ts
    if flow_id is not None:
        event["id"] = flow_id
    if ph == "f":
        event["bp"] = "e"
    return event


def _links(path: Path, tmp_path: Path) -> list[tuple[str, str, int]]:
    output = tmp_path / "out.parquet"
    stream_chrome_to_parquet(path, output)
    trace = load_parquet(output)
    flows = trace.flows
    return sorted(
        (trace.name_of(int(src)), trace.name_of(int(dst)), int(flow_id))
        for src, dst, flow_id in zip(
            flows.src.tolist(), flows.dst.tolist(), flows.flow_id.tolist(), strict=True
        )
    )


def test_a_flow_without_id_links_with_id_zero(tmp_path: Path) -> None:
    events = [
        _slice("a", 10, 5),
        _slice("b", 20, 5),
        _slice("c", 30, 5),
        _slice("d", 40, 5),
        _flow("s", 11),  # no id: the ids become Python values, None among them
        _flow("f", 21),
        _flow("s", 31, "x"),
        _flow("f", 41, "x"),
    ]
    links = _links(write_document(tmp_path / "t.json", events), tmp_path)
    assert links == [("a", "b", 0), ("c", "d", zlib.crc32(b"x"))]


def _fields(count: int, ts: list[int]) -> tuple[Any, ...]:
    rows = np.arange(count, dtype=np.int64)
    phase = np.array([PHASE_FLOW_START, PHASE_FLOW_END] * (count // 2), np.int8)
    zeros = np.zeros(count, np.int32)
    return (rows, phase, zeros, zeros, np.array(ts, np.int64), zeros)


def test_negative_int_ids_before_a_string_id_keep_their_value() -> None:
    store = FlowStore()
    store.add(_fields(2, [0, 5]), [np.array([-5, -5], np.int64)], [np.array([0, 0], np.bool_)])
    store.add(_fields(2, [7, 9]), [[-5, "s"]], [np.array([0, 0], np.bool_)])
    points = flow_points(store, lambda pid, tid: np.zeros(len(pid), np.int64))
    assert points is not None
    assert points.flow_id.tolist() == [-5, -5, -5, zlib.crc32(b"s")]
    assert points.phase.tolist() == [1, 3, 1, 3]  # FLOW_START, FLOW_END
    # The three points with id -5 share one key; the string id has another.
    keys = points.key.tolist()
    assert keys[0] == keys[1] == keys[2] != keys[3]


def test_points_of_one_time_keep_their_file_order() -> None:
    """`flow_points`' order is time, then file order: 2,000 points on 3 distinct times (an
    unstable sort of this many reorders equal keys), their file rows ascending within each."""
    count = 2_000
    times = [(row * 7919) % 3 for row in range(count)]
    store = FlowStore()
    store.add(
        _fields(count, times), [np.arange(count, dtype=np.int64)], [np.zeros(count, np.bool_)]
    )
    points = flow_points(store, lambda pid, tid: np.zeros(len(pid), np.int64))
    assert points is not None
    expected = sorted(range(count), key=lambda row: (times[row], row))
    assert points.order.tolist() == expected
    assert points.ts_ns.tolist() == [times[row] for row in expected]

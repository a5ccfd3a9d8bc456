"""`trace/parquet_stream.py` on its own: batches written one at a time read back as the trace
built from the same events, with each batch's name dictionary holding only its names, the
flows given at `finish` encoded slice by slice (boundaries of the slice size included), zstd,
and the misuses refused with what went wrong."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irprof.trace import parquet_stream
from irprof.trace.io import KIND_LABELS, PARQUET_METADATA_KEY, load_parquet, trace_header
from irprof.trace.model import EventKind, Flows, Tracks
from irprof.trace.parquet_stream import ParquetTraceWriter

STRINGS = ["alpha", "beta", "gamma", "delta"]
TRACKS = Tracks(("p", "p"), ("t1", "t2"), (1, 1), (1, 2))


def header(flows: Flows | None = None) -> dict[str, object]:
    return trace_header(STRINGS, TRACKS, flows or Flows.empty(), {"m": 1}, ["w"])


def args_of(values: list[bytes | None]) -> pa.Array:
    return pa.array([None if v is None else v.decode() for v in values], pa.large_string())


# Rows (ts, dur, track, name code, kind, args) in two batches and an empty one.
BATCHES = [
    [(0, 10, 0, 2, EventKind.KERNEL, b'{"a":1}'), (1, 5, 1, 2, EventKind.OTHER, None),
     (2, 1, 0, 0, EventKind.STEP, b"{}")],
    [],
    [(3, 0, 1, 3, EventKind.INSTANT, None), (4, 7, 0, 0, EventKind.COUNTER, b'{"v":2}')],
]  # fmt: skip


def write_batches(handle: io.BytesIO) -> ParquetTraceWriter:
    writer = ParquetTraceWriter(handle, STRINGS)
    for batch in BATCHES:
        writer.write(
            np.array([r[0] for r in batch], dtype=np.int64),
            np.array([r[1] for r in batch], dtype=np.int64),
            np.array([r[2] for r in batch], dtype=np.int32),
            np.array([r[3] for r in batch], dtype=np.int64),
            np.array([int(r[4]) for r in batch], dtype=np.int8),
            args_of([r[5] for r in batch]),
        )
    return writer


def saved(tmp_path: Path, flows: Flows | None, in_header: Flows | None = None) -> Path:
    handle = io.BytesIO()
    writer = write_batches(handle)
    assert writer.rows == 5
    writer.finish(header(in_header), flows)
    path = tmp_path / "t.parquet"
    path.write_bytes(handle.getvalue())
    return path


def test_batches_read_back_as_the_events_written(tmp_path: Path) -> None:
    path = saved(tmp_path, None)
    trace = load_parquet(path)
    rows = [row for batch in BATCHES for row in batch]
    assert trace.ts_ns.tolist() == [r[0] for r in rows]
    assert trace.dur_ns.tolist() == [r[1] for r in rows]
    assert trace.track.tolist() == [r[2] for r in rows]
    assert [trace.strings[i] for i in trace.name.tolist()] == [STRINGS[r[3]] for r in rows]
    assert trace.kind.tolist() == [int(r[4]) for r in rows]
    assert [trace.args(i) for i in range(len(rows))] == [
        msgspec.json.decode(r[5]) if r[5] else {} for r in rows
    ]
    assert trace.strings == tuple(STRINGS) and trace.tracks == TRACKS
    assert trace.metadata == {"m": 1} and trace.warnings == ("w",)
    assert len(trace.flows) == 0


def test_each_row_group_names_only_its_own_names_and_is_zstd(tmp_path: Path) -> None:
    parquet = pq.ParquetFile(saved(tmp_path, None))
    assert parquet.metadata.num_row_groups == 2  # the empty batch wrote nothing
    dictionaries = [
        parquet.read_row_group(group, columns=["name"]).column("name").chunks[0].dictionary
        for group in range(2)
    ]
    assert [d.to_pylist() for d in dictionaries] == [["alpha", "gamma"], ["alpha", "delta"]]
    column = parquet.metadata.row_group(0).column(0)
    assert column.compression == "ZSTD"
    assert parquet.schema_arrow.field("name").type == pa.dictionary(pa.int32(), pa.string())
    assert parquet.schema_arrow.field("kind").type == pa.dictionary(pa.int8(), pa.string())


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5])
def test_flows_given_at_finish_are_encoded_slice_by_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    monkeypatch.setattr(parquet_stream, "ENCODE_SLICE", 2)
    src = np.array([0, 1, 2, 3, 4][:count], dtype=np.int32)
    dst = np.array([4, 3, 2, 1, 0][:count], dtype=np.int32)
    flow_id = np.array([7, 2**62, -1, 0, 9][:count], dtype=np.int64)
    stale = Flows(np.array([1], np.int32), np.array([2], np.int32), np.array([5], np.int64))
    path = saved(tmp_path, Flows(src, dst, flow_id), in_header=stale)
    trace = load_parquet(path)
    assert trace.flows.src.tolist() == src.tolist()
    assert trace.flows.dst.tolist() == dst.tolist()
    assert trace.flows.flow_id.tolist() == flow_id.tolist()
    # The header is one JSON object; its flows, the given ones, not the header's own.
    raw = pq.ParquetFile(path).metadata.metadata[PARQUET_METADATA_KEY]
    decoded = msgspec.json.decode(raw)
    # One "flows" key: the header's own are dropped, not left beside the given ones (JSON
    # readers disagree on which of two equal keys counts).
    assert raw.count(b'"flows":') == 1
    assert decoded["flows"] == {
        "src": src.tolist(),
        "dst": dst.tolist(),
        "flow_id": flow_id.tolist(),
    }
    assert sorted(decoded) == sorted(header())  # flows moved last, no key lost or doubled
    assert decoded["metadata"] == {"m": 1} and decoded["kind_labels"] == KIND_LABELS


def test_without_flows_at_finish_the_header_keeps_its_own(tmp_path: Path) -> None:
    own = Flows(np.array([0], np.int32), np.array([4], np.int32), np.array([3], np.int64))
    trace = load_parquet(saved(tmp_path, None, in_header=own))
    assert trace.flows.src.tolist() == [0] and trace.flows.dst.tolist() == [4]
    assert trace.flows.flow_id.tolist() == [3]


def test_misuse_is_refused() -> None:
    writer = write_batches(io.BytesIO())
    wrong = header()
    wrong["strings"] = [*STRINGS, "extra"]
    with pytest.raises(ValueError, match=r"^header strings or kind labels differ"):
        writer.finish(wrong)
    labels = header()
    labels["kind_labels"] = KIND_LABELS[::-1]
    with pytest.raises(ValueError, match=r"^header strings or kind labels differ"):
        writer.finish(labels)
    writer.finish(header())
    with pytest.raises(ValueError, match=r"^ParquetTraceWriter\.finish called twice$"):
        writer.finish(header())
    empty = np.zeros(0, np.int64)
    with pytest.raises(ValueError, match=r"^ParquetTraceWriter\.write after finish$"):
        writer.write(empty, empty, empty.astype(np.int32), empty, empty.astype(np.int8),
                     args_of([]))  # fmt: skip


def test_abort_closes_without_a_header() -> None:
    handle = io.BytesIO()
    writer = write_batches(handle)
    writer.abort()
    writer.abort()  # twice: nothing left to close
    parquet = pq.ParquetFile(io.BytesIO(handle.getvalue()))
    assert PARQUET_METADATA_KEY not in (parquet.metadata.metadata or {})
    assert parquet.metadata.num_rows == 5
    with pytest.raises(ValueError, match="called twice"):
        writer.finish(header())

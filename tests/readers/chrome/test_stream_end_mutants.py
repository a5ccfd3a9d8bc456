"""The streamed Chrome conversion's last step when its row groups fill up inside a merge round:
with `ROW_GROUP_ROWS` made small, rows are written by the round that fills a group (through
the same writer), and the output is still the in-memory reader's trace, row for row, in
several row groups of at least that many rows each (but the last).

Written from the survivors of `readers/chrome/stream_end.py`'s first mutation run: no test
trace filled a row group (65,536 rows) before the end, so the writer a round flushes to was
never used.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from irprof.readers import read_trace
from irprof.readers.chrome import stream_end
from irprof.readers.chrome.stream import stream_chrome_to_parquet
from irprof.trace.io import load_parquet
from tests.readers.chrome.test_stream import (  # noqa: F401  (the fixture is found by its name)
    assert_same,
    crossing_events,
    fixture_tiny_merge,
    write_document,
)

GROUP = 7


@pytest.mark.usefixtures("tiny_merge")
def test_row_groups_filled_inside_a_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_end, "ROW_GROUP_ROWS", GROUP)
    source = write_document(tmp_path / "crossing.json", crossing_events())
    output = tmp_path / "out.parquet"
    stream_chrome_to_parquet(source, output, segment_bytes=3000, chunk_bytes=64, block_bytes=1024)
    trace = load_parquet(output)
    assert_same(read_trace(source), trace)
    sizes = [
        pq.ParquetFile(output).metadata.row_group(i).num_rows
        for i in range(pq.ParquetFile(output).metadata.num_row_groups)
    ]
    assert sum(sizes) == len(trace) > 3 * GROUP
    assert len(sizes) >= 3 and min(sizes[:-1]) >= GROUP

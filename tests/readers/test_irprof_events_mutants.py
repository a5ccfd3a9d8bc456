"""irprof's own Parquet trace, gzipped: `read_trace` unpacks it and reads the same trace.

Written from the survivors of `readers/irprof_events.py`'s first mutation run: no test read a
gzipped Parquet trace, so the unpacking to a temporary file was never run.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from irprof.readers import read_trace
from irprof.trace.io import save_parquet, traces_equal
from tests.trace.test_io import built_trace


def test_a_gzipped_parquet_trace_reads_back(tmp_path: Path) -> None:
    trace = built_trace()
    plain = tmp_path / "events.parquet"
    save_parquet(trace, plain)
    packed = tmp_path / "events.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    again = read_trace(packed)
    assert traces_equal(trace, again)
    assert again.args(2) == {"grid": [1, 2]}

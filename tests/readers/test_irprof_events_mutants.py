"""irprof's own Parquet trace, gzipped: `read_trace` unpacks it and reads the same trace.

Written from the survivors of `readers/irprof_events.py`'s first mutation run: no test read a
gzipped Parquet trace, so the unpacking to a temporary file was never run.
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

from irprof.errors import TraceFormatError
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


def test_a_damaged_gzipped_parquet_trace_is_refused_naming_the_users_file(tmp_path: Path) -> None:
    """The gzipped trace is read from a temporary copy; the error names the file the user gave
    (and never the copy), and says it was gzipped."""
    plain = tmp_path / "events.parquet"
    save_parquet(built_trace(), plain)
    data = plain.read_bytes()
    packed = tmp_path / "events.parquet.gz"
    packed.write_bytes(gzip.compress(data[: len(data) // 2] + data[-8:]))  # footer, no body
    with pytest.raises(TraceFormatError) as caught:
        read_trace(packed)
    message = str(caught.value)
    assert message.startswith(f"{packed}: ") and message.endswith(" (gzipped)")
    assert tempfile.gettempdir() not in message.replace(str(tmp_path), "")

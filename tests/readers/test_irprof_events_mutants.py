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


def test_the_place_and_the_problem_of_a_gzipped_traces_damage_are_kept(tmp_path: Path) -> None:
    """The refusal of the gzipped file is the plain file's refusal, named after the gzipped
    file, its place included, with " (gzipped)" after the problem."""
    import pyarrow as pa

    from tests.trace.test_io_mutants import _saved_table, _with_column, _write_table

    codes = pa.array([0, 0, 0, 0], type=pa.int8())
    column = pa.DictionaryArray.from_arrays(codes, pa.array(["bogus"]))
    plain = _write_table(tmp_path / "t.parquet", _with_column(_saved_table(), "kind", column))
    packed = tmp_path / "t.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(TraceFormatError) as plain_error:
        read_trace(plain)
    with pytest.raises(TraceFormatError) as packed_error:
        read_trace(packed)
    assert plain_error.value.where == "column 'kind'"
    assert (
        str(packed_error.value)
        == str(plain_error.value).replace(str(plain), str(packed), 1) + " (gzipped)"
    )


def test_a_plain_parquet_trace_is_read_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a gzipped trace is copied out: a plain one is read where it is."""

    def no_copy(*args: object, **kwargs: object) -> None:
        raise AssertionError("a plain Parquet trace was copied")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", no_copy)
    plain = tmp_path / "events.parquet"
    save_parquet(built_trace(), plain)
    assert traces_equal(built_trace(), read_trace(plain))

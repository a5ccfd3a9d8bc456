"""Rank of a trace file: `distributedInfo.rank` first, else the LAST number of the file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.analyses.ranks import rank_from_metadata
from irprof.errors import TraceFormatError


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("run2_rank3.json", 3),  # the first number is the run, not the rank
        ("rank7.pt.trace.json.gz", 7),
        ("host10_rank12_step4_trace.json", 4),  # the last number wins: documented rule
        ("worker_0.json", 0),
        ("trace-0042.json", 42),
    ],
)
def test_rank_is_the_last_number_of_the_file_name(name: str, rank: int) -> None:
    assert rank_from_metadata({}, Path(name)) == rank


def test_distributed_info_beats_the_file_name() -> None:
    metadata = {"trace_fields": {"distributedInfo": {"rank": 5}}}
    assert rank_from_metadata(metadata, Path("run2_rank3.json")) == 5
    # A bool is not a rank (JSON true is an int in Python).
    assert (
        rank_from_metadata({"trace_fields": {"distributedInfo": {"rank": True}}}, Path("r9")) == 9
    )


def test_no_rank_anywhere_is_an_error_or_the_default() -> None:
    with pytest.raises(TraceFormatError, match="no rank"):
        rank_from_metadata({}, Path("trace.json"))
    assert rank_from_metadata({}, Path("trace.json"), default=0) == 0

"""Rank step times, stragglers at the threshold's edge, and the rank errors' texts.

Written from the mutants of `analyses/ranks.py` the first tests let through: a rank exactly at
the straggler limit, a zero threshold, the median reported, the step time of a trace without
step markers (device windows, else the trace's span), each device category summed over devices,
the reader format passed on, and errors that name the files involved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irprof.analyses.ranks import (
    RankTime,
    rank_from_metadata,
    rank_table,
    rank_time,
    summarize_ranks,
)
from irprof.errors import TraceFormatError, UsageError
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace


def timed(rank: int, step_ns: int, source: str = "") -> RankTime:
    return RankTime(rank, source or f"rank{rank}.json", 1, step_ns, 0, 0, 0, 0, False)


def test_a_rank_exactly_at_the_limit_is_no_straggler() -> None:
    # Median 100, threshold 0.5: the limit is 150 exactly (no rounding in binary).
    table = rank_table([timed(0, 100), timed(1, 100), timed(2, 150)], 0.5)
    assert table.median_step_ns == 100
    assert table.stragglers == ()
    table = rank_table([timed(0, 100), timed(1, 100), timed(2, 151)], 0.5)
    assert table.stragglers == (2,)
    # An even count: the median is the mean of the middle two, rounded down.
    table = rank_table([timed(0, 90), timed(1, 100), timed(2, 151), timed(3, 150)], 0.5)
    assert table.median_step_ns == (100 + 150) // 2


def test_a_zero_threshold_is_allowed_and_flags_anything_above_the_median() -> None:
    table = rank_table([timed(1, 100), timed(0, 100), timed(2, 101)], 0.0)
    assert table.threshold == 0.0
    assert table.median_step_ns == 100
    assert [rank.rank for rank in table.ranks] == [0, 1, 2]
    assert table.stragglers == (2,)
    with pytest.raises(UsageError, match=r"straggler threshold -0\.01: must be >= 0"):
        rank_table([timed(0, 100)], -0.01)


def test_rank_errors_name_the_files() -> None:
    with pytest.raises(UsageError, match=r"^b\.json: rank 3 is also the rank of a\.json; "):
        rank_table([timed(3, 1, "a.json"), timed(3, 1, "b.json")])
    with pytest.raises(UsageError, match=r"^no rank traces given$"):
        rank_table([])
    with pytest.raises(TraceFormatError) as caught:
        rank_from_metadata({}, Path("dir/trace.json"))
    assert str(caught.value) == (
        f"{Path('dir/trace.json')}: no rank: no distributedInfo.rank and no number in the file "
        "name; rename it"
    )


def test_trace_fields_that_are_not_an_object_are_ignored() -> None:
    assert rank_from_metadata({"trace_fields": ["rank", 5]}, Path("worker7.json")) == 7


def host_trace(spans: list[tuple[int, int, EventKind]], pid: int = 1) -> Trace:
    builder = TraceBuilder()
    track = builder.track(pid, 1, "host", "main")
    for start, duration, kind in spans:
        builder.add(start, duration, track, "work", kind)
    return builder.build()


def test_step_time_is_the_mean_step_marker_rounded_down() -> None:
    trace = host_trace([(0, 100, EventKind.STEP), (100, 101, EventKind.STEP)])
    timing = rank_time(trace, 4, "r4.json")
    assert (timing.rank, timing.source, timing.steps) == (4, "r4.json", 2)
    assert timing.step_ns == (100 + 101) // 2
    assert timing.straggler is False


def test_without_markers_or_devices_the_step_is_the_trace_span() -> None:
    trace = host_trace([(100, 30, EventKind.FRAMEWORK_OP), (150, 250, EventKind.PYTHON)])
    timing = rank_time(trace, 0, "r0.json")
    assert timing.steps == 0
    assert timing.step_ns == (150 + 250) - 100
    assert (timing.compute_ns, timing.communication_ns, timing.memory_ns, timing.idle_ns) == (
        0,
        0,
        0,
        0,
    )


def test_without_markers_the_step_is_the_longest_device_window_and_categories_add_up() -> None:
    builder = TraceBuilder()
    gpu0 = builder.track(2, 7, "GPU 0", "stream 7")
    gpu1 = builder.track(3, 7, "GPU 1", "stream 7")
    builder.add(0, 10, gpu0, "gemm", EventKind.KERNEL)
    builder.add(20, 5, gpu0, "copy", EventKind.MEMCPY)
    builder.add(0, 40, gpu1, "conv", EventKind.KERNEL)
    builder.add(50, 10, gpu1, "fill", EventKind.MEMSET)
    builder.add(70, 5, gpu1, "allreduce", EventKind.COLLECTIVE)
    timing = rank_time(builder.build(), 0, "r0.json")
    # GPU 0: window [0, 25), busy 15. GPU 1: window [0, 75), busy 40 + 10 + 5 = 55.
    assert timing.step_ns == max(25, 75)
    assert timing.compute_ns == 10 + 40
    assert timing.memory_ns == 5 + 10
    assert timing.communication_ns == 5
    assert timing.idle_ns == (25 - 15) + (75 - 55)


def chrome_rank(path: Path, rank: int) -> Path:
    events = [{"name": "op", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]
    path.write_text(
        json.dumps({"traceEvents": events, "distributedInfo": {"rank": rank}}), encoding="utf-8"
    )
    return path


def test_summarize_ranks_reads_with_the_format_given(tmp_path: Path) -> None:
    paths = [chrome_rank(tmp_path / "a.json", 0), chrome_rank(tmp_path / "b.json", 1)]
    assert [rank.rank for rank in summarize_ranks(paths).ranks] == [0, 1]
    with pytest.raises(TraceFormatError):
        summarize_ranks(paths, format="xplane")

"""The coverage record on screen: its figures (exact nanoseconds, shares, op counts, the rows
shown only when they apply), the training phases, the largest unmatched events and ops (ten of
each), the warnings, and the capture's overhead record and its text.

Written for `renderers/coverage_table.py`, which only framework tests (left out of mutation
runs) reached. Each expected figure is worked out here from the record given.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from irprof.coverage import Coverage, UnmatchedEvent, UnmatchedOp
from irprof.renderers.coverage_table import (
    capture_overhead,
    capture_overhead_text,
    coverage_report,
)


def text_of(coverage: Coverage) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None, highlight=False)
    console.print(coverage_report(coverage))
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("│┃").replace("┃", "│").split("│")]


def rows_of(text: str) -> list[list[str]]:
    return [cells(line) for line in text.splitlines() if line.strip().startswith(("│", "┃"))]


def record(**fields: Any) -> Coverage:
    base: dict[str, Any] = {
        "level": "tf", "profiled_ns": 1_234_567, "attributed_ns": 1_000_000, "ops_total": 40,
        "ops_nontrivial": 8, "ops_annotated": 9, "ops_nontrivial_annotated": 6,
    }  # fmt: skip
    return Coverage(**{**base, **fields})


def test_the_figures() -> None:
    text = text_of(record())
    assert "coverage of level 'tf'" in text
    # 1,000,000 / 1,234,567 = 81.0%; 6 of 8 non-trivial ops
    assert rows_of(text) == [
        ["profiled op time", "1.23 ms (1,234,567 ns)"],
        ["attributed to ops", "1.00 ms (1,000,000 ns)"],
        ["time coverage", "81.0%"],
        ["ops (total)", "40"],
        ["ops (non-trivial, executed)", "8"],
        ["ops annotated", "9"],
        ["non-trivial coverage", "75.0% (6/8)"],
    ]
    assert "warning" not in text and "unmatched" not in text and "phase" not in text


def test_removed_and_untimed_ops() -> None:
    # 6 annotated and 1 untimed of 8: 87.5% seen running
    text = text_of(record(ops_not_executed=3, ops_untimed=1, extra={"untimed_reference_ns": 2_500}))
    rows = rows_of(text)
    assert ["ops with no work of their own", "3"] in rows
    assert rows.index(["ops with no work of their own", "3"]) == 5  # before "ops annotated"
    assert rows[-2:] == [
        ["ran, no time of their own", "1 (87.5% seen running)"],
        ["their time in the untimed steps", "2.50 us (not counted)"],
    ]
    for untimed in (0, -1, "5"):
        rows = rows_of(text_of(record(ops_untimed=1, extra={"untimed_reference_ns": untimed})))
        assert rows[-1] == ["ran, no time of their own", "1 (87.5% seen running)"]
    # no untimed ops: neither row, even with a reference time
    rows = rows_of(text_of(record(extra={"untimed_reference_ns": 2_500})))
    assert rows[-1] == ["non-trivial coverage", "75.0% (6/8)"]


def test_training_phases() -> None:
    training = {
        "phases_profiled_ns": {"forward": 3_000, "backward": 5_000, "optimizer": 2_000},
        "phases_ns": {"forward": 2_000, "backward": True},
        "buckets": ["optimizer"],
    }
    text = text_of(record(extra={"training": training}))
    assert "training step by phase" in text
    rows = rows_of(text)
    start = rows.index(["phase", "profiled", "attributed to ops"])
    assert rows[start + 1 :] == [
        ["forward", "3.00 us", "2.00 us"],
        ["backward", "5.00 us", "-"],  # a bool is no time
        ["optimizer", "2.00 us", "own bucket, no IR op"],
    ]
    phase_line = next(line for line in text.splitlines() if "forward" in line)
    assert phase_line.startswith("│ forward ")  # the phase on the left
    assert phase_line.rstrip().endswith(" 2.00 us │")  # the times on the right
    # phases of no time (0, negative, a bool, not a number) are left out; without buckets
    odd = {"phases_profiled_ns": {"forward": 0, "backward": -5, "optimizer": True}}
    rows = rows_of(text_of(record(extra={"training": odd})))
    assert rows[-1] == ["phase", "profiled", "attributed to ops"]
    only = {"phases_profiled_ns": {"backward": 7}, "buckets": "backward"}
    rows = rows_of(text_of(record(extra={"training": only})))
    assert rows[-1] == ["backward", "7 ns", "-"]  # buckets not a list: no bucket
    broken_records: list[object] = [
        "x", {"phases_ns": {}}, {"phases_profiled_ns": [], "phases_ns": {}},
        {"phases_profiled_ns": {"forward": 1}, "phases_ns": []},
    ]  # fmt: skip
    for broken in broken_records:
        assert "phase" not in text_of(record(extra={"training": broken}))


def test_unmatched_events_and_ops_ten_of_each() -> None:
    events = tuple(UnmatchedEvent(f"ev{i}", 1_000 * (20 - i), i + 1, "no op") for i in range(12))
    ops = tuple(UnmatchedOp(f"tf.Op{i}", f"m.py:{i}:1", "no event") for i in range(11))
    text = text_of(record(unmatched_events=events, unmatched_ops=ops, warnings=("w1", "w2")))
    rows = rows_of(text)
    start = rows.index(["event", "time", "count", "reason"])
    # 20 us down to 11 us, counts 1 to 10
    assert rows[start + 1 : start + 11] == [
        [f"ev{i}", f"{20 - i}.0 us", str(i + 1), "no op"] for i in range(10)
    ]
    assert "ev10" not in text and "ev11" not in text
    first = next(line for line in text.splitlines() if "ev0 " in line)
    assert cells(first) == ["ev0", "20.0 us", "1", "no op"]
    ninth = next(line for line in text.splitlines() if "ev9 " in line)
    # times and counts flush right: "11.0 us" and "10" padded on the left below wider cells
    assert ninth.split("│")[2].endswith(" 11.0 us ") and ninth.split("│")[3].endswith(" 10 ")
    assert first.split("│")[3].endswith(" 1 ") and first.split("│")[1].startswith(" ev0 ")
    start = rows.index(["op", "location", "reason"])
    assert rows[start + 1 : start + 11] == [
        [f"tf.Op{i}", f"m.py:{i}:1", "no event"] for i in range(10)
    ]
    assert "tf.Op10" not in text
    assert "largest unmatched events" in text
    assert "non-trivial ops without a profile (10)" in " ".join(text.split())
    assert text.splitlines()[-2:] == ["warning: w1", "warning: w2"]


def test_the_ops_title_counts_every_op_without_a_profile() -> None:
    # 30 non-trivial ops ran, 12 annotated: 18 without a profile, and 5 the compiler removed
    ops = tuple(UnmatchedOp(f"tf.Op{i}", "loc", "removed") for i in range(25))
    text = text_of(
        record(ops_nontrivial=30, ops_nontrivial_annotated=12, ops_not_executed=5,
               unmatched_ops=ops)
    )  # fmt: skip
    assert "non-trivial ops without a profile (10 of 23)" in " ".join(text.split())
    # exactly as many as shown: no "of"
    few = tuple(UnmatchedOp(f"tf.Op{i}", "loc", "r") for i in range(3))
    text = text_of(record(ops_nontrivial=5, ops_nontrivial_annotated=3, ops_not_executed=1,
                          unmatched_ops=few))  # fmt: skip
    assert "non-trivial ops without a profile (3)" in " ".join(text.split())
    text = text_of(record(ops_nontrivial=5, ops_nontrivial_annotated=3, ops_not_executed=2,
                          unmatched_ops=few))  # fmt: skip
    assert "non-trivial ops without a profile (3 of 4)" in " ".join(text.split())


OVERHEAD = {"no_profiler_ns": 100, "profiler_ns": 200, "irprof_ns": 230}


def test_the_capture_overhead_record() -> None:
    assert capture_overhead({"overhead": OVERHEAD}) == OVERHEAD
    assert capture_overhead({"overhead": {**OVERHEAD, "steps": 5}}) == {**OVERHEAD, "steps": 5}
    assert capture_overhead({"overhead": {**OVERHEAD, "steps": 0}}) == OVERHEAD
    assert capture_overhead({}) is None
    assert capture_overhead({"overhead": [100, 200, 230]}) is None
    for field in OVERHEAD:
        for bad in (0, -1, True, 1.5, None):
            assert capture_overhead({"overhead": {**OVERHEAD, field: bad}}) is None
        assert capture_overhead({"overhead": {**OVERHEAD, field: 1}}) is not None


def test_the_capture_overhead_text() -> None:
    assert capture_overhead_text({}) == ""
    assert capture_overhead_text({}, brief=True) == ""
    # 230 / 200 = 1.15; 230 / 100 = 2.30
    assert capture_overhead_text({"overhead": OVERHEAD}, brief=True) == (
        "timed steps 1.15x the profiler alone"
    )
    assert capture_overhead_text({"overhead": {**OVERHEAD, "steps": 5}}) == (
        "capture overhead (median step time of 5 timed): 100 ns without profiler, 200 ns under "
        "the framework's profiler at its defaults, 230 ns in irprof's timed steps (1.15x the "
        "profiler alone, 2.30x no profiler)"
    )
    assert capture_overhead_text({"overhead": OVERHEAD}).startswith(
        "capture overhead (median step time): 100 ns without profiler"
    )


def test_titles_alignment_and_one_nanosecond() -> None:
    events = (UnmatchedEvent("a", 123_456_789, 12_345, "r"), UnmatchedEvent("b", 5, 1, "r"))
    ops = (UnmatchedOp("tf.A", "m.py:1:1", "r"),)
    training = {"phases_profiled_ns": {"forward": 1}, "phases_ns": {"forward": 1}}
    text = text_of(
        record(
            unmatched_events=events, unmatched_ops=ops, ops_untimed=1,
            extra={"training": training, "untimed_reference_ns": 1},
        )
    )  # fmt: skip
    lines = [line.strip() for line in text.splitlines()]
    for title in ("coverage of level 'tf'", "training step by phase",
                  "largest unmatched events"):  # fmt: skip
        assert title in lines
    # 8 non-trivial ops, 6 annotated: 2 without a profile, one listed
    assert "non-trivial ops without a profile (1 of 2)" in " ".join(text.split())
    # a phase of 1 ns and 1 ns in the untimed steps are times, shown
    assert ["forward", "1 ns", "1 ns"] in rows_of(text)
    assert ["their time in the untimed steps", "1 ns (not counted)"] in rows_of(text)
    # figures flush right: "40" padded on the left below "1.23 ms (1,234,567 ns)"
    total = next(line for line in text.splitlines() if "ops (total)" in line)
    assert total.split("│")[2].endswith(" 40 ") and total.split("│")[2].startswith("  ")
    # the time and count of an unmatched event flush right, its name on the left
    small = next(line for line in text.splitlines() if line.startswith("│ b "))
    parts = small.split("│")
    assert parts[2].endswith(" 5 ns ") and parts[2].startswith("  ")
    assert parts[3].endswith(" 1 ") and parts[3].startswith("  ")

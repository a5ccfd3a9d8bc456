"""`irprof trace summary`'s tables: each table's headers and cells worked out from the rows
given here, the order in which a narrowing terminal drops columns (the highest priority first,
the later column first among equals, as `renderers/fit.py` documents) against the priorities
written out below, long names elided in the middle, the captions and the rank table.

Written for `renderers/trace_summary_tables.py`, reached before only through the CLI. The rows
and the text helpers here serve `test_trace_summary_tables_layout_mutants.py` too.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from irprof.analyses.device_waits import StreamWaits
from irprof.analyses.ranks import RankTable, RankTime
from irprof.analyses.trace_summary import DeviceTime, NameTotals, StepDeviceTime, TraceSummary
from irprof.renderers.trace_summary_tables import (
    NAME_HEAD,
    NAME_TAIL,
    cell_name,
    device_table,
    exclusive_table,
    name_table,
    rank_table,
    step_table,
    summary_tables,
    waits_table,
)


def text_of(table: Table, width: int = 400) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False)
    console.print(table)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def raw_cells(line: str) -> list[str]:
    """A table line's cells with their padding (one space each side, then the alignment's)."""
    return line.strip().strip("│┃").replace("┃", "│").split("│")


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in raw_cells(line)]


def header(text: str) -> list[str]:
    line = next((line for line in text.splitlines() if "┃" in line), "")
    return cells(line) if line else []


def body(text: str) -> list[list[str]]:
    return [cells(line) for line in text.splitlines() if line.startswith("│")]


def dropped(build: Callable[[int], Table], priority: dict[str, int]) -> list[str]:
    """Titles in the order they go as the width shrinks, while every title left is whole and
    some column of a priority above 0 is left (then rich squeezes what is left)."""
    wide = text_of(build(400))
    shown = header(wide)
    order: list[str] = []
    for width in range(len(wide.splitlines()[1]), 20, -1):
        now = header(text_of(build(width), width))
        if not set(now) <= set(shown) or len(now) < 2:
            break
        order += [title for title in shown if title not in now]
        shown = now
        if not any(priority.get(title, 0) > 0 for title in shown):
            break
    return order


def expected_drops(titles: list[str], priority: dict[str, int]) -> list[str]:
    droppable = [title for title in titles if priority.get(title, 0) > 0]
    return sorted(droppable, key=lambda title: (-priority[title], -titles.index(title)))


NAMES = (
    NameTotals("matmul_kernel", "kernel", 1_234, 5_000_000, 4_000_000),
    NameTotals("copy", "memcpy", 3, 3_000, 3_000),
)


def test_the_name_table() -> None:
    text = text_of(name_table("Top", NAMES, 8_000_000))
    titles = ["name", "kind", "count", "total", "self", "mean", "self %"]
    assert header(text) == titles
    # means 5 ms / 1,234 = 4,051 ns and 1,000 ns; self 4 ms of 8 ms = 50.0%
    assert body(text) == [
        ["matmul_kernel", "kernel", "1,234", "5.00 ms", "4.00 ms", "4.05 us", "50.0%"],
        ["copy", "memcpy", "3", "3.00 us", "3.00 us", "1.00 us", "0.0%"],
    ]
    assert "self %: of the trace's span" in " ".join(text.split())
    assert text.splitlines()[0].strip() == "Top"
    assert body(text_of(name_table("Top", NAMES, 0)))[0][-1] == "-"  # no span: no share
    priority = {"kind": 3, "count": 2, "mean": 4, "self %": 1}
    order = dropped(lambda width: name_table("Top", NAMES, 8_000_000, width), priority)
    assert order == expected_drops(titles, priority) == ["mean", "kind", "count", "self %"]


def test_long_names_are_cut_in_the_middle() -> None:
    long = "h" * NAME_HEAD + "m" * 10 + "t" * NAME_TAIL
    assert cell_name(long).plain == "h" * NAME_HEAD + "…" + "t" * NAME_TAIL
    edge = "x" * (NAME_HEAD + NAME_TAIL + 1)  # one character more than head and tail: kept
    assert cell_name(edge).plain == edge
    assert cell_name("[bold]x[/]").plain == "[bold]x[/]"  # never markup
    assert (NAME_HEAD, NAME_TAIL) == (90, 30)
    rows = (NameTotals(long, "kernel", 1, 10, 10),)
    text = text_of(name_table("Top", rows, 10, width=400), 400)
    assert body(text)[0][0] == "h" * NAME_HEAD + "…" + "t" * NAME_TAIL


def device(name: str, stream: str = "", **fields: int) -> DeviceTime:
    base = {"events": 12_345, "window_ns": 10_000, "compute_ns": 5_000,
            "communication_ns": 2_000, "memory_ns": 1_000, "busy_ns": 7_000,
            "compute_or_comm_ns": 6_000}  # fmt: skip
    return DeviceTime(name, stream, **{**base, **fields})


def test_the_device_table() -> None:
    rows = (device("GPU 0", "stream 7"), device("GPU 1", "stream 9", communication_ns=0))
    text = text_of(device_table("Device time", rows))
    titles = ["device", "stream", "events", "window", "compute", "comm", "hidden", "memory"]
    titles += ["idle", "idle %"]
    assert header(text) == titles
    # hidden: 5,000 + 2,000 - 6,000 = 1,000 of 2,000 = 50%; idle 10,000 - 7,000 = 3,000 = 30%
    assert body(text) == [
        ["GPU 0", "stream 7", "12,345", "10.0 us", "5.00 us", "2.00 us", "50%", "1.00 us",
         "3.00 us", "30.0%"],
        ["GPU 1", "stream 9", "12,345", "10.0 us", "5.00 us", "0 ns", "-", "1.00 us",
         "3.00 us", "30.0%"],
    ]  # fmt: skip
    assert "hidden: communication under compute" in text
    plain = (
        device("GPU 0", communication_ns=0),
        device("GPU 1", communication_ns=0, window_ns=0, busy_ns=0),
    )
    text = text_of(device_table("Device time", plain))
    assert "stream" not in header(text)  # whole devices: no stream column
    assert "hidden: communication" not in text
    assert body(text)[1][-1] == "-"  # no window: no share
    priority = {"events": 4, "comm": 1, "hidden": 3, "memory": 2}
    order = dropped(lambda width: device_table("Device time", rows, width), priority)
    assert order == expected_drops(titles, priority) == ["events", "hidden", "memory", "comm"]


def test_the_exclusive_table() -> None:
    rows = (device("GPU 0"),)
    text = text_of(exclusive_table(rows))
    titles = ["device", "window", "compute", "comm only", "memory only", "idle", "compute %"]
    titles += ["comm %", "memory %", "idle %"]
    assert header(text) == titles
    # compute 5,000; comm only 6,000 - 5,000; memory only 7,000 - 6,000; idle 3,000
    assert body(text) == [
        ["GPU 0", "10.0 us", "5.00 us", "1.00 us", "1.00 us", "3.00 us", "50.0%", "10.0%",
         "10.0%", "30.0%"],
    ]  # fmt: skip
    priority = {"comm only": 1, "memory only": 1, "compute %": 2, "comm %": 4, "memory %": 4}
    priority["idle %"] = 1
    order = dropped(lambda width: exclusive_table(rows, width), priority)
    assert order == expected_drops(titles, priority)
    assert order[:3] == ["memory %", "comm %", "compute %"]


def test_the_step_table() -> None:
    rows = (StepDeviceTime(0, 0, device("GPU 0")), StepDeviceTime(1, 10_000, device("GPU 0")))
    text = text_of(step_table(rows))
    titles = ["step", "device", "step time", "compute", "comm only", "memory only", "idle"]
    titles.append("idle %")
    assert header(text) == titles
    assert body(text) == [
        ["0", "GPU 0", "10.0 us", "5.00 us", "1.00 us", "1.00 us", "3.00 us", "30.0%"],
        ["1", "GPU 0", "10.0 us", "5.00 us", "1.00 us", "1.00 us", "3.00 us", "30.0%"],
    ]
    assert "Device time per step" in text
    priority = {"comm only": 1, "memory only": 2}
    order = dropped(lambda width: step_table(rows, width), priority)
    assert order == expected_drops(titles, priority) == ["memory only", "comm only"]


def waits(**fields: object) -> StreamWaits:
    base = StreamWaits(
        "GPU 0", "stream 7", 40, 9_000, 4_000, 3_000, 2_000, 30, 1_500, 6_000, 25,
        queue_max=4, queue_mean=2.25,
    )  # fmt: skip
    return StreamWaits(**{**base.__dict__, **fields})


def test_the_waits_table() -> None:
    rows = (
        waits(),
        waits(stream="stream 9", launch_delay_median_ns=None, launch_delay_max_ns=None),
    )
    text = text_of(waits_table(rows))
    titles = ["device", "stream", "idle", "host wait", "kernel wait", "unexplained"]
    titles += ["launch p50", "launch max", "queue max", "queue mean", "< 10.0 us"]
    assert header(text) == titles
    assert body(text) == [
        ["GPU 0", "stream 7", "9.00 us", "4.00 us", "3.00 us", "2.00 us", "1.50 us", "6.00 us",
         "4", "2.2", "25 of 40"],
        ["GPU 0", "stream 9", "9.00 us", "4.00 us", "3.00 us", "2.00 us", "-", "-", "4", "2.2",
         "25 of 40"],
    ]  # fmt: skip
    assert "Idle time by cause" in text and "launch: delay from the launch call" in text
    priority = {"unexplained": 1, "launch p50": 2, "launch max": 3, "queue max": 5}
    priority |= {"queue mean": 6, "< 10.0 us": 4}
    order = dropped(lambda width: waits_table(rows, width), priority)
    assert order == expected_drops(titles, priority)


def summary(**fields: object) -> TraceSummary:
    base = TraceSummary(
        source="/runs/some/long/folder/trace.json", format="chrome", events=12_345, tracks=7,
        flows=1_001, span_start_ns=1_000, span_end_ns=9_001_000,
        events_by_kind={"slice": 12_000, "instant": 345}, top_by_total=NAMES,
        top_by_self=NAMES[::-1], warnings=(),
    )  # fmt: skip
    return TraceSummary(**{**base.__dict__, **fields})


def test_the_summary_tables() -> None:
    tables = summary_tables(summary())
    assert [table.title for table in tables] == [
        "/runs/some/long/folder/trace.json (chrome)",
        "Top names by total time",
        "Top names by self time",
    ]
    overview = text_of(tables[0])
    assert header(overview) == ["events", "tracks", "flows", "span", "by kind"]
    assert body(overview) == [["12,345", "7", "1,001", "9.00 ms", "slice 12,000, instant 345"]]
    assert body(text_of(tables[2]))[0][0] == "copy"  # by self time
    # the title keeps its end: width 40 leaves 40 - len(" (chrome)") = 31 characters
    narrow = summary_tables(summary(), width=40)[0].title
    assert narrow == "…" + "/runs/some/long/folder/trace.json"[-30:] + " (chrome)"
    assert summary_tables(summary(), width=10)[0].title == (
        "…" + "/runs/some/long/folder/trace.json"[-15:] + " (chrome)"
    )  # never under 16 characters
    priority = {"tracks": 2, "flows": 1}
    order = dropped(lambda width: summary_tables(summary(), width)[0], priority)
    assert order == ["tracks", "flows"]
    gpu = device("GPU 0", "stream 7")
    full = summary_tables(
        summary(
            devices=(device("GPU 0"),),
            streams=(gpu,),
            waits=(waits(),),
            top_device=NAMES,
            steps=(StepDeviceTime(0, 0, device("GPU 0")),),
        )
    )
    assert [table.title for table in full][1:] == [
        "Device time", "Device time, exclusive (compute > comm > memory > idle; parts sum to "
        "the window)", "Device time per step (work clipped to each step marker; parts sum to "
        "the step)", "Stream time", "Idle time by cause (host wait: until the launch; kernel "
        "wait: launched, not run)", "Top device work", "Top names by total time",
        "Top names by self time",
    ]  # fmt: skip
    no_steps = summary_tables(summary(devices=(device("GPU 0"),), streams=(gpu,)))
    assert [table.title for table in no_steps][3] == "Stream time"  # no step table


def test_the_rank_table() -> None:
    ranks = (
        RankTime(0, "/x/rank0.json", 5, 10_000, 6_000, 2_000, 1_000, 1_000, False),
        RankTime(1, "/x/rank1.json", 5, 12_000, 6_000, 2_000, 1_000, 3_000, True),
    )
    text = text_of(rank_table(RankTable(ranks, 11_000, 0.1)))
    assert text.splitlines()[0].strip() == (
        "Ranks (median step 11.0 us; straggler: more than 10% slower)"
    )
    assert header(text) == ["rank", "steps", "step", "compute", "comm", "memory", "idle",
                            "straggler"]  # fmt: skip
    assert body(text) == [
        ["0", "5", "10.0 us", "6.00 us", "2.00 us", "1.00 us", "1.00 us", ""],
        ["1", "5", "12.0 us", "6.00 us", "2.00 us", "1.00 us", "3.00 us", "yes"],
    ]
    assert [line.strip() for line in text.splitlines()[-2:]] == [
        "rank 0: rank0.json",
        "rank 1: rank1.json",
    ]

"""`irprof trace summary`'s tables laid out: figures flush right and names left, names cut where
they matter least (a name in the middle, a kind at its tail, a device or stream at its head) at
the narrowest widths the columns allow, every table of a summary fitting the width asked for,
the shares of the span, the captions in full, the rank table's title and files on the left.

Written from the survivors of `renderers/trace_summary_tables.py`'s first mutation run. The
widths below are worked out from the cells (`table_width`: each column's width plus three
characters, plus one), not taken from the code under test.
"""

from __future__ import annotations

from rich.table import Table

from irprof.analyses.ranks import RankTable, RankTime
from irprof.analyses.trace_summary import NameTotals, StepDeviceTime, TraceSummary
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
from tests.renderers.test_trace_summary_tables_mutants import (
    NAMES,
    device,
    raw_cells,
    summary,
    text_of,
    waits,
)


def rows_of(text: str) -> list[list[str]]:
    """The header's and the body's cells, unstripped."""
    return [raw_cells(line) for line in text.splitlines() if line.startswith(("│", "┃"))]


def column(text: str, title: str) -> list[str]:
    """The cells of one column (header first), unstripped."""
    lines = rows_of(text)
    index = [cell.strip() for cell in lines[0]].index(title)
    return [line[index] for line in lines]


def assert_right(text: str, titles: list[str]) -> None:
    """Each column's cells end one space before the border; a shorter one starts padded."""
    for title in titles:
        cells = column(text, title)
        width = max(len(cell.strip()) for cell in cells)
        for cell in cells:
            assert cell == " " * (width - len(cell.strip()) + 1) + cell.strip() + " ", (title, cell)
        assert any(len(cell.strip()) < width for cell in cells), title  # some cell is padded


def assert_left(text: str, titles: list[str]) -> None:
    for title in titles:
        cells = column(text, title)
        width = max(len(cell.strip()) for cell in cells)
        for cell in cells:
            assert cell == " " + cell.strip() + " " * (width - len(cell.strip()) + 1), (title, cell)


def table_width(widths: list[int]) -> int:
    return sum(widths) + 3 * len(widths) + 1


def middle_cut(text: str, width: int) -> str:
    head = width // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def test_name_table_figures_right_and_names_left() -> None:
    text = text_of(name_table("Top", NAMES, 8_000_000))
    assert_right(text, ["count", "total", "self", "mean", "self %"])
    assert_left(text, ["name", "kind"])


def test_device_and_stream_tables_figures_right() -> None:
    rows = (
        device("GPU 0", "stream 7"),
        device("GPU 10", "stream 12", events=5, window_ns=200_000, compute_ns=500,
               communication_ns=0, memory_ns=0, busy_ns=500, compute_or_comm_ns=500),
    )  # fmt: skip
    text = text_of(device_table("Device time", rows))
    titles = ["events", "window", "compute", "comm", "hidden", "memory", "idle", "idle %"]
    assert_right(text, titles)
    assert_left(text, ["device", "stream"])


def test_exclusive_and_step_tables_figures_right() -> None:
    small = {"window_ns": 100, "compute_ns": 5, "communication_ns": 0, "memory_ns": 0,
             "busy_ns": 5, "compute_or_comm_ns": 5}  # fmt: skip
    rows = (device("GPU 0"), device("GPU 1", "", **small))
    text = text_of(exclusive_table(rows))
    assert_right(text, ["window", "compute", "idle", "compute %", "idle %"])
    steps = tuple(StepDeviceTime(step, 0, row) for step, row in ((3, rows[0]), (12, rows[1])))
    text = text_of(step_table(steps))
    assert_right(text, ["step", "step time", "compute", "idle", "idle %"])


def test_waits_table_figures_right_and_no_delay_as_a_dash() -> None:
    rows = (
        waits(),
        waits(stream="stream 12", events=4_000, idle_ns=90_000, host_wait_ns=5,
              kernel_wait_ns=5, unexplained_ns=89_990, launch_delay_median_ns=None,
              launch_delay_max_ns=None, queue_max=12, queue_mean=10.5, short_events=0),
    )  # fmt: skip
    text = text_of(waits_table(rows))
    titles = ["idle", "host wait", "kernel wait", "unexplained", "launch p50", "launch max"]
    titles += ["queue max", "queue mean", "< 10.0 us"]
    assert_right(text, titles)
    assert [cell.strip() for cell in column(text, "launch p50")] == ["launch p50", "1.50 us", "-"]
    caption = (
        "launch: delay from the launch call to the kernel's start; queue: kernels launched and"
        " not finished"
    )
    bottom = next(i for i, line in enumerate(text.splitlines()) if line.startswith("└"))
    assert " ".join(" ".join(text.splitlines()[bottom + 1 :]).split()) == caption


def test_overview_figures_right() -> None:
    summary = TraceSummary(
        source="t.json", format="chrome", events=5, tracks=3, flows=2, span_start_ns=0,
        span_end_ns=9_000_000, events_by_kind={"slice": 5}, top_by_total=(), top_by_self=(),
        warnings=(),
    )  # fmt: skip
    text = text_of(summary_tables(summary)[0])
    # one row: figures narrower than their titles, and a span ("9.00 ms") wider than its title
    assert_right(text, ["events", "tracks", "flows", "span"])


def test_names_kinds_and_places_cut_at_their_minimum_widths() -> None:
    name = "a" * 40 + "b" * 40
    rows = (NameTotals(name, "kernel_launch", 1_234, 5_000_000, 4_000_000),)
    # cells: name 80, kind 13, count 5, total 7, self 7, mean 7 ("4.05 us"), self % 6 ("50.0%"
    # under its title); at the narrowest, name 24 and kind 7 with the mean (4) dropped:
    width = table_width([24, 7, 5, 7, 7, 6])
    text = text_of(name_table("Top", rows, 8_000_000, width), width)
    lines = rows_of(text)
    assert [cell.strip() for cell in lines[0]] == ["name", "kind", "count", "total", "self",
                                                   "self %"]  # fmt: skip
    assert lines[1][0].strip() == middle_cut(name, 24) == "a" * 12 + "…" + "b" * 11
    assert lines[1][1].strip() == "kernel…"
    # one character less: the kind (3) goes next, and the name keeps 24
    narrower = rows_of(text_of(name_table("Top", rows, 8_000_000, width - 1), width))
    assert [cell.strip() for cell in narrower[0]] == ["name", "count", "total", "self", "self %"]
    # devices and streams keep their ends, down to 8 characters
    place = "/device:GPU:0 (pid 7)"
    stream = "stream 1234567 (compute)"
    wide = text_of(waits_table((waits(device=place, stream=stream),)))
    natural = [
        max(len(cell.strip()) for cell in cells) for cells in zip(*rows_of(wide), strict=True)
    ]
    # the last priority columns dropped one by one; with the six of priority 0 and 1 left and
    # device and stream at 8, the table fits exactly
    kept = natural[:6]
    width = table_width([8, 8, *kept[2:]])
    text = text_of(waits_table((waits(device=place, stream=stream),), width), width)
    cells = [cell.strip() for cell in rows_of(text)[1]]
    assert cells[:2] == ["…" + place[-7:], "…" + stream[-7:]]
    assert len(rows_of(text)[0]) == 6


def test_the_overview_cuts_its_kinds_at_the_tail() -> None:
    kinds = {"slice": 12_000, "instant": 345, "counter": 99, "flow": 7}
    summary = TraceSummary(
        source="t.json", format="chrome", events=12_451, tracks=7, flows=1_001,
        span_start_ns=1_000, span_end_ns=9_001_000, events_by_kind=kinds, top_by_total=(),
        top_by_self=(), warnings=(),
    )  # fmt: skip
    by_kind = ", ".join(f"{k} {n:,}" for k, n in kinds.items())
    # events "12,451" 6, span "9.00 ms" 7; tracks and flows dropped; by kind at its 16
    width = table_width([6, 7, 16])
    text = text_of(summary_tables(summary, width)[0], width)
    lines = rows_of(text)
    assert [cell.strip() for cell in lines[0]] == ["events", "span", "by kind"]
    assert lines[1][2].strip() == by_kind[:15] + "…"


def test_long_names_from_one_character_past_head_and_tail() -> None:
    name = "h" * NAME_HEAD + "mm" + "t" * NAME_TAIL  # head + tail + 2: cut
    assert cell_name(name).plain == "h" * NAME_HEAD + "…" + "t" * NAME_TAIL


def test_every_table_of_a_summary_fits_the_width_and_shares_are_of_the_span() -> None:
    gpu = device("/device:GPU:0 with a long name", "stream 7 with a long name")
    full = summary(
        devices=(device("/device:GPU:0 with a long name"),),
        streams=(gpu,),
        waits=(waits(device=gpu.device, stream=gpu.stream),),
        top_device=NAMES,
        steps=(StepDeviceTime(0, 0, device("/device:GPU:0 with a long name")),),
    )
    widest = [max(map(len, text_of(table).splitlines())) for table in summary_tables(full, 400)]
    assert len(widest) == 9 and min(widest[1:]) > 64 and min(widest[1:6]) > 100  # all cut below
    for width in (64, 100):
        for table in summary_tables(full, width):
            text = text_of(table, 400)
            assert max(len(line) for line in text.splitlines()) <= width, (table.title, width)
    # self %: of the span, 9,000,000 ns: 4,000,000 -> 44.4%, 3,000 -> 0.0%
    by_title = {table.title: text_of(table) for table in summary_tables(full)}
    for title in ("Top device work", "Top names by total time", "Top names by self time"):
        shares = {cells[0].strip(): cells[-1].strip() for cells in rows_of(by_title[title])[1:]}
        assert shares == {"matmul_kernel": "44.4%", "copy": "0.0%"}, title


def test_captions_in_full_and_none_where_nothing_needs_one() -> None:
    text = text_of(name_table("Top", NAMES, 8_000_000))
    assert text.splitlines()[-1].strip() == "self %: of the trace's span"
    hidden = text_of(device_table("Device time", (device("GPU 0"),)))
    assert hidden.splitlines()[-1].strip() == "hidden: communication under compute"
    none = text_of(device_table("Device time", (device("GPU 0", communication_ns=0),)))
    assert none.splitlines()[-1].startswith("└")  # no caption line under the table


def test_the_rank_table_title_and_files_on_the_left_one_line_a_rank() -> None:
    ranks = (
        RankTime(0, "/x/rank0.json", 5, 10_000, 6_000, 2_000, 1_000, 1_000, False),
        RankTime(10, "/x/rank10.json", 50, 12_000_000, 6, 2, 1, 3, True),
    )
    text = text_of(rank_table(RankTable(ranks, 11_000, 0.1)))
    lines = text.splitlines()
    assert lines[0].startswith("Ranks (median step 11.0 us")
    assert [line.rstrip() for line in lines[-2:]] == ["rank 0: rank0.json", "rank 10: rank10.json"]
    assert_right(text, ["rank", "steps", "step", "compute", "comm", "memory", "idle"])
    # a terminal narrower than the table: figures are cut, each rank stays on one line
    narrow = text_of(rank_table(RankTable(ranks, 11_000, 0.1)), 50)
    body = [line for line in narrow.splitlines() if line.startswith("│")]
    assert len(body) == 2


def test_columns_of_priority_zero_stay_at_any_width() -> None:
    # far too narrow for any table: every droppable column goes, the others all stay (shown
    # here on a wide console so that their titles are whole)
    def titles(table: Table) -> list[str]:
        return [cell.strip() for cell in rows_of(text_of(table))[0]]

    assert titles(name_table("Top", NAMES, 8_000_000, 20)) == ["name", "total", "self"]
    rows = (device("GPU 0", "stream 7"),)
    assert titles(device_table("Device time", rows, 20)) == [
        "device", "stream", "window", "compute", "idle", "idle %",
    ]  # fmt: skip
    assert titles(exclusive_table(rows, 20)) == ["device", "window", "compute", "idle"]
    steps = (StepDeviceTime(0, 0, device("GPU 0")),)
    assert titles(step_table(steps, 20)) == [
        "step", "device", "step time", "compute", "idle", "idle %",
    ]  # fmt: skip
    assert titles(waits_table((waits(),), 20)) == [
        "device", "stream", "idle", "host wait", "kernel wait",
    ]  # fmt: skip
    assert titles(summary_tables(summary(), 20)[0]) == ["events", "span", "by kind"]

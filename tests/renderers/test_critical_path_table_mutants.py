"""The critical-path table on paths built in code: its title's figures, which events are rows
(the heaviest `limit` with work, ranked by their place on the path), each column's text, and
the caption's notes.

Written from the mutants of `renderers/critical_path_table.py`; the expected text is worked out
from the events each case gives.
"""

from __future__ import annotations

from rich.console import Console

from irprof.analyses.critical_path import CriticalPath, PathEvent
from irprof.renderers.critical_path_table import critical_path_table, critical_path_title


def event(node: int, ts_ns: int, dur_ns: int, self_ns: int, ops: tuple[str, ...] = ()) -> PathEvent:
    return PathEvent(node, f"event{node}", f"track{node % 2}", ts_ns, dur_ns, self_ns, ops)


EVENTS = (
    event(0, 1_000, 500, 400, ("tf: a",)),
    event(1, 1_500, 2_000, 0),  # a pure link: no work
    event(2, 2_000, 1_500, 1_500, ("tf: b", "tf: c")),
    event(3, 3_500, 600, 100),
)


def path(**fields: object) -> CriticalPath:
    values: dict[str, object] = {
        "step": 1, "steps": 3, "start_ns": 1_000, "end_ns": 5_000, "events": EVENTS,
        "links": ((0, 1), (1, 2), (2, 3)),
    }  # fmt: skip
    values.update(fields)
    return CriticalPath(**values)  # type: ignore[arg-type]


def rows(table: object) -> list[list[str]]:
    """The cells of each body row of the printed table."""
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    lines = console.export_text().splitlines()
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in lines
        if line.startswith("│")
    ]


def test_the_title_gives_the_step_the_work_and_its_share_of_the_wall_time() -> None:
    # 400 + 1_500 + 100 = 2_000 ns of work in 4_000 ns: 50%.
    assert critical_path_title(path()) == (
        "critical path of step 1 of 3: 4 events, 2.00 us of work in 4.00 us wall (50%)"
    )
    whole = path(step=-1, steps=0)
    assert critical_path_title(whole).startswith("critical path of the whole trace: 4 events")
    empty = path(start_ns=0, end_ns=0, events=(), links=())
    assert critical_path_title(empty) == (
        "critical path of step 1 of 3: 0 events, 0 ns of work in 0 ns wall (0%)"
    )


def test_rows_are_the_heaviest_events_with_work_in_path_order() -> None:
    table = critical_path_table(path(), limit=2)
    # Events 2 (1.5 us) and 0 (400 ns) are the heaviest two; they keep ranks 3 and 1.
    assert rows(table) == [
        ["1", "event0", "track0", "+0 ns", "500 ns", "400 ns", "tf: a"],
        ["3", "event2", "track0", "+1.00 us", "1.50 us", "1.50 us", "tf: b, tf: c"],
    ]
    assert str(table.caption) == "2 more events on the path add less work (or only link)"


def test_an_event_without_ops_shows_a_dash_and_no_note_when_every_event_is_listed() -> None:
    single = path(events=(event(5, 2_000, 100, 100),), links=())
    table = critical_path_table(single)
    assert rows(table) == [["1", "event5", "track1", "+1.00 us", "100 ns", "100 ns", "-"]]
    assert not table.caption


def test_the_caption_adds_the_sync_summary_when_syncs_were_followed() -> None:
    table = critical_path_table(path(syncs_followed=True, sync_edges=2, unresolved_syncs=1))
    assert str(table.caption) == (
        "1 more events on the path add less work (or only link)\n"
        "CUDA syncs: 2 dependencies in the step, 0 on the path, 1 calls unresolved"
    )
    no_syncs = critical_path_table(path(sync_edges=2))
    assert str(no_syncs.caption) == "1 more events on the path add less work (or only link)"


def test_the_columns_headers_alignment_and_styles() -> None:
    table = critical_path_table(path())
    assert table.title == critical_path_title(path())
    assert [str(column.header) for column in table.columns] == [
        "#", "event", "track", "start", "duration", "work on path", "IR ops",
    ]  # fmt: skip
    assert [column.justify for column in table.columns] == [
        "right", "left", "left", "right", "right", "right", "left",
    ]  # fmt: skip
    assert [column.style for column in table.columns] == ["dim", "", "dim", "", "", "", "cyan"]


def test_narrow_tables_drop_track_then_start_then_ir_ops_then_duration() -> None:
    """With `limit=2` the columns' natural widths are 1, 6, 6, 8, 8, 12 and 12 (the header
    `work on path`, the cell `tf: b, tf: c`): 53 characters plus 3 per column and 1."""

    def headers(width: int) -> list[str]:
        table = critical_path_table(path(), limit=2, width=width)
        return [str(column.header) for column in table.columns]

    every = ["#", "event", "track", "start", "duration", "work on path", "IR ops"]
    assert headers(53 + 3 * 7 + 1) == every
    assert headers(74) == [name for name in every if name != "track"]
    assert headers(47 + 3 * 6 + 1) == [name for name in every if name != "track"]
    assert headers(65) == ["#", "event", "duration", "work on path", "IR ops"]
    assert headers(54) == ["#", "event", "duration", "work on path"]
    assert headers(39) == ["#", "event", "work on path"]


def test_step_zero_is_a_step_and_one_ns_of_work_is_a_row() -> None:
    first = path(step=0, events=(event(7, 1_000, 10, 1),), links=())
    assert critical_path_title(first).startswith("critical path of step 0 of 3: 1 events, 1 ns")
    assert rows(critical_path_table(first)) == [
        ["1", "event7", "track1", "+0 ns", "10 ns", "1 ns", "-"]
    ]


def test_long_cells_shrink_track_then_ir_ops_then_event_to_their_minimums() -> None:
    """Narrowest widths 1, 20, 8, 5, 8, 12 and 12 (+ 22 of borders): at 88 characters no
    column is dropped; the track (priority 3) keeps its tail, the IR ops (1) their head and
    the event (0) both ends."""
    name = "head-" + "x" * 30 + "-tail"
    track = "trk-" + "y" * 22 + "-end"
    ops = ("tf: " + "z" * 22 + "-op",)
    long_path = path(events=(PathEvent(9, name, track, 1_000, 10, 10, ops),), links=())
    table = critical_path_table(long_path, width=1 + 20 + 8 + 5 + 8 + 12 + 12 + 3 * 7 + 1)
    assert len(table.columns) == 7
    assert rows(table) == [
        [
            "1",
            name[:10] + "…" + name[-9:],
            "…" + track[-7:],
            "+0 ns",
            "10 ns",
            "10 ns",
            ops[0][:11] + "…",
        ]
    ]
    # At 80 even the narrowest layout (88) is too wide: the track goes, and the event gets
    # what is left once the IR ops are at their minimum: 80 - (1 + 5 + 8 + 12 + 12 + 19).
    narrower = critical_path_table(long_path, width=80)
    assert [str(column.header) for column in narrower.columns] == [
        "#", "event", "start", "duration", "work on path", "IR ops",
    ]  # fmt: skip
    assert rows(narrower)[0][1] == name[:11] + "…" + name[-11:]  # 23 characters


def test_forty_events_are_listed_by_default() -> None:
    many = tuple(event(node, 1_000 + node, 1, 100 + node) for node in range(41))
    table = critical_path_table(path(events=many, links=()))
    listed = rows(table)
    assert len(listed) == 40 and listed[0][:2] == ["2", "event1"]  # event0 has the least work
    assert str(table.caption) == "1 more events on the path add less work (or only link)"

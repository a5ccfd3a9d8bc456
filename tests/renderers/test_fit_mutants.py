"""`renderers/fit.py` at its edges: shortening to 1 and 2 characters, a layout exactly as wide
as the terminal, which columns may go (priority 0 never, 1 and up), the least important
shrinkable column narrowed first, and the rich table built from the fit: its title on the left,
its caption, its width not stretched, figures on the right, column and cell styles, one line
per row even when nothing more can go, and no rows without columns.

Written from the survivors of the module's first mutation run. Widths are worked out here
(`box`: each column's width plus 3, plus 1), not taken from the code under test.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from irprof.renderers.fit import FitColumn, fit_columns, fit_table, shorten_to


def box(widths: list[int]) -> int:
    return sum(widths) + 3 * len(widths) + 1


def render(table: Table, width: int = 200, color: bool = False) -> str:
    console = Console(
        file=io.StringIO(), width=width, color_system="standard" if color else None,
        force_terminal=color, highlight=False,
    )  # fmt: skip
    console.print(table)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


@pytest.mark.parametrize(
    ("width", "how", "expected"),
    [(1, "head", "…"), (1, "tail", "…"), (1, "middle", "…"), (0, "tail", ""),
     (2, "head", "…f"), (2, "tail", "a…"), (2, "middle", "a…"), (3, "middle", "a…f")],
)  # fmt: skip
def test_shorten_to_one_and_two_characters(width: int, how: str, expected: str) -> None:
    assert shorten_to("abcdef", width, how) == expected  # type: ignore[arg-type]


def titles(columns: list[FitColumn], width: int) -> list[str]:
    return [column.title for column, _ in fit_columns(columns, width)]


def test_a_layout_exactly_as_wide_as_the_terminal_keeps_every_column() -> None:
    columns = [FitColumn("aaaa", ["1"]), FitColumn("bbbbbb", ["2"], priority=1)]
    assert titles(columns, box([4, 6])) == ["aaaa", "bbbbbb"]
    assert titles(columns, box([4, 6]) - 1) == ["aaaa"]  # one less: the priority-1 one goes


def test_priority_zero_stays_however_narrow() -> None:
    columns = [
        FitColumn("keep", ["x" * 30]),
        FitColumn("one", ["1"], priority=1),
        FitColumn("two", ["2"], priority=2),
    ]
    fitted = fit_columns(columns, 10)
    assert [(column.title, width) for column, width in fitted] == [("keep", 30)]


def test_nothing_left_to_shrink_gives_the_narrowest_layout() -> None:
    columns = [FitColumn("name", ["n" * 40], shrink="head", min_width=12), FitColumn("v", ["9"])]
    fitted = fit_columns(columns, 20)
    assert [(column.title, width) for column, width in fitted] == [("name", 12), ("v", 1)]


def test_the_least_important_shrinkable_column_is_narrowed_first() -> None:
    columns = [
        FitColumn("less", ["l" * 30], priority=2, shrink="head", min_width=10),
        FitColumn("more", ["m" * 30], priority=1, shrink="head", min_width=10),
    ]
    # 5 characters too wide: all of them from "less", the first one, though "more" comes later
    fitted = fit_columns(columns, box([30, 30]) - 5)
    assert [width for _, width in fitted] == [25, 30]
    # equal priorities: the wider one gives
    columns = [
        FitColumn("a", ["a" * 20], shrink="tail", min_width=10),
        FitColumn("b", ["b" * 30], shrink="tail", min_width=10),
    ]
    assert [width for _, width in fit_columns(columns, box([20, 30]) - 5)] == [20, 25]


def table() -> Table:
    columns = [
        FitColumn("name", ["alpha/beta/gamma", "op"], shrink="tail", min_width=8, style="bold"),
        FitColumn("time", ["12.5 ms", "3 us"], justify="right", cell_styles=["red"]),
    ]
    return fit_table(columns, box([10, 7]), title="Top ops", caption="times: medians")


def test_the_table_has_its_title_left_and_its_caption() -> None:
    text = render(table())
    lines = text.splitlines()
    assert lines[0] == "Top ops".ljust(box([10, 7]))  # on the left, padded to the table
    assert lines[-1].strip() == "times: medians"
    assert all(len(line) == box([10, 7]) for line in lines)  # not stretched to 200
    assert [line for line in lines if line.startswith("┃")] == ["┃ name       ┃    time ┃"]
    rows = [line for line in lines if line.startswith("│")]
    assert rows == ["│ alpha/bet… │ 12.5 ms │", "│ op         │    3 us │"]
    bare = render(fit_table([FitColumn("a", ["1"])], 40))
    assert bare.splitlines()[-1].startswith("└")  # no caption: nothing under the table


def test_column_and_cell_styles() -> None:
    text = render(table(), color=True)
    assert "\x1b[1malpha/bet…" in text  # the column's style: bold
    assert "\x1b[31m12.5 ms" in text  # the first cell's own style: red
    assert "\x1b[31m   3 us" not in text and "3 us" in text  # no style given for the second


def test_every_row_stays_one_line_when_nothing_more_can_go() -> None:
    columns = [FitColumn("first", ["word " * 6]), FitColumn("second", ["more " * 6])]
    text = render(fit_table(columns, 30), width=30)
    lines = text.splitlines()
    # the header and the one row, each on one line
    assert [line[0] for line in lines if line[0] in "┃│"] == ["┃", "│"]
    assert all(len(line) <= 30 for line in text.splitlines())


def test_no_columns_no_rows() -> None:
    assert fit_table([], 80).row_count == 0

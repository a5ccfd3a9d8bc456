"""`top`'s table in a narrow terminal, in colour, and its title: which column goes first, how
far each name column shrinks, the styles, the locations an editor opens and `top_title`.

Written from the second run's survivors of `renderers/hotspot_table.py` (the columns'
priorities, minimum widths and shrink modes, the bold and cyan styles, the table title, an op
of a called function, a script path holding `:`). The order in which columns go is the one
`renderers/fit.py` documents (the highest priority first, the later column first among equals)
applied to the priorities written out below; every shortened cell is worked out here from the
cell's text and the column's minimum width.
"""

from __future__ import annotations

import io
from dataclasses import replace

from iree.compiler import ir
from rich.console import Console
from rich.table import Table

from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.analyses.roofline import Roofline, RooflineOptions, RooflinePoint
from irprof.analyses.top_view import TopView
from irprof.manifest import Manifest
from irprof.mlir.context import make_context
from irprof.renderers.hotspot_table import (
    editor_location,
    hotspot_rich_table,
    render_text,
    roofline_caption,
    top_title,
)

MODULE = """
module {
  func.func private @relu(%x: f32) -> f32 {
    %0 = arith.maximumf %x, %x : f32 loc("max")
    return %0 : f32
  }
  func.func @main(%x: f32) -> f32 {
    %0 = arith.addf %x, %x : f32 loc("/abs/dir/model.py":7:3)
    %1 = arith.mulf %0, %0 : f32 loc("C:/proj/model.py":9:5)
    %2 = func.call @relu(%1) : (f32) -> f32 loc(callsite("jit(relu)"("/abs/dir/other.py":3:1)
        at "/abs/dir/model.py":20:1))
    return %2 : f32
  }
}
"""


def profiled() -> ProfiledModule:
    with make_context():
        return profiled_ops_of(ir.Module.parse(MODULE))


def index_of(module: ProfiledModule, name: str) -> int:
    return next(op.index for op in module.ops if op.op_name == name)


def row(key: str, **fields: object) -> HotspotRow:
    base = HotspotRow(
        key=key, op_name="arith.addf", total_ns=3_000, share=0.25, count=3, mean_ns=1_000,
        ops=2, kernels=(), fused_with=(), location="", op_index=0,
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


PEAKS = MachinePeaks(100.0, 10.0, "given")
ROOFLINE_TITLES = ["FLOP/B", "GFLOP/s", "GB/s", "roof", "bound"]


def roofline(by: str) -> Roofline:
    point = RooflinePoint(
        key="k", op_name="arith.addf", location="", op_index=0, group="", ops=1,
        total_ns=1_000_000, share=0.5, estimated=False, executions=1, category="matmul",
        flops=3_141_592, bytes=100_000, peaks=PEAKS, options=RooflineOptions(),
    )  # fmt: skip
    return Roofline("tf", by, PEAKS, RooflineOptions(), (point,))


def cells(line: str) -> list[str]:
    """The cells of one printed row."""
    return [cell.strip() for cell in line.strip().strip("│┃").replace("┃", "│").split("│")]


def header_of(text: str) -> list[str]:
    line = next((line for line in text.splitlines() if "┃" in line), "")
    return cells(line) if line else []


def dropped_in_order(table: HotspotTable, module: ProfiledModule, **options: object) -> list[str]:
    """The column titles in the order they disappear as the terminal narrows one character at
    a time, as long as every title left is shown whole."""
    text = render_text(hotspot_rich_table(table, module, **options), width=400)  # type: ignore[arg-type]
    wide = header_of(text)
    order: list[str] = []
    shown = wide
    for width in range(len(text.splitlines()[0]), 20, -1):
        text = render_text(hotspot_rich_table(table, module, width=width, **options), width=width)  # type: ignore[arg-type]
        header = header_of(text)
        if not set(header) <= set(wide):
            break  # a title is cut: only the columns that are never dropped are left
        order += [title for title in shown if title not in header]
        shown = header
    return order


def expected_order(titles: list[str], priority: dict[str, int]) -> list[str]:
    """Highest priority first; among equal priorities the later column first."""
    droppable = [title for title in titles if priority.get(title, 0) > 0]
    return sorted(droppable, key=lambda title: (-priority[title], -titles.index(title)))


PRIORITY = {
    "kind (arith.)": 4, "kind": 4, "count": 6, "mean": 5, "step min/med/max": 3, "ops": 6,
    "location": 1, "location (hottest op)": 1, **dict.fromkeys(ROOFLINE_TITLES, 2),
}  # fmt: skip


def test_columns_go_by_priority_by_op_with_the_mean() -> None:
    module = profiled()
    table = HotspotTable("op", (row("main/add"),), 3_000, 3_000, stat="sum")
    titles = ["#", "op (runtime name)", "kind (arith.)", "time", "share", "count", "mean"]
    titles.append("location")
    assert header_of(render_text(hotspot_rich_table(table, module))) == titles
    assert dropped_in_order(table, module) == expected_order(titles, PRIORITY)
    assert dropped_in_order(table, module)[:3] == ["count", "mean", "kind (arith.)"]


def test_columns_go_by_priority_by_op_with_steps_and_the_roofline() -> None:
    module = profiled()
    steps = {"steps": 3, "step_min_ns": 1, "step_median_ns": 2, "step_max_ns": 3}
    table = HotspotTable("op", (row("main/add", **steps),), 3_000, 3_000, stat="median")
    titles = ["#", "op (runtime name)", "kind (arith.)", "median x3", "share", "count"]
    titles += ["step min/med/max", *ROOFLINE_TITLES, "location"]
    options = {"roofline": roofline("op")}
    assert header_of(render_text(hotspot_rich_table(table, module, **options))) == titles  # type: ignore[arg-type]
    order = dropped_in_order(table, module, **options)
    assert order == expected_order(titles, PRIORITY)
    first = ["count", "kind (arith.)", "step min/med/max"]
    assert order == [*first, *ROOFLINE_TITLES[::-1], "location"]


def test_columns_go_by_priority_by_type_and_by_scope() -> None:
    module = profiled()
    table = HotspotTable("type", (row("arith.addf"),), 3_000, 3_000, stat="sum")
    titles = ["#", "op kind", "time", "share", "count", "mean", "ops", "location (hottest op)"]
    assert header_of(render_text(hotspot_rich_table(table, module))) == titles
    assert dropped_in_order(table, module) == expected_order(titles, PRIORITY)
    assert dropped_in_order(table, module)[:2] == ["ops", "count"]
    scope = HotspotTable("scope", (row("main"),), 3_000, 3_000, stat="sum")
    titles = ["#", "name scope", "kind (arith.)", "time", "share", "count", "mean", "ops"]
    titles.append("location (hottest op)")
    assert header_of(render_text(hotspot_rich_table(scope, module))) == titles
    assert dropped_in_order(scope, module) == expected_order(titles, PRIORITY)


LONG_KEY = "outer_block/" * 6 + "dense_layer/add"
LONG_KIND = "arith.addf, arith.mulf, arith.subf"
LONG_FILE = "a_model_script_with_a_long_name_for_the_test.py"  # longer than 32 with `…/`


def narrowest_full(table: HotspotTable, module: ProfiledModule, titles: list[str]) -> str:
    """The table at the least width that still shows every column: each column that can
    shrink is then at its minimum width."""
    text = render_text(hotspot_rich_table(table, module), width=400)
    for width in range(len(text.splitlines()[0]), 20, -1):
        candidate = render_text(hotspot_rich_table(table, module, width=width), width=width)
        if header_of(candidate) != titles:
            return text
        text = candidate
    return text


def test_names_and_locations_shrink_to_their_minimum_widths() -> None:
    # no shared dialect: the kind column is titled `kind` and shrinks to 10 characters (its
    # tail goes); the key to 32 (its head goes); the location to `…/file:line:col`
    module = profiled()
    location = "/a/deep/folder/of/the/user/model.py:12:7"
    module = replace(
        module,
        ops=tuple(
            replace(op, chain=(location,), source=location, location=location)
            if op.op_name == "arith.addf"
            else op
            for op in module.ops
        ),
    )
    add = index_of(module, "arith.addf")
    rows = (
        row(LONG_KEY, op_name=LONG_KIND, op_index=add),
        row("b", op_name="tf.A", op_index=add),
    )
    table = HotspotTable("op", rows, 3_000, 3_000, stat="sum")
    titles = ["#", "op (runtime name)", "kind", "time", "share", "count", "mean", "location"]
    text = narrowest_full(table, module, titles)
    line = next(line for line in text.splitlines() if "│ 1 " in line)
    file_part = location.rsplit("/", 1)[-1]
    assert cells(line)[1] == "…" + LONG_KEY[-31:]
    assert cells(line)[2] == LONG_KIND[:9] + "…"
    assert cells(line)[7] == "…" + location[-(len(file_part) + 1) :]
    assert cells(line)[7] == "…/model.py:12:7"


def test_a_location_of_a_long_file_name_shrinks_to_32() -> None:
    module = profiled()
    location = f"/a/deep/folder/{LONG_FILE}:12:7"
    module = replace(
        module,
        ops=tuple(
            replace(op, chain=(location,), source=location, location=location)
            if op.op_name == "arith.addf"
            else op
            for op in module.ops
        ),
    )
    add = index_of(module, "arith.addf")
    table = HotspotTable("op", (row("main/add", op_index=add),), 3_000, 3_000, stat="sum")
    titles = ["#", "op (runtime name)", "kind (arith.)", "time", "share", "count", "mean"]
    titles.append("location")
    text = narrowest_full(table, module, titles)
    line = next(line for line in text.splitlines() if "main/add" in line)
    assert cells(line)[7] == "…" + location[-31:]


def test_a_table_without_rows() -> None:
    module = profiled()
    table = HotspotTable("type", (), 0, 0, stat="sum")
    text = render_text(hotspot_rich_table(table, module, width=60), width=60)
    assert header_of(text)[0] == "#"
    assert "0 rows" in text


def colour_text(table: Table, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, color_system="standard")
    console.print(table)
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def test_unstable_spreads_are_bold_and_locations_cyan() -> None:
    module = profiled()
    add = index_of(module, "arith.addf")
    steps = {"steps": 3, "step_min_ns": 1_000, "step_median_ns": 2_000, "step_max_ns": 9_000}
    rows = (
        row("main/add", op_index=add, unstable=True, **steps),
        row("main/mul", op_index=add, **steps),
    )
    table = HotspotTable("op", rows, 3_000, 3_000, stat="sum")
    text = colour_text(hotspot_rich_table(table, module, script="model.py"))
    bold, cyan, reset = "\x1b[1m", "\x1b[36m", "\x1b[0m"
    unstable = next(line for line in text.splitlines() if "main/add" in line)
    stable = next(line for line in text.splitlines() if "main/mul" in line)
    assert f"{bold}! 1.00 us/2.00 us/9.00 us{reset}" in unstable
    assert bold not in stable
    for line in (unstable, stable):
        assert f"{cyan}model.py:7:3" in line
        assert cyan not in line.rsplit("│", 2)[0]  # the location column only


def test_the_rank_is_right_aligned_from_ten_rows() -> None:
    module = profiled()
    rows = tuple(row(f"op{rank}") for rank in range(1, 11))
    text = render_text(hotspot_rich_table(HotspotTable("op", rows, 0, 0, stat="sum"), module))
    first = next(line for line in text.splitlines() if " op1 " in line)
    assert first.strip().strip("│").split("│")[0] == "  1 "


def test_the_title_and_the_roofline_caption() -> None:
    module = profiled()
    table = HotspotTable("op", (row("main/add"),), 3_000, 4_000, stat="sum")
    text = render_text(hotspot_rich_table(table, module, title="tf · model.py"))
    assert text.splitlines()[0].strip() == "tf · model.py"
    untitled = render_text(hotspot_rich_table(table, module))
    assert untitled.splitlines()[0].startswith("┏")
    chart = roofline("op")
    base = "1 rows · 3.00 us attributed of 4.00 us profiled (sums) · ranked by sum over steps"
    caption = hotspot_rich_table(table, module, roofline=chart).caption
    assert caption == base + "\n" + roofline_caption(chart)


def test_editor_locations_of_called_functions_and_colon_paths() -> None:
    module = profiled()
    add, mul = index_of(module, "arith.addf"), index_of(module, "arith.maximumf")
    colon = index_of(module, "arith.mulf")
    # the script as the manifest names it, the frame's line and column
    assert editor_location(module, add, "dir/model.py") == "dir/model.py:7:3"
    assert editor_location(module, add, "other.py") == "/abs/dir/model.py:7:3"
    # an op of a called function: its call site's first user frame (the call in other.py,
    # which the script reaches at model.py:20), not the callee's bare `loc("max")`
    assert editor_location(module, mul, "dir/model.py") == "/abs/dir/other.py:3:1"
    assert editor_location(module, mul, "") == "/abs/dir/other.py:3:1"
    assert editor_location(module, mul, "dir/other.py") == "dir/other.py:3:1"
    assert editor_location(module, colon, "C:/proj/model.py") == "C:/proj/model.py:9:5"
    # the table places each row with the script it is given, and only then
    rows = (row("main/add", op_index=add),)
    table = HotspotTable("op", rows, 3_000, 3_000, stat="sum")
    text = render_text(hotspot_rich_table(table, module, script="model.py"))
    assert cells(next(line for line in text.splitlines() if "main/add" in line))[-1] == (
        "model.py:7:3"
    )
    text = render_text(hotspot_rich_table(table, module))
    assert cells(next(line for line in text.splitlines() if "main/add" in line))[-1] == (
        "/abs/dir/model.py:7:3"
    )


def manifest(options: dict[str, object]) -> Manifest:
    return Manifest("jax", "model.py", "main", 5, "cpu", {}, ("stablehlo",), (), dict(options))


def test_top_title() -> None:
    module = profiled()
    table = HotspotTable("scope", (), 0, 0, level="stablehlo", stat="sum")
    view = TopView(table, module, "dir/model.py", None)
    title = "jax · dir/model.py · level stablehlo · by scope · ranked by sum over steps"
    assert top_title(view, manifest({})) == title
    overhead = {"no_profiler_ns": 100, "profiler_ns": 200, "irprof_ns": 230}
    # 230 / 200: timed steps 1.15x the profiler alone
    assert top_title(view, manifest({"overhead": overhead})) == (
        title + " · timed steps 1.15x the profiler alone"
    )

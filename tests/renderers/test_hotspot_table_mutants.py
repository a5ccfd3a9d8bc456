"""`top`'s table and notes, piece by piece: the dialect a column title names, the ranked
column's title, the per-step spread, the notes after the table (outliers, on-CPU, noise) and
the table itself (columns, cells, caption) for hotspot rows written out here.

Written from the mutants of `renderers/hotspot_table.py`, whose tests reached it through
captures (which mutation runs leave out) and the fit of its columns. Every expected text is
put together in the test from the rows and figures each case gives.
"""

from __future__ import annotations

from dataclasses import replace

from iree.compiler import ir

from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.analyses.roofline import Roofline, RooflineOptions, RooflinePoint
from irprof.analyses.step_stats import NoiseVerdict, Outlier
from irprof.mlir.context import make_context
from irprof.renderers.hotspot_table import (
    editor_location,
    hotspot_rich_table,
    render_text,
    roofline_caption,
    roofline_cells,
    shared_dialect,
    spread_text,
    stat_column_title,
    step_notes,
    without_dialect,
)


def test_the_shared_dialect_of_the_op_kinds() -> None:
    assert shared_dialect(["tf.Conv2D, tf.Relu", "tf.MatMul"]) == "tf"
    assert shared_dialect(["tf.A", "stablehlo.add"]) == ""
    assert shared_dialect(["Conv2D"]) == ""  # no dialect at all
    assert shared_dialect(["tf.A", "Conv2D"]) == ""
    assert shared_dialect([]) == ""
    assert shared_dialect(["tf.A, ", " tf.B"]) == "tf"  # empty parts and spaces skipped
    assert shared_dialect(["a.b.c"]) == "a"
    assert shared_dialect(["tf.A, stablehlo.B"]) == ""  # a group's kinds, one by one


def test_kinds_without_the_shared_dialect() -> None:
    assert without_dialect("tf.Conv2D, tf.Relu", "tf") == "Conv2D, Relu"
    assert without_dialect("tf.Conv2D,  tf.Relu", "tf") == "Conv2D, Relu"
    assert without_dialect("tf.tf.A", "tf") == "tf.A"  # the prefix once
    assert without_dialect("tfx.A", "tf") == "tfx.A"  # `tf.`, not `tf`
    assert without_dialect("tf.A, tf.B", "") == "tf.A, tf.B"


def row(key: str = "k", **fields: object) -> HotspotRow:
    base = HotspotRow(
        key=key,
        op_name="tf.MatMul",
        total_ns=3_000,
        share=0.25,
        count=3,
        mean_ns=1_000,
        ops=1,
        kernels=(),
        fused_with=(),
        location="loc",
        op_index=0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_the_ranked_column_title() -> None:
    rows = (row(steps=5), row(steps=7), row(steps=0))
    assert stat_column_title(HotspotTable("op", rows, 0, 0, stat="sum")) == "time"
    assert stat_column_title(HotspotTable("op", rows, 0, 0, stat="median")) == "median x7"
    no_steps = (row(), row())
    assert stat_column_title(HotspotTable("op", no_steps, 0, 0, stat="min")) == "min"
    assert stat_column_title(HotspotTable("op", (), 0, 0, stat="mean")) == "mean"


def test_the_spread_of_the_steps() -> None:
    spread = row(steps=3, step_min_ns=1_000, step_median_ns=2_000, step_max_ns=5_000)
    assert spread_text(spread) == "1.00 us/2.00 us/5.00 us"
    assert spread_text(replace(spread, unstable=True)) == "! 1.00 us/2.00 us/5.00 us"
    assert spread_text(row(steps=1, step_min_ns=7, step_median_ns=7, step_max_ns=7)) == (
        "7 ns/7 ns/7 ns"
    )
    assert spread_text(row(steps=0)) == "-"


def outlier(step: int, value: int, median: int, key: str = "op/a") -> Outlier:
    return Outlier(key, 0, step, value, median)


def test_notes_list_outliers_with_their_excess_and_ratio() -> None:
    outliers = (outlier(2, 3_000_000, 1_000_000), outlier(4, 500_000, 0, key="x" * 80))
    table = HotspotTable("op", (), 0, 0, stat="median", outliers=outliers)
    assert step_notes(table).splitlines() == [
        "outliers: 2 op-step(s) above the op's median step by more than 5 MADs and 100 us"
        " (not used for ranking)",
        "  op/a  step 2  3.00 ms  (+2.00 ms, 3.0x its median 1.00 ms)",
        "  …" + "x" * 69 + "  step 4  500 us  (+500 us, from 0 its median 0 ns)",
    ]
    # ranked by the sum or the mean, the outliers are in the ranking
    for stat in ("sum", "mean"):
        first = step_notes(replace(table, stat=stat)).splitlines()[0]
        assert first.endswith("by more than 5 MADs and 100 us")
    assert step_notes(replace(table, stat="min")).splitlines()[0].endswith("(not used for ranking)")


def test_notes_show_ten_outliers_and_count_the_rest() -> None:
    outliers = tuple(outlier(step, 2_000_000 + step, 1_000_000) for step in range(12))
    lines = step_notes(HotspotTable("op", (), 0, 0, stat="sum", outliers=outliers)).splitlines()
    assert lines[0].startswith("outliers: 12 op-step(s)")
    assert [line.split("  step ")[1].split()[0] for line in lines[1:11]] == [
        str(step) for step in range(10)
    ]
    assert lines[11:] == ["  ... 2 more"]
    ten = step_notes(HotspotTable("op", (), 0, 0, outliers=outliers[:10])).splitlines()
    assert len(ten) == 11  # the title and ten lines, no "more"


def test_notes_add_the_on_cpu_note_and_the_noise_warnings() -> None:
    noise = NoiseVerdict(5, 0.2, 3.0, 2, None, ("noisy steps", "busy machine"), 12)
    table = HotspotTable("op", (), 0, 0, stat="median", oncpu_note="on-CPU: 5% off", noise=noise)
    assert step_notes(table).splitlines() == [
        "on-CPU: 5% off",
        "warning: noisy steps",
        "warning: busy machine",
    ]
    assert step_notes(replace(table, stat="sum")).splitlines() == [
        "warning: noisy steps",
        "warning: busy machine",
    ]
    assert step_notes(HotspotTable("op", (), 0, 0)) == ""


MODULE = """
module {
  func.func @main(%x: f32) -> f32 {
    %0 = arith.addf %x, %x : f32 loc("model.py":7:3)
    %1 = arith.mulf %0, %0 : f32 loc("mul_op")
    return %1 : f32
  }
}
"""


def profiled() -> ProfiledModule:
    with make_context():
        return profiled_ops_of(ir.Module.parse(MODULE))


def index_of(module: ProfiledModule, name: str) -> int:
    return next(op.index for op in module.ops if op.op_name == name)


def test_editor_locations() -> None:
    module = profiled()
    add, mul = index_of(module, "arith.addf"), index_of(module, "arith.mulf")
    assert editor_location(module, add, "model.py") == "model.py:7:3"
    # located by its name only: nothing to add to the row's name
    assert module.ops[mul].location == "'mul_op'" and editor_location(module, mul, "") == ""
    with make_context():
        other = profiled_ops_of(
            ir.Module.parse(
                """func.func @f(%x: f32) -> f32 {
                  %0 = arith.mulf %x, %x : f32 loc(fused["mul_op", "scale"])
                  %1 = arith.addf %0, %0 : f32 loc(callsite("add_op" at "lib.py":3:1))
                  return %1 : f32
                }"""
            )
        )
    fused, called = index_of(other, "arith.mulf"), index_of(other, "arith.addf")
    # a location that says more than the name is kept whole
    assert editor_location(other, fused, "") == other.ops[fused].location != "'mul_op'"
    assert editor_location(other, called, "") == "lib.py:3:1"


def test_an_editor_location_in_a_folder_whose_name_holds_a_colon() -> None:
    """The line and column are the last two fields: a path such as `C:/...` or `runs:v2/...`
    keeps its colon, and the script is still recognised by its file name."""
    with make_context():
        module = profiled_ops_of(
            ir.Module.parse(
                """func.func @f(%x: f32) -> f32 {
                  %0 = arith.addf %x, %x : f32 loc("/tmp/runs:v2/model.py":12:5)
                  return %0 : f32
                }"""
            )
        )
    add = index_of(module, "arith.addf")
    assert editor_location(module, add, "model.py") == "model.py:12:5"
    assert editor_location(module, add, "other.py") == "/tmp/runs:v2/model.py:12:5"


def cells(line: str) -> list[str]:
    """The cells of one printed row."""
    return [cell.strip() for cell in line.strip().strip("│┃").replace("┃", "│").split("│")]


def test_the_rich_table_by_op() -> None:
    module = profiled()
    add = index_of(module, "arith.addf")
    rows = (
        row("main/add", op_name="arith.addf", total_ns=3_000, stat_ns=2_500, share=0.6,
            count=3, mean_ns=1_000, op_index=add, estimated_ns=10),
        row("main/mul", op_name="arith.mulf", total_ns=2_000, share=0.4, count=2,
            mean_ns=1_000, op_index=add),
    )  # fmt: skip
    table = HotspotTable("op", rows, 5_000, 8_000, stat="median", stat_note="why")
    text = render_text(hotspot_rich_table(table, module, script="model.py", title="T"))
    lines = text.splitlines()
    header = next(line for line in lines if "kind (arith.)" in line)
    for title in ("#", "op (runtime name)", "kind (arith.)", "median", "share", "count",
                  "mean", "location"):  # fmt: skip
        assert title in header
    assert "ops" not in header.split()  # by op: one op per row
    first = next(line for line in lines if "main/add" in line)
    assert cells(first) == [
        "1", "main/add", "addf", "~2.50 us", "60.0%", "3", "1.00 us", "model.py:7:3"
    ]  # fmt: skip
    second = next(line for line in lines if "main/mul" in line)
    assert cells(second) == [
        "2", "main/mul", "mulf", "2.00 us", "40.0%", "2", "1.00 us", "model.py:7:3"
    ]  # fmt: skip
    caption = " ".join(text[text.index("2 rows") :].split())
    assert caption.startswith(
        "2 rows · 5.00 us attributed of 8.00 us profiled (sums) · ranked by median step x "
        "steps (why) · ~ estimated share of a fused or decomposed event"
    )
    assert "unstable" not in caption and "+N ops" not in caption


def test_figures_are_right_aligned_and_names_left_aligned() -> None:
    # two rows whose cells differ in width in every column: a narrower cell is padded on the
    # left in the figure columns, on the right in the name and kind columns
    module = profiled()
    add = index_of(module, "arith.addf")
    rows = (
        row("a/long_name", op_name="arith.addf", total_ns=123_456_789, share=0.995, count=12345,
            mean_ns=10_000, op_index=add),
        row("b", op_name="arith.mulf", total_ns=5, share=0.005, count=1, mean_ns=5,
            op_index=add),
    )  # fmt: skip
    text = render_text(hotspot_rich_table(HotspotTable("op", rows, 0, 0, stat="sum"), module))
    line = next(line for line in text.splitlines() if "│ 2 " in line or "│  2 " in line)
    raw = line.strip().strip("│").split("│")
    widths = [len(cell) for cell in raw]
    values = ["2", "b", "mulf", "5 ns", "0.5%", "1", "5 ns"]
    for cell, value in zip(raw[:7], values, strict=True):
        assert value in cell
    assert raw[0] == " " * (widths[0] - 2) + "2 "  # rank: right
    assert raw[1].startswith(" b ") and raw[2].startswith(" mulf ")  # key and kind: left
    for cell, value in zip(raw[3:7], values[3:7], strict=True):  # time, share, count, mean
        assert cell.endswith(value + " ") and cell.startswith("  ")


def test_the_rich_table_by_type_with_steps_and_groups() -> None:
    module = profiled()
    add = index_of(module, "arith.addf")
    rows = (
        row("arith.addf", op_name="arith.addf", ops=4, op_index=add, steps=3, unstable=True,
            step_min_ns=1_000, step_median_ns=2_000, step_max_ns=9_000, group="g"),
    )  # fmt: skip
    table = HotspotTable("type", rows, 3_000, 3_000, stat="sum")
    text = render_text(hotspot_rich_table(table, module, script="model.py"))
    header = next(line for line in text.splitlines() if "op kind" in line)
    assert "kind (" not in header  # by type the key is the kind
    for title in ("time", "step min/med/max", "ops", "location (hottest op)"):
        assert title in header
    assert "mean" not in header.split()
    line = next(line for line in text.splitlines() if "arith.addf" in line)
    assert cells(line) == [
        "1", "arith.addf", "3.00 us", "25.0%", "3", "! 1.00 us/2.00 us/9.00 us", "4",
        "model.py:7:3",
    ]  # fmt: skip
    caption = " ".join(text[text.index("1 rows") :].split())
    assert caption == (
        "1 rows · 3.00 us attributed of 3.00 us profiled (sums) · ranked by sum over steps · ! "
        "unstable: slowest step > 3x the median step · `+N ops`: one event group, measured "
        "(--expand-groups)"
    )


def test_step_ops_and_roofline_figures_are_right_aligned() -> None:
    module = profiled()
    add = index_of(module, "arith.addf")
    rows = (
        row("arith.addf", op_name="arith.addf", ops=1234, op_index=add, steps=3,
            step_min_ns=1_000, step_median_ns=2_000, step_max_ns=9_000),
        row("arith.mulf", op_name="arith.mulf", ops=5, op_index=add, steps=3,
            step_min_ns=1, step_median_ns=2, step_max_ns=3),
    )  # fmt: skip
    # 3,141,592 FLOPs, 100,000 B in 100 us: 31.4 FLOP/B, 31.4 GFLOP/s, 1 GB/s, 31.4% of the
    # roof, compute; 2 FLOPs, 1 B in 1 s: 2, 2e-09, 1e-09, 0.0%, memory
    points = (point(3_141_592, 100_000, 100_000), point(2, 1, 1_000_000_000))
    roofline = Roofline("tf", "type", PEAKS, RooflineOptions(), points)
    table = HotspotTable("type", rows, 0, 0, stat="sum")
    text = render_text(hotspot_rich_table(table, module, roofline=roofline), width=220)
    # step min/med/max, ops, FLOP/B, GFLOP/s, GB/s, roof, bound: each column has cells of two
    # widths, both flush right
    expected = {
        "arith.addf": ["1.00 us/2.00 us/9.00 us", "1234", "31.4", "31.4", "1", "31.4%", "compute"],
        "arith.mulf": ["1 ns/2 ns/3 ns", "5", "2", "2e-09", "1e-09", "0.0%", "memory"],
    }
    for key, values in expected.items():
        line = next(line for line in text.splitlines() if key in line)
        raw = line.strip().strip("│").split("│")
        for cell, value in zip(raw[5:12], values, strict=True):
            assert cell.endswith(" " + value + " "), (cell, value)
    for index in range(5, 12):
        a, b = (
            next(line for line in text.splitlines() if key in line).strip().strip("│").split("│")
            for key in expected
        )
        assert len(a[index].strip()) != len(b[index].strip())


PEAKS = MachinePeaks(100.0, 10.0, "given")  # ridge 10 FLOP/B


def point(flops: int | None, moved: int | None, total_ns: int, **fields: object) -> RooflinePoint:
    base = RooflinePoint(
        key="k", op_name="tf.MatMul", location="", op_index=0, group="", ops=1,
        total_ns=total_ns, share=0.5, estimated=False, executions=1, category="matmul",
        flops=flops, bytes=moved, peaks=PEAKS, options=RooflineOptions(),
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


def test_roofline_cells_of_a_known_and_an_unknown_row() -> None:
    # 3,141,592 FLOPs and 100,000 bytes in 1 ms: 31.4 FLOP/B, 3.14 GFLOP/s, 0.1 GB/s; at the
    # peaks max(31,416 ns, 10,000 ns) = 3.1% of the 1 ms; intensity above the ridge: compute
    known = [cell.plain for cell in roofline_cells(point(3_141_592, 100_000, 1_000_000))]
    assert known == ["31.4", "3.14", "0.1", "3.1%", "compute"]
    unknown = [cell.plain for cell in roofline_cells(point(None, 100_000, 1_000_000))]
    assert unknown == ["-", "-", "0.1", "-", "-"]


def test_the_roofline_caption() -> None:
    points = (point(1, 1, 1_000_000), point(None, None, 3_000_000))
    roofline = Roofline("tf", "op", PEAKS, RooflineOptions(), points)
    assert roofline_caption(roofline) == (
        "roofline: peaks 100.0 GFLOP/s, 10.0 GB/s (ridge 10.0 FLOP/B; given) · FLOPs and bytes "
        "from the IR's types for 25.0% of these rows' time (`-`: a shape the IR does not know)"
    )
    estimated = replace(roofline, peaks=None, points=(point(1, 1, 0, estimated=True),))
    assert roofline_caption(estimated) == (
        "roofline: no peaks: no roof or bound · FLOPs and bytes from the IR's types for - of "
        "these rows' time (`-`: a shape the IR does not know) · `~` rows: an estimated share, "
        "read the group's row for its roofline"
    )


def test_the_rich_table_with_roofline_columns() -> None:
    module = profiled()
    add = index_of(module, "arith.addf")
    rows = (row("main/add", op_name="arith.addf", op_index=add),)
    roofline = Roofline(
        "tf", "op", PEAKS, RooflineOptions(), (point(3_141_592, 100_000, 1_000_000),)
    )
    table = HotspotTable("op", rows, 3_000, 3_000)
    text = render_text(hotspot_rich_table(table, module, roofline=roofline), width=200)
    header = next(line for line in text.splitlines() if "FLOP/B" in line)
    assert cells(header)[-6:] == ["FLOP/B", "GFLOP/s", "GB/s", "roof", "bound", "location"]
    line = next(line for line in text.splitlines() if "main/add" in line)
    assert cells(line)[-6:-1] == ["31.4", "3.14", "0.1", "3.1%", "compute"]
    assert "roofline: peaks 100.0 GFLOP/s" in text


def test_no_location_column_when_no_row_is_placed() -> None:
    """Rows whose ops are located by their names only (ONNX nodes) get no location column;
    one placed row brings it back."""
    module = profiled()
    add, mul = index_of(module, "arith.addf"), index_of(module, "arith.mulf")
    unplaced = (row("mul_op", op_name="arith.mulf", op_index=mul),)
    text = render_text(hotspot_rich_table(HotspotTable("op", unplaced, 3_000, 3_000), module))
    assert "location" not in text and "mul_op" in text
    placed = (*unplaced, row("main/add", op_name="arith.addf", op_index=add))
    text = render_text(hotspot_rich_table(HotspotTable("op", placed, 6_000, 6_000), module))
    assert "location" in text and "model.py:7:3" in text


def test_notes_warn_when_untimed_ops_took_a_twentieth_of_the_profiled_time() -> None:
    """Ops only the untimed reference steps recorded are out of the shares: from 5% of the
    profiled time on (the boundary included) `top` says how much and how to count it."""
    table = HotspotTable("op", (), 0, 2_000_000, stat="median")
    assert step_notes(replace(table, untimed_ns=99_999)) == ""
    assert step_notes(replace(table, untimed_ns=100_000)).splitlines() == [
        "warning: ops the timed steps did not record (seen only in the untimed reference steps) "
        "took about 100 us over as many steps, 5.0% of the profiled time: the shares leave it "
        "out; capture with --reference-time to count it"
    ]
    assert "150.0% of the profiled time" in step_notes(replace(table, untimed_ns=3_000_000))
    assert step_notes(HotspotTable("op", (), 0, 0, untimed_ns=5)) == ""  # nothing profiled

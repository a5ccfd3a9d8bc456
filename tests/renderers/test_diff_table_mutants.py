"""`irprof diff` on the terminal: the header, each ranked table's cells, colours and caption,
which column a narrow terminal drops first, the fusion changes and the notes.

Written for `renderers/diff_table.py`, whose only test diffs captured runs (left out of
mutation runs). The diff is written out here row by row; every expected text is put together
from those rows.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from irprof.analyses.run_diff import DiffOptions, DiffRow, RunDiff
from irprof.analyses.run_diff_match import FusionChange
from irprof.renderers.diff_table import RENDERER, DiffTableRenderer, diff_renderables


def op(key: str, a: float, b: float, interval: tuple[float, float] | None, **extra: str) -> DiffRow:
    fields = {"kind": "tf.MatMul", "location": "m.py:3:1", "match": "name", **extra}
    return DiffRow(key, fields["kind"], fields["location"], fields["match"], a, b, interval, "x")


TOTAL = DiffRow("all ops", "", "", "", 10_000.0, 12_000.4, (1_000.0, 3_000.0), "x")
OPS = (
    op("slower", 1_000.0, 3_000.0, (1_500.0, 2_500.0)),  # significant, +: red
    op("faster", 4_000.0, 2_000.0, (-2_500.0, -1_500.0), kind="tf.Conv2D"),  # -: green
    op("same", 1_000.0, 1_100.0, (-50.0, 250.0), match="position"),  # not significant: dim
    op("unknown", 500.0, 499.6, None),  # no interval: n/a
    op("new", 0.0, 700.0, (600.0, 800.0)),  # only in B
    op("gone", 0.0, 0.0, None),
)
SCOPES = (DiffRow("dense", "", "", "", 1_000.0, 3_000.0, (1_500.0, 2_500.0), "x"),)


def diff(**changes: object) -> RunDiff:
    base = RunDiff(
        run_a="runs/a", run_b="runs/b", level_a="tf", level_b="tf", steps_a=5, steps_b=6,
        method_a="markers", method_b="occurrence", options=DiffOptions(confidence=0.9),
        total=TOTAL, ops=OPS, scopes=SCOPES, kinds=(), fusion=(),
        match_counts={"name": 4, "position": 1}, notes=("note one", "note two"),
    )  # fmt: skip
    return RunDiff(**{**base.__dict__, **changes})


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("│┃").replace("┃", "│").split("│")]


def test_the_header() -> None:
    text = RENDERER.render(diff()).decode()
    lines = text.splitlines()
    assert lines[:4] == [
        "A: runs/a (level tf, 5 steps, samples: markers)",
        "B: runs/b (level tf, 6 steps, samples: occurrence)",
        "ops: 4 name, 1 position",
        "all ops per step: 10.0 us -> 12.0 us (+20.0%), interval of delta [+1.00 us, +3.00 us];"
        " times are per step, intervals 90% bootstrap",
    ]
    none = RENDERER.render(diff(match_counts={})).decode().splitlines()
    assert none[2] == "ops: none"


def test_the_op_table_cells() -> None:
    text = RENDERER.render(diff()).decode()
    header = next(line for line in text.splitlines() if "op (runtime name)" in line)
    assert cells(header) == [
        "#", "op (runtime name)", "kind", "match", "A / step", "B / step", "delta", "delta %",
        "interval of delta", "location",
    ]  # fmt: skip
    expected = {
        "slower": ["1", "slower", "tf.MatMul", "name", "1.00 us", "3.00 us", "+2.00 us",
                   "+200.0%", "[+1.50 us, +2.50 us]", "m.py:3:1"],
        "faster": ["2", "faster", "tf.Conv2D", "name", "4.00 us", "2.00 us", "-2.00 us",
                   "-50.0%", "[-2.50 us, -1.50 us]", "m.py:3:1"],
        "same": ["3", "same", "tf.MatMul", "position", "1.00 us", "1.10 us", "+100 ns", "+10.0%",
                 "[-50 ns, +250 ns]", "m.py:3:1"],
        "unknown": ["4", "unknown", "tf.MatMul", "name", "500 ns", "500 ns", "0 ns", "-0.1%",
                    "n/a", "m.py:3:1"],
        "new": ["5", "new", "tf.MatMul", "name", "0 ns", "700 ns", "+700 ns", "new",
                "[+600 ns, +800 ns]", "m.py:3:1"],
        "gone": ["6", "gone", "tf.MatMul", "name", "0 ns", "0 ns", "+0 ns", "-", "n/a",
                 "m.py:3:1"],
    }  # fmt: skip
    for key, row in expected.items():
        line = next(line for line in text.splitlines() if f"│ {key} " in line)
        assert cells(line) == row
    scope_header = next(line for line in text.splitlines() if "│ key " in line or "┃ key " in line)
    assert cells(scope_header) == [
        "#",
        "key",
        "A / step",
        "B / step",
        "delta",
        "delta %",
        "interval of delta",
    ]
    for title in ("ops by |delta|", "name scopes by |delta|", "op kinds by |delta|"):
        assert title in text
    assert "fusion changes: none (the same ops ran together in both runs)" in text
    assert text.splitlines()[-2:] == ["note: note one", "note: note two"]


def test_the_limit_and_its_caption() -> None:
    text = DiffTableRenderer(limit=2).render(diff()).decode()
    assert "│ same " not in text and "│ faster " in text
    assert "4 more rows (--limit, or --json for all)" in text
    assert "more rows" not in DiffTableRenderer(limit=6).render(diff()).decode()
    assert DiffTableRenderer().limit == 20 and DiffTableRenderer().width == 160
    assert (RENDERER.name, RENDERER.extension) == ("diff-table", ".txt")


def test_colours() -> None:
    console = Console(file=io.StringIO(), width=200, color_system="standard")
    console.print(diff_renderables(diff()))
    output = console.file
    assert isinstance(output, io.StringIO)
    text = output.getvalue()
    red, green, dim, cyan = "\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[36m"

    def styled(style: str, cell: str, line: str) -> bool:
        """`cell` in `style`, after the padding of a right-aligned column."""
        return re.search(re.escape(style) + " *" + re.escape(cell), line) is not None

    slower = next(line for line in text.splitlines() if " slower " in line)
    assert styled(red, "+2.00 us", slower) and styled(red, "+200.0%", slower)
    assert styled(red, "[+1.50 us, +2.50 us]", slower)
    faster = next(line for line in text.splitlines() if " faster " in line)
    assert styled(green, "-2.00 us", faster) and styled(green, "[-2.50 us, -1.50 us]", faster)
    same = next(line for line in text.splitlines() if " same " in line)
    assert styled(dim, "[-50 ns, +250 ns]", same)
    assert red not in same and green not in same
    assert f"{dim}position" in same  # the match column is dim
    unknown = next(line for line in text.splitlines() if " unknown " in line)
    assert styled(dim, "n/a", unknown)
    assert f"{cyan}m.py:3:1" in slower
    header = next(line for line in text.splitlines() if "all ops per step" in line)
    assert f"{red}[+1.00 us, +3.00 us]" in header
    assert "\x1b[33mnote: note one" in text  # yellow notes
    plain = diff(total=DiffRow("all", "", "", "", 1.0, 1.0, None, "x"))
    console = Console(file=io.StringIO(), width=200, color_system="standard")
    console.print(diff_renderables(plain))
    output = console.file
    assert isinstance(output, io.StringIO)
    assert f"interval of delta {dim}n/a" in output.getvalue()


def dropped_in_order() -> list[str]:
    order: list[str] = []
    shown: list[str] = []
    wide = DiffTableRenderer(width=400).render(diff(scopes=(), kinds=())).decode()
    natural = len(next(line for line in wide.splitlines() if "op (runtime name)" in line))
    for width in range(natural, 30, -1):
        text = DiffTableRenderer(width=width).render(diff(scopes=(), kinds=())).decode()
        line = next((line for line in text.splitlines() if "op (runtime name)" in line), "")
        if not line:
            break
        header = cells(line)
        if shown and not set(header) <= set(shown):
            break  # a title is cut
        order += [title for title in shown if title not in header]
        shown = header
    return order


def test_narrow_terminals_drop_columns_by_priority() -> None:
    # match (6), kind (5), location (3), the two step times (2, B first), the interval (1)
    # (then rich itself squeezes what is left)
    assert dropped_in_order()[:6] == [
        "match", "kind", "location", "B / step", "A / step", "interval of delta",
    ]  # fmt: skip


def test_ops_sharing_a_name_keep_their_locations_on_a_narrow_terminal() -> None:
    twins = (
        op("jit(forward)/add", 1_000.0, 3_000.0, None, location="model.py:17:30"),
        op("jit(forward)/add", 2_000.0, 2_500.0, None, location="model.py:18:21"),
        op("jit(forward)/dot", 500.0, 400.0, None, location="model.py:20:15"),
    )
    text = DiffTableRenderer(width=80).render(diff(ops=twins, scopes=(), kinds=())).decode()
    header = next(line for line in text.splitlines() if "op (runtime name)" in line)
    assert "location" in cells(header)
    assert "model.py:17:30" in text and "model.py:18:21" in text
    # Distinct names: the location is dropped at this width, as the priorities say.
    single = (*twins[:1], op("jit(forward)/mul", 2_000.0, 2_500.0, None), twins[2])
    text = DiffTableRenderer(width=80).render(diff(ops=single, scopes=(), kinds=())).decode()
    header = next(line for line in text.splitlines() if "op (runtime name)" in line)
    assert "location" not in cells(header)


def test_fusion_changes() -> None:
    changes = (
        FusionChange("fused in B", ("a/" + "x" * 70, "b"), ("k1", "k2"), ("kb",)),
        FusionChange("split in B", ("c",), (), ("k" * 60,)),
    )
    text = DiffTableRenderer(width=250).render(diff(fusion=changes)).decode()
    assert "fusion changes" in text and "none" not in text.split("fusion changes")[1][:10]
    lines = text[text.index("fusion changes") :].splitlines()
    assert cells(lines[2]) == ["change", "ops", "kernels in A", "kernels in B"]
    rows = [cells(line) for line in lines[4:] if line.startswith("│")]
    # names cut to 60 characters (…tail), kernels to 50; one name or kernel a line; "-": none
    assert rows[0] == ["fused in B", "…" + ("a/" + "x" * 70)[-59:], "k1", "kb"]
    assert rows[1] == ["", "b", "k2", ""]
    assert rows[2] == ["split in B", "c", "-", "…" + ("k" * 60)[-49:]]


def colour(data: RunDiff, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, color_system="standard")
    console.print(diff_renderables(data, width=width))
    output = console.file
    assert isinstance(output, io.StringIO)
    return output.getvalue()


def test_a_delta_under_one_nanosecond_keeps_its_sign_and_colour() -> None:
    # 1,000 -> 1,000.5 ns with an interval of [0.2, 0.8]: significant, slower: red
    tiny = op("tiny", 1_000.0, 1_000.5, (0.2, 0.8))
    fresh = op("fresh", 0.0, 0.5, None)  # only in B, by half a nanosecond
    text = colour(diff(ops=(tiny, fresh)))
    line = next(line for line in text.splitlines() if " tiny " in line)
    assert re.search("\x1b\\[31m *\\+0 ns", line) and re.search("\x1b\\[31m *\\[\\+0 ns", line)
    total = DiffRow("all", "", "", "", 1_000.0, 1_000.5, (0.2, 0.8), "x")
    header = next(line for line in colour(diff(total=total)).splitlines() if "all ops" in line)
    assert "\x1b[31m[+0 ns, +1 ns]" in header
    plain = RENDERER.render(diff(ops=(tiny, fresh))).decode()
    fresh_line = next(line for line in plain.splitlines() if "│ fresh " in line)
    assert cells(fresh_line)[7] == "new"


def test_the_total_in_green_or_dim() -> None:
    faster = DiffRow("all", "", "", "", 12_000.0, 10_000.0, (-3_000.0, -1_000.0), "x")
    header = next(line for line in colour(diff(total=faster)).splitlines() if "all ops" in line)
    assert "\x1b[32m[-3.00 us, -1.00 us]" in header
    unsure = DiffRow("all", "", "", "", 12_000.0, 10_000.0, (-3_000.0, 1_000.0), "x")
    header = next(line for line in colour(diff(total=unsure)).splitlines() if "all ops" in line)
    assert "\x1b[2m[-3.00 us, +1.00 us]" in header


def test_the_rank_is_right_aligned_from_ten_rows() -> None:
    many = tuple(op(f"op{i}", 1_000.0, 1_000.0 + i, None) for i in range(1, 11))
    text = RENDERER.render(diff(ops=many)).decode()
    line = next(line for line in text.splitlines() if "│ op1 " in line)
    assert line.split("│")[1] == "  1 "


def test_names_kinds_and_locations_shrink_to_their_minimum() -> None:
    key = "outer/" * 6 + "dense/MatMul"
    kind = "tf.FusedBatchNormV3, tf.Relu"
    location = "/a/long/path/to/the/model/file.py:12:7"
    rows = (op(key, 1_000.0, 2_000.0, None, kind=kind, location=location),)
    data = diff(ops=rows, scopes=(), kinds=())
    titles = ["#", "op (runtime name)", "kind", "match", "A / step", "B / step", "delta",
              "delta %", "interval of delta", "location"]  # fmt: skip
    narrowest = ""
    for width in range(300, 40, -1):
        text = DiffTableRenderer(width=width).render(data).decode()
        line = next(line for line in text.splitlines() if "op (runtime name)" in line)
        if cells(line) != titles:
            break
        narrowest = text
    row = cells(next(line for line in narrowest.splitlines() if line.startswith("│ 1 ")))
    # the key keeps its tail in 24, the kind its head in 10, the location its tail in 16
    assert row[1] == "…" + key[-23:]
    assert row[2] == kind[:9] + "…"
    assert row[9] == "…" + location[-15:]


def test_the_fusion_table_in_full() -> None:
    changes = (
        FusionChange("fused in B", ("a",), ("k" * 60,), ("b1", "b2")),
        FusionChange("split in B", ("c",), ("k1",), ()),
    )
    text = DiffTableRenderer(width=250).render(diff(fusion=changes)).decode()
    start = text.index("fusion changes")
    assert text[start - 1] == "\n"  # at the start of its line
    lines = text[start:].splitlines()
    assert lines[0].rstrip() == "fusion changes"  # the title on the left
    assert len(lines[1]) < 100  # not stretched to the terminal's width
    rows = [cells(line) for line in lines[4:] if line.startswith("│")]
    assert rows[0] == ["fused in B", "a", "…" + "k" * 49, "b1"]
    assert rows[1] == ["", "", "", "b2"]
    assert rows[2] == ["split in B", "c", "k1", "-"]


def test_fusion_names_fold_in_a_narrow_terminal() -> None:
    name = "n" * 30 + "m" * 30
    changes = (FusionChange("fused in B", (name,), ("a" * 40,), ("b" * 50,)),)
    text = DiffTableRenderer(width=50).render(diff(fusion=changes, ops=(), scopes=())).decode()
    table = text[text.index("fusion changes") :]
    # folded: every character kept over several lines, no ellipsis
    assert "…" not in table
    assert "".join(cell for line in table.splitlines() if line.startswith("│")
                   for cell in [cells(line)[1]]) == name  # fmt: skip
    assert "".join(cells(line)[2] for line in table.splitlines() if line.startswith("│")) == (
        "a" * 40
    )
    assert "".join(cells(line)[3] for line in table.splitlines() if line.startswith("│")) == (
        "b" * 50
    )


def test_figures_right_and_names_left() -> None:
    # two rows whose cells differ in width in every column: the narrower is padded on the
    # left in the figure columns, on the right in the name columns
    wide = op(
        "a_long_name",
        123_456_789.0,
        5.0,
        (-123_456_800.0, -123_456_700.0),
        kind="tf.FusedBatchNormV3",
        match="position",
        location="/long/path/m.py:100:10",
    )
    narrow = op("b", 5.0, 7.0, (1.0, 3.0), kind="tf.A", match="name", location="m.py:1:1")
    text = RENDERER.render(diff(ops=(wide, narrow), scopes=(), kinds=())).decode()
    line = next(line for line in text.splitlines() if line.startswith("│ 2 "))
    raw = line.strip().strip("│").split("│")
    values = ["2", "b", "tf.A", "name", "5 ns", "7 ns", "+2 ns", "+40.0%", "[+1 ns, +3 ns]",
              "m.py:1:1"]  # fmt: skip
    for index in (1, 2, 3, 9):  # key, kind, match, location: left
        assert raw[index].startswith(" " + values[index] + "  "), (index, raw[index])
    for index in (4, 5, 6, 7, 8):  # A, B, delta, delta %, interval: right
        assert raw[index].endswith("  " + values[index] + " "), (index, raw[index])


def test_default_limit_and_width_and_no_caption_when_all_rows_show() -> None:
    many = tuple(op("k" * 200 + str(i), 1_000.0, 1_000.0 + i, None) for i in range(21))
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(diff_renderables(diff(ops=many, scopes=(), kinds=())))
    output = console.file
    assert isinstance(output, io.StringIO)
    text = output.getvalue()
    assert "1 more rows (--limit, or --json for all)" in text  # 20 rows shown of 21
    border = next(line for line in text.splitlines() if line.startswith("┏"))
    assert len(border) == 160  # the long names shrink to the default width
    shown = RENDERER.render(diff(ops=OPS)).decode().splitlines()
    after = shown.index(next(line for line in shown if line.startswith("└"))) + 1
    assert shown[after].strip() == "name scopes by |delta|"  # no caption under the ops


def test_table_titles_and_the_rollups_without_op_columns() -> None:
    kinds = (DiffRow("tf.MatMul", "", "", "", 1_000.0, 3_000.0, None, "x"),)
    text = RENDERER.render(diff(kinds=kinds)).decode()
    lines = [line.rstrip() for line in text.splitlines()]
    for title in ("ops by |delta|", "name scopes by |delta|", "op kinds by |delta|"):
        assert title in lines
    rollup = ["#", "key", "A / step", "B / step", "delta", "delta %", "interval of delta"]
    headers = [cells(line) for line in text.splitlines() if line.startswith("┃")]
    assert headers[1:] == [rollup, rollup]  # scopes and kinds: no kind, match or location
    assert "fusion changes: none (the same ops ran together in both runs)" in lines


def test_the_delta_colour_follows_the_deltas_sign() -> None:
    # no change in the point estimate, an interval above zero: significant, but the delta
    # itself is not an increase, so it is not red
    flat = op("flat", 1_000.0, 1_000.0, (1.0, 2.0))
    line = next(line for line in colour(diff(ops=(flat,))).splitlines() if " flat " in line)
    assert re.search("\x1b\\[32m *\\+0 ns", line)
    assert re.search("\x1b\\[31m *\\[\\+1 ns, \\+2 ns\\]", line)  # the interval is above 0


def test_a_file_stays_plain_where_the_environment_forces_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `irprof diff -o diff.txt` in a CI job that sets FORCE_COLOR (and a colour TERM): rich
    # would take the buffer for a terminal and write escape codes into the file
    plain = RENDERER.render(diff()).decode()
    assert "\x1b" not in plain
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    forced = RENDERER.render(diff()).decode()
    assert "\x1b" not in forced
    assert forced == plain

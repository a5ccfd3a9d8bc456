"""Terminal tables that fit: every line within the width, one line per row, tokens whole."""

from __future__ import annotations

import pytest

from irprof.renderers.fit import FitColumn, fit_columns, fit_table, shorten_to, table_width
from irprof.renderers.hotspot_table import render_text

NAMES = [
    "model/encoder/block_14_project/BatchNorm/FusedBatchNormV3 +3 ops",
    "model/encoder/block_1/attention/query/MatMul",
    "softmax",
]
LOCATIONS = [
    "../../fresh/examples/keras_applications/mobilenet_v2.py:154:12",
    "examples/tf_cnn.py:54:1",
    "x.py:1:1",
]


def columns() -> list[FitColumn]:
    return [
        FitColumn("#", ["1", "2", "3"], justify="right"),
        FitColumn("op", NAMES, shrink="head", min_width=24),
        FitColumn(
            "kind (tf.)", ["FusedBatchNormV3, Relu6", "MatMul", "Softmax"], 4, "left", "tail", 10
        ),
        FitColumn("median x5", ["12.5 ms", "880 us", "3.1 us"], justify="right"),
        FitColumn("share", ["61.2%", "4.3%", "0.0%"], justify="right"),
        FitColumn("count", ["5", "5", "5"], 6, "right"),
        FitColumn(
            "step min/med/max", ["2.4 ms/2.5 ms/2.6 ms", "170 us/176 us/181 us", "-"], 3, "right"
        ),
        FitColumn("location", LOCATIONS, 1, "left", "head", 24),
    ]


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_every_row_is_one_line_within_the_width(width: int) -> None:
    text = render_text(fit_table(columns(), width), width=width)
    lines = [line for line in text.splitlines() if line.strip()]
    assert all(len(line) <= width for line in lines), text
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == 3, text  # no row wrapped onto a second line
    # Figures are never cut: every shown time or share is whole.
    for figure in ("12.5 ms", "880 us", "61.2%", "4.3%"):
        assert figure in text


def test_the_least_important_columns_go_first_and_names_keep_their_tail() -> None:
    fitted = {column.title: width for column, width in fit_columns(columns(), 80)}
    assert "count" not in fitted and "kind (tf.)" not in fitted  # priorities 6 and 4
    assert {"#", "op", "median x5", "share"} <= set(fitted)
    text = render_text(fit_table(columns(), 80), width=80)
    assert "softmax" in text and "…" in text
    assert "…/FusedBatchNormV3 +3 ops" in text  # the op's own part, not the scopes
    assert "…/mobilenet_v2.py:154:12" in text  # the file and position, not the folders


def test_a_wide_terminal_shows_everything_whole() -> None:
    natural = table_width([column.natural_width for column in columns()])
    text = render_text(fit_table(columns(), natural), width=natural)
    for value in [*NAMES, *LOCATIONS, "FusedBatchNormV3, Relu6"]:
        assert value in text
    assert "…" not in text


@pytest.mark.parametrize(
    ("text", "width", "how", "expected"),
    [
        ("a/b/c/op", 8, "head", "a/b/c/op"),  # fits: unchanged
        ("a/b/c/op", 5, "head", "…c/op"),
        ("Conv2D, BiasAdd", 9, "tail", "Conv2D, …"),
        ("ampere_sgemm_128x64_nn", 9, "middle", "ampe…4_nn"),  # head and tail of a kernel
        ("ampere_sgemm_128x64_nn", 10, "middle", "amper…4_nn"),
        ("x", 0, "head", ""),
    ],
)
def test_shorten_to_keeps_the_part_that_matters(
    text: str, width: int, how: str, expected: str
) -> None:
    assert shorten_to(text, width, how) == expected  # type: ignore[arg-type]

"""The op column of `irprof top` names the function all its rows share once, in its title.

TF names an op of a function body `node@function`; in a Keras `fit` step every op is in one
function, and its ~35-character suffix on every row left a narrow terminal with rows that all
read `…veBackpropInput@__inference_one_step_on_data_30908`.
"""

from __future__ import annotations

from irprof.analyses.hotspots import HotspotTable
from irprof.renderers.hotspot_table import (
    hotspot_rich_table,
    render_text,
    shared_function,
    without_function,
)
from tests.renderers.test_hotspot_table_mutants import cells, profiled, row

FIT = "__inference_one_step_on_data_30908"


def test_the_function_every_row_shares() -> None:
    assert shared_function([f"a/conv@{FIT}", f"b/Relu@{FIT} +3 ops", f"c@{FIT}#12"]) == FIT
    assert shared_function([f"a@{FIT}", "b@__inference_other_7"]) == ""
    assert shared_function([f"a@{FIT}", "main/b"]) == ""  # one row outside it
    assert shared_function(["jit(mlp)/jit(relu)/max (2 call sites)"]) == ""
    assert shared_function([f"a@{FIT} +1 ops b@f2"]) == ""  # two functions in one row
    assert shared_function([]) == ""
    assert without_function(f"b/Relu@{FIT} +3 ops", FIT) == "b/Relu +3 ops"
    assert without_function(f"b/Relu@{FIT}", "") == f"b/Relu@{FIT}"


def test_a_narrow_table_shows_the_names_and_titles_the_function() -> None:
    module = profiled()
    names = [
        f"mobilenetv2/block_{block}_depthwise/depthwise/DepthwiseConv2dNativeBackpropInput"
        for block in (1, 3)
    ]
    rows = tuple(
        row(f"{name}@{FIT}", op_name="tf.DepthwiseConv2dNativeBackpropInput", op_index=0)
        for name in names
    )
    table = HotspotTable("op", rows, 6_000, 6_000, stat="sum")
    text = render_text(hotspot_rich_table(table, module, width=100), width=100)
    assert f"op (runtime name) in @{FIT}" in " ".join(text.split())
    shown = [cells(line)[1] for line in text.splitlines() if "DepthwiseConv2d" in line]
    # Each row keeps the end of its own name, where the blocks differ.
    assert len(shown) == 2 and "block_1" in shown[0] and "block_3" in shown[1]
    assert FIT not in "".join(shown)

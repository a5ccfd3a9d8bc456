"""`top --by scope` gives a layer all of its ops: an op whose scope is another op's name (TF's
`conv/convolution/ReadVariableOp`, the variable read of `conv/convolution`) is that op's, so the
layer's row and the report's scope tree count the same ops."""

from __future__ import annotations

import re

from irprof.analyses.annotated_level import load_annotated_level
from irprof.api import Run
from irprof.bundle import RunBundle
from tests.analyses.test_support import fixture_tf_bundle  # noqa: F401  (found by its name)


def test_a_layer_row_holds_every_op_named_under_it(tf_bundle: RunBundle) -> None:
    rows = {row.key: row for row in Run.of(tf_bundle).top(by="scope", limit=None, stat="sum").rows}
    # Independently, from the annotated IR's text: profiled ops named under the conv layer.
    text = tf_bundle.annotated_path("tf").read_text()
    layer = next(key for key in rows if key.endswith("conv_1"))
    names = re.findall(r'loc\("([^"]*)"', text)
    under = {name for name in names if name.startswith(layer + "/")}
    profiled = [
        op
        for op in load_annotated_level(tf_bundle, "tf").profiled.ops
        if op.profile is not None and op.runtime_name in under
    ]
    assert rows[layer].ops == len(profiled) > 5
    assert rows[layer].total_ns == sum(op.total_ns for op in profiled)
    # No row is named after an op: those rows were a layer's variable reads split off.
    op_names = {op.runtime_name for op in profiled}
    assert not set(rows) & op_names

"""TF fused kernels split by FLOPs from the shapes the profiler recorded (host tracer level 3),
where the IR's variable reads are unranked and a `None` batch dimension is `?`."""

from __future__ import annotations

from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.frameworks.tf.shapes import infer_result, parse_shapes, properties
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tf"


def test_recorded_shape_lists_parse_one_entry_per_input() -> None:
    assert parse_shapes("(float[32,2704];float[2704,32];float[32])") == [
        (32, 2704),
        (2704, 32),
        (32,),
    ]
    assert parse_shapes("(;float[])") == [None, ()]
    assert parse_shapes("garbage") == []


def test_result_shapes_follow_from_inputs_and_properties() -> None:
    module = parse_module(
        """
        func.func @f(%x: tensor<8x32x32x3xf32>, %k: tensor<3x3x3x16xf32>) -> () {
          %0 = "tf.Conv2D"(%x, %k) <{data_format = "NHWC", dilations = [1, 1, 1, 1],
            explicit_paddings = [], padding = "SAME", strides = [1, 2, 2, 1]}>
            : (tensor<8x32x32x3xf32>, tensor<3x3x3x16xf32>) -> tensor<*xf32>
          return
        }
        """,
        make_context(),
    )
    conv = next(
        op
        for op in module.body.operations[0].regions[0].blocks[0].operations
        if op.operation.name == "tf.Conv2D"
    )
    props = properties(conv.operation)
    assert str(ir.StringAttr(props["padding"]).value) == "SAME"
    assert infer_result("conv2d", props, [(8, 32, 32, 3), (3, 3, 3, 16)]) == (8, 16, 16, 16)
    valid = {**props, "padding": ir.StringAttr.get("VALID", module.context)}
    assert infer_result("conv2d", valid, [(8, 32, 32, 3), (3, 3, 3, 16)]) == (8, 15, 15, 16)
    transposed = {"transpose_b": ir.BoolAttr.get(True, module.context)}
    assert infer_result("matmul", transposed, [(4, 8), (16, 8)]) == (4, 16)
    assert infer_result("biasadd", {}, [(4, 16), (16,)]) == (4, 16)
    assert infer_result("matmul", {}, [(4, 8), None]) is None


@pytest.mark.parametrize(
    ("fixture", "level", "group"),
    [
        ("cnn-train", "tf-standard", "tf:tf_cnn_1/dense1_1/Relu"),
        ("cnn-train", "tf", "tf:tf_cnn_1/conv_1/Relu"),
        ("dynamic-batch", "tf", "tf:sequential_1/down_1/BiasAdd"),
        ("residual", "tf", "tf:functional_1/skip_1/Add"),
    ],
)
def test_fused_groups_of_shapeless_ir_are_split_by_flops(
    fixture: str, level: str, group: str
) -> None:
    """GIVEN a fused MatMul/Conv2D kernel whose IR operands are unranked or `?`-shaped THEN its
    members share it by FLOPs from the recorded shapes: the matrix product or convolution takes
    nearly all of it, the bias add and activation a sliver."""
    result = CORRELATOR.correlate(RunBundle(FIXTURES / fixture), level, CorrelationOptions())
    members = [e for e in result.opprofile.entries if e.data.group == group]
    assert len(members) >= 2
    assert {e.data.share_basis for e in members} == {"flops"}
    heavy = max(members, key=lambda e: e.data.total_ns)
    assert heavy.op_name in ("tf.MatMul", "tf.Conv2D")
    assert heavy.data.total_ns > 0.8 * heavy.data.group_total_ns

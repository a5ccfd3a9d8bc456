"""The cost model's convolutions, pooling windows, reductions and linalg bodies, case by case:
the expected FLOPs and bytes are worked out here from each op's shapes and attributes by the
formulas written below (a multiply and an add per multiply-accumulate, one op per window
element, the body's arithmetic per input element), not read from the code under test.

Written from the survivors of `mlir/cost_model.py`'s second mutation run: transposed and
backprop convolutions, TF's fused convolutions, kernel layouts other than the last dim,
windows that overlap (stride 1: out * window differs from the input's elements, which the
pools with stride = window of `test_cost_model.py` could not tell apart), the window from each
attribute and from torch's kernel list, pools without a window, and body ops of every dialect
that counts.
"""

from __future__ import annotations

from math import prod

import pytest

from irprof.mlir.cost_model import OpCost
from tests.mlir.test_cost_model import F32, context  # noqa: F401  (the fixture by its name)
from tests.mlir.test_cost_model_mutants import cost

pytestmark = pytest.mark.usefixtures("context")

I32 = 4
C64 = 8  # complex<f32>


def macs_flops(points: int, per_point: int) -> int:
    """A multiply and an add for each multiply-accumulate."""
    return 2 * points * per_point


ZP = '%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
X = "tensor<1x8x8x4xf32>"  # NHWC input: 256 elements
X_N = prod((1, 8, 8, 4))

# (case, arguments, body, op, expected cost)
CONVOLUTIONS = [
    (
        "tosa transpose_conv2d: every input element times OC*KH*KW weights",
        f"%x: {X}, %w: tensor<16x3x2x4xf32>, %b: tensor<16xf32>",
        ZP + '%0 = "tosa.transpose_conv2d"(%x, %w, %b, %zp, %zp) {acc_type = f32, out_pad = '
        "array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, "
        "tensor<16x3x2x4xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> "
        "tensor<1x10x9x16xf32>",
        "tosa.transpose_conv2d",
        OpCost(
            macs_flops(X_N, 16 * 3 * 2),
            (X_N + 16 * 3 * 2 * 4 + 16 + 1 + 10 * 9 * 16) * F32,  # the zero point read once
            "conv",
        ),
    ),
    (
        "TF Conv2DBackpropInput: out_backprop points times KH*KW*IC",
        "%sizes: tensor<4xi32>, %w: tensor<3x2x4x16xf32>, %dy: tensor<1x8x8x16xf32>",
        '%0 = "tf.Conv2DBackpropInput"(%sizes, %w, %dy) {padding = "SAME"} : (tensor<4xi32>, '
        "tensor<3x2x4x16xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x8x4xf32>",
        "tf.Conv2DBackpropInput",
        OpCost(
            macs_flops(8 * 8 * 16, 3 * 2 * 4),
            4 * I32 + (3 * 2 * 4 * 16 + 8 * 8 * 16 + X_N) * F32,
            "conv",
        ),
    ),
    (
        "TF Conv2DBackpropFilter: out_backprop points times KH*KW*IC of the filter it writes",
        f"%x: {X}, %sizes: tensor<4xi32>, %dy: tensor<1x8x8x16xf32>",
        '%0 = "tf.Conv2DBackpropFilter"(%x, %sizes, %dy) {padding = "SAME"} : ('
        f"{X}, tensor<4xi32>, tensor<1x8x8x16xf32>) -> tensor<3x2x4x16xf32>",
        "tf.Conv2DBackpropFilter",
        OpCost(
            macs_flops(8 * 8 * 16, 3 * 2 * 4),
            4 * I32 + (X_N + 8 * 8 * 16 + 3 * 2 * 4 * 16) * F32,
            "conv",
        ),
    ),
    (
        "TF _FusedConv2D with a bias: one add more an output",
        f"%x: {X}, %w: tensor<3x3x4x16xf32>, %b: tensor<16xf32>",
        f'%0 = "tf._FusedConv2D"(%x, %w, %b) : ({X}, tensor<3x3x4x16xf32>, tensor<16xf32>) -> '
        "tensor<1x8x8x16xf32>",
        "tf._FusedConv2D",
        OpCost(
            macs_flops(8 * 8 * 16, 3 * 3 * 4) + 8 * 8 * 16,
            (X_N + 3 * 3 * 4 * 16 + 16 + 8 * 8 * 16) * F32,
            "conv",
        ),
    ),
    (
        "TF _FusedConv2D without extra inputs: the convolution alone",
        f"%x: {X}, %w: tensor<3x3x4x16xf32>",
        f'%0 = "tf._FusedConv2D"(%x, %w) : ({X}, tensor<3x3x4x16xf32>) -> tensor<1x8x8x16xf32>',
        "tf._FusedConv2D",
        OpCost(
            macs_flops(8 * 8 * 16, 3 * 3 * 4), (X_N + 3 * 3 * 4 * 16 + 8 * 8 * 16) * F32, "conv"
        ),
    ),
    (
        "stablehlo convolution, kernel [o, i, 0, 1]: the output features are the first dim",
        "%x: tensor<1x4x8x8xf32>, %w: tensor<16x4x3x3xf32>",
        "%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, "
        "1], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 :"
        " i64} : (tensor<1x4x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x6x6xf32>",
        "stablehlo.convolution",
        OpCost(macs_flops(16 * 6 * 6, 4 * 3 * 3), (256 + 16 * 4 * 9 + 16 * 6 * 6) * F32, "conv"),
    ),
    (
        "a convolution of unknown result shape: FLOPs and bytes unknown",
        f"%x: {X}, %w: tensor<3x3x4x16xf32>",
        f'%0 = "tf.Conv2D"(%x, %w) : ({X}, tensor<3x3x4x16xf32>) -> tensor<?x8x8x16xf32>',
        "tf.Conv2D",
        OpCost(None, None, "conv"),
    ),
    (
        "a convolution without a filter tensor: FLOPs unknown, bytes and category kept",
        f"%x: {X}",
        f'%0 = "tf.Conv2D"(%x) : ({X}) -> tensor<1x8x8x16xf32>',
        "tf.Conv2D",
        OpCost(None, (X_N + 8 * 8 * 16) * F32, "conv"),
    ),
]

# A 3x3 window at stride 1 over 8x8: a 6x6 output, each point reading 9 inputs.
POOLED = 1 * 6 * 6 * 4
POOL_BYTES = (X_N + POOLED) * F32
TORCH_INTS = """
  %k = torch.constant.int 3
  %one = torch.constant.int 1
  %zero = torch.constant.int 0
  %false = torch.constant.bool false
  %ks = torch.prim.ListConstruct %k, %k : (!torch.int, !torch.int) -> !torch.list<int>
  %ones = torch.prim.ListConstruct %one, %one : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = torch.prim.ListConstruct %zero, %zero : (!torch.int, !torch.int) -> !torch.list<int>
"""
TX = "!torch.vtensor<[1,4,8,8],f32>"

POOLS = [
    (
        "TF MaxPool: the window from ksize",
        f"%x: {X}",
        f'%0 = "tf.MaxPool"(%x) {{ksize = [1, 3, 3, 1], strides = [1, 1, 1, 1]}} : ({X}) -> '
        "tensor<1x6x6x4xf32>",
        "tf.MaxPool",
        OpCost(POOLED * 9, POOL_BYTES, "pool"),
    ),
    (
        "tosa max_pool2d: the window from kernel",
        f"%x: {X}",
        '%0 = "tosa.max_pool2d"(%x) {kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 0, 0>, '
        f"stride = array<i64: 1, 1>}} : ({X}) -> tensor<1x6x6x4xf32>",
        "tosa.max_pool2d",
        OpCost(POOLED * 9, POOL_BYTES, "pool"),
    ),
    (
        "stablehlo reduce_window: the window from window_dimensions",
        f"%x: {X}, %init: tensor<f32>",
        '%0 = "stablehlo.reduce_window"(%x, %init) ({\n'
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
        "    %m = stablehlo.maximum %a, %b : tensor<f32>\n"
        "    stablehlo.return %m : tensor<f32>\n"
        f"  }}) {{window_dimensions = array<i64: 1, 3, 3, 1>}} : ({X}, tensor<f32>) -> "
        "tensor<1x6x6x4xf32>",
        "stablehlo.reduce_window",
        OpCost(POOLED * 9, POOL_BYTES + F32, "pool"),  # and the initial value
    ),
    (
        "torch max_pool2d: the window from the kernel list (not the stride list after it)",
        f"%x: {TX}",
        TORCH_INTS + "%0 = torch.aten.max_pool2d %x, %ks, %ones, %zeros, %ones, %false : "
        f"{TX}, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.list<int>, "
        "!torch.bool -> !torch.vtensor<[1,4,6,6],f32>",
        "torch.aten.max_pool2d",
        OpCost(POOLED * 9, POOL_BYTES, "pool"),
    ),
    (
        "torch adaptive_avg_pool2d to 1x1: its list is the output size, every input read once",
        f"%x: {TX}",
        TORCH_INTS + "%0 = torch.aten.adaptive_avg_pool2d %x, %ones : "
        f"{TX}, !torch.list<int> -> !torch.vtensor<[1,4,1,1],f32>",
        "torch.aten.adaptive_avg_pool2d",
        OpCost(X_N, (X_N + 4) * F32, "pool"),
    ),
    (
        "torch adaptive_avg_pool2d to 3x3: overlapping windows, counted as the input read once",
        f"%x: {TX}",
        TORCH_INTS + "%0 = torch.aten.adaptive_avg_pool2d %x, %ks : "
        f"{TX}, !torch.list<int> -> !torch.vtensor<[1,4,3,3],f32>",
        "torch.aten.adaptive_avg_pool2d",
        OpCost(X_N, (X_N + 4 * 9) * F32, "pool"),
    ),
    (
        "a pool without a window: one op an input element",
        f"%x: {X}",
        f'%0 = "tf.MaxPool"(%x) : ({X}) -> tensor<1x6x6x4xf32>',
        "tf.MaxPool",
        OpCost(X_N, POOL_BYTES, "pool"),
    ),
    (
        "a pool with a window and an unknown result: one op an input element, bytes unknown",
        f"%x: {X}",
        f'%0 = "tf.MaxPool"(%x) {{ksize = [1, 3, 3, 1], strides = [1, 1, 1, 1]}} : ({X}) -> '
        "tensor<?x6x6x4xf32>",
        "tf.MaxPool",
        OpCost(X_N, None, "pool"),
    ),
    (
        "a pool of a scalar: no tensor to count by",
        "%s: f32",
        '%0 = "tf.MaxPool"(%s) : (f32) -> f32',
        "tf.MaxPool",
        OpCost(None, 0, "pool"),
    ),
]

R = "tensor<16x10xf32>"  # reduced over its 10 columns into 16 results
R_N = 16 * 10
REDUCE_BYTES = (R_N + 1 + 16) * F32  # the input, the initial value, the result


def reduce_body(*ops: str) -> str:
    """`stablehlo.reduce` of %x over dim 1 whose combiner runs `ops` and returns `%s`."""
    lines = "\n".join(f"    {op}" for op in ops)
    return (
        f"%0 = stablehlo.reduce(%x init: %init) across dimensions = [1] : ({R}, tensor<f32>) "
        "-> tensor<16xf32>\n  reducer(%a: tensor<f32>, %b: tensor<f32>) {\n"
        f"{lines}\n    stablehlo.return %s : tensor<f32>\n  }}"
    )


REDUCTIONS = [
    (
        "stablehlo reduce with two stablehlo/chlo ops a step: two an input element",
        f"%x: {R}, %init: tensor<f32>",
        reduce_body(
            "%e = chlo.erf %a : tensor<f32> -> tensor<f32>",
            "%s = stablehlo.add %e, %b : tensor<f32>",
        ),
        "stablehlo.reduce",
        OpCost(2 * R_N, REDUCE_BYTES, "reduction"),
    ),
    (
        "a combiner with a tosa op: counted too",
        f"%x: {R}, %init: tensor<f32>",
        reduce_body(
            "%e = tosa.add %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>",
            "%s = stablehlo.add %e, %b : tensor<f32>",
        ),
        "stablehlo.reduce",
        OpCost(2 * R_N, REDUCE_BYTES, "reduction"),
    ),
    (
        "a combiner of three ops for two results: 3 // 2 = 1 an element of the first input",
        f"%x: {R}, %y: {R}, %i: tensor<f32>, %j: tensor<f32>",
        '%0:2 = "stablehlo.reduce"(%x, %y, %i, %j) ({\n'
        "  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):\n"
        "    %s = stablehlo.add %a, %c : tensor<f32>\n"
        "    %t = stablehlo.add %b, %d : tensor<f32>\n"
        "    %u = stablehlo.multiply %t, %t : tensor<f32>\n"
        "    stablehlo.return %s, %u : tensor<f32>, tensor<f32>\n"
        f"  }}) {{dimensions = array<i64: 1>}} : ({R}, {R}, tensor<f32>, tensor<f32>) -> "
        "(tensor<16xf32>, tensor<16xf32>)",
        "stablehlo.reduce",
        OpCost((3 // 2) * R_N, (2 * R_N + 2 + 2 * 16) * F32, "reduction"),
    ),
    (
        "a reduction of a scalar: no tensor to count by",
        "%s: f32",
        '%0 = "tf.Sum"(%s) : (f32) -> f32',
        "tf.Sum",
        OpCost(None, 0, "reduction"),
    ),
]

V = "tensor<4xcomplex<f32>>"
M = "tensor<4x8xf32>"
LINALG = [
    (
        "a linalg body: math and complex ops count, a constant before them does not stop it",
        f"%x: {V}, %o: {V}",
        "%0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> "
        f'(d0)>], iterator_types = ["parallel"]}} ins(%x : {V}) outs(%o : {V}) {{\n'
        "  ^bb0(%in: complex<f32>, %out: complex<f32>):\n"
        "    %c = arith.constant 2.0 : f32\n"
        "    %e = math.exp %c : f32\n"
        "    %s = complex.add %in, %in : complex<f32>\n"
        "    linalg.yield %s : complex<f32>\n"
        f"  }} -> {V}",
        "linalg.generic",
        OpCost(4 * 2, (4 + 4) * C64, "elementwise"),  # exp and add at 4 points; `outs` unread
    ),
    (
        "linalg ins are read even when the body ignores one; an unread out is not",
        f"%a: {M}, %b: {M}, %o: {M}",
        "%0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0,"
        ' d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel",'
        f' "parallel"]}} ins(%a, %b : {M}, {M}) outs(%o : {M}) {{\n'
        "  ^bb0(%in: f32, %unused: f32, %out: f32):\n"
        "    %e = math.exp %in : f32\n"
        "    linalg.yield %e : f32\n"
        f"  }} -> {M}",
        "linalg.generic",
        OpCost(32, 3 * 32 * F32, "elementwise"),
    ),
]

CASES = CONVOLUTIONS + POOLS + REDUCTIONS + LINALG


@pytest.mark.parametrize(
    ("args", "body", "name", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_cost_from_shapes_and_attributes(args: str, body: str, name: str, expected: OpCost) -> None:
    found = cost(args, body, name)
    assert found == expected
    # counts are integers (an i64 attribute), never a float that happens to be whole
    assert found.flops is None or type(found.flops) is int


def test_a_convolution_without_output_features_claims_no_flops() -> None:
    # a kernel [3, 3, 4, 0]: the layout's `o` dim is 0; no multiply-adds to count, no crash
    empty = cost(
        f"%x: {X}, %w: tensor<3x3x4x0xf32>",
        "%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, "
        "f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, "
        f"feature_group_count = 1 : i64}} : ({X}, tensor<3x3x4x0xf32>) -> tensor<1x8x8x0xf32>",
        "stablehlo.convolution",
    )
    assert empty.flops in (None, 0)
    assert (empty.bytes, empty.category) == (X_N * F32, "conv")  # only the input holds data

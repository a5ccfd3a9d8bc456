"""The cost model: FLOPs and bytes from IR types for StableHLO, linalg, TOSA, torch and TF ops,
with the expected numbers worked out by hand from the shapes in each case."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.mlir.cost_groups import call_graph, group_cost
from irprof.mlir.cost_model import op_cost, share_weights
from irprof.mlir.op_index import walk_ops

F32 = 4


@pytest.fixture(scope="module")
def context() -> Iterator[ir.Context]:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        yield ctx


# Parsed modules stay alive for the session: an op outliving its module is a dangling pointer.
PARSED: list[ir.Module] = []


def ops_of(body: str, args: str) -> list[ir.Operation]:
    """The ops of `func.func @f(args) { body; return }`, without the func and the return."""
    module = ir.Module.parse(f"func.func @f({args}) {{\n{body}\n  return\n}}")
    PARSED.append(module)
    return [op for op in walk_ops(module) if op.name not in ("func.func", "func.return")]


def first(body: str, args: str, name: str) -> ir.Operation:
    return next(op for op in ops_of(body, args) if op.name == name)


# (description, arguments, body, op, expected flops, expected bytes)
CASES = [
    (
        "stablehlo batched dot_general: 2*B*M*N*K",
        "%a: tensor<4x8x16xf32>, %b: tensor<4x16x32xf32>",
        "%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x "
        "[1] : (tensor<4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>",
        "stablehlo.dot_general",
        2 * 4 * 8 * 32 * 16,
        (4 * 8 * 16 + 4 * 16 * 32 + 4 * 8 * 32) * F32,
    ),
    (
        "stablehlo depthwise convolution (feature groups): 2*out*kh*kw",
        "%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x1x4xf32>",
        "%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
        ", window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, "
        "feature_group_count = 4 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x1x4xf32>) -> "
        "tensor<1x8x8x4xf32>",
        "stablehlo.convolution",
        2 * (8 * 8 * 4) * (3 * 3),
        (8 * 8 * 4 + 3 * 3 * 4 + 8 * 8 * 4) * F32,
    ),
    (
        "stablehlo reduce: one per input element",
        "%x: tensor<16x10xf32>, %init: tensor<f32>",
        "%0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : "
        "(tensor<16x10xf32>, tensor<f32>) -> tensor<16xf32>",
        "stablehlo.reduce",
        160,
        (160 + 1 + 16) * F32,
    ),
    (
        "stablehlo broadcast_in_dim: a copy, no FLOPs",
        "%x: tensor<16xf32>",
        "%0 = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<16xf32>) -> tensor<16x10xf32>",
        "stablehlo.broadcast_in_dim",
        0,
        (16 + 160) * F32,
    ),
    (
        "stablehlo gather: selected rows read and written, plus indices",
        "%table: tensor<1000x64xf32>, %ids: tensor<8x1xi32>",
        '%0 = "stablehlo.gather"(%table, %ids) {dimension_numbers = #stablehlo.gather<offset_dims'
        " = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
        "slice_sizes = array<i64: 1, 64>} : (tensor<1000x64xf32>, tensor<8x1xi32>) -> "
        "tensor<8x64xf32>",
        "stablehlo.gather",
        0,
        2 * 8 * 64 * F32 + 8 * 4,
    ),
    (
        "tosa conv2d, weight [OC, KH, KW, IC]: 2*out*KH*KW*IC (zero points move 8 bytes)",
        "%x: tensor<1x8x8x4xf32>, %w: tensor<16x3x3x4xf32>, %b: tensor<16xf32>",
        '%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
        '%0 = "tosa.conv2d"(%x, %w, %b, %zp, %zp) {acc_type = f32, dilation = array<i64: 1, 1>,'
        " pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, "
        "tensor<16x3x3x4xf32>, tensor<16xf32>, tensor<1xf32>, tensor<1xf32>) -> "
        "tensor<1x8x8x16xf32>",
        "tosa.conv2d",
        2 * (8 * 8 * 16) * (3 * 3 * 4),
        (8 * 8 * 4 + 16 * 9 * 4 + 16 + 1 + 8 * 8 * 16) * F32,
    ),
    (
        "tosa depthwise_conv2d, weight [KH, KW, C, M]: 2*out*KH*KW",
        "%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x2xf32>, %b: tensor<8xf32>",
        '%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
        '%0 = "tosa.depthwise_conv2d"(%x, %w, %b, %zp, %zp) {acc_type = f32, dilation = '
        "array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : "
        "(tensor<1x8x8x4xf32>, tensor<3x3x4x2xf32>, tensor<8xf32>, tensor<1xf32>, "
        "tensor<1xf32>) -> tensor<1x8x8x8xf32>",
        "tosa.depthwise_conv2d",
        2 * (8 * 8 * 8) * 9,
        (8 * 8 * 4 + 9 * 8 + 8 + 1 + 8 * 8 * 8) * F32,
    ),
    (
        "tosa matmul: zero points are no bias",
        "%a: tensor<2x8x16xf32>, %b: tensor<2x16x4xf32>",
        '%zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
        '%0 = "tosa.matmul"(%a, %b, %zp, %zp) : (tensor<2x8x16xf32>, tensor<2x16x4xf32>, '
        "tensor<1xf32>, tensor<1xf32>) -> tensor<2x8x4xf32>",
        "tosa.matmul",
        2 * 2 * 8 * 4 * 16,
        (2 * 8 * 16 + 2 * 16 * 4 + 1 + 2 * 8 * 4) * F32,
    ),
    (
        "tosa max_pool2d: out * window",
        "%x: tensor<1x8x8x4xf32>",
        '%0 = "tosa.max_pool2d"(%x) {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, '
        "stride = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>",
        "tosa.max_pool2d",
        4 * 4 * 4 * 4,
        (256 + 64) * F32,
    ),
    (
        "torch addmm: 2*M*N*K plus the bias",
        "%bias: !torch.vtensor<[32],f32>, %a: !torch.vtensor<[4,512],f32>, "
        "%w: !torch.vtensor<[512,32],f32>, %one: !torch.int",
        "%0 = torch.aten.addmm %bias, %a, %w, %one, %one : !torch.vtensor<[32],f32>, "
        "!torch.vtensor<[4,512],f32>, !torch.vtensor<[512,32],f32>, !torch.int, !torch.int -> "
        "!torch.vtensor<[4,32],f32>",
        "torch.aten.addmm",
        2 * 4 * 32 * 512 + 4 * 32,
        (32 + 4 * 512 + 512 * 32 + 4 * 32) * F32,
    ),
    (
        "torch grouped convolution, weight [out, in/groups, kh, kw]",
        "%x: !torch.vtensor<[1,8,8,8],f32>, %w: !torch.vtensor<[8,1,3,3],f32>, %n: !torch.none, "
        "%l: !torch.list<int>, %f: !torch.bool, %g: !torch.int",
        "%0 = torch.aten.convolution %x, %w, %n, %l, %l, %l, %f, %l, %g : "
        "!torch.vtensor<[1,8,8,8],f32>, !torch.vtensor<[8,1,3,3],f32>, !torch.none, "
        "!torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.bool, !torch.list<int>, "
        "!torch.int -> !torch.vtensor<[1,8,8,8],f32>",
        "torch.aten.convolution",
        2 * (8 * 8 * 8) * 9,
        (512 + 72 + 512) * F32,
    ),
    (
        "torch softmax: 5 per element; the overload suffix is not the kind",
        "%x: !torch.vtensor<[4,10],f32>, %dim: !torch.int, %n: !torch.none",
        "%0 = torch.aten.softmax.int %x, %dim, %n : !torch.vtensor<[4,10],f32>, !torch.int, "
        "!torch.none -> !torch.vtensor<[4,10],f32>",
        "torch.aten.softmax.int",
        5 * 40,
        80 * F32,
    ),
    (
        "torch embedding: rows of the table read and written, plus the int64 ids",
        "%w: !torch.vtensor<[64,32],f32>, %ids: !torch.vtensor<[2,16],si64>, %i: !torch.int, "
        "%b: !torch.bool",
        "%0 = torch.aten.embedding %w, %ids, %i, %b, %b : !torch.vtensor<[64,32],f32>, "
        "!torch.vtensor<[2,16],si64>, !torch.int, !torch.bool, !torch.bool -> "
        "!torch.vtensor<[2,16,32],f32>",
        "torch.aten.embedding",
        0,
        2 * 2 * 16 * 32 * F32 + 2 * 16 * 8,
    ),
    (
        "torch view: free",
        "%x: !torch.vtensor<[4,10],f32>, %shape: !torch.list<int>",
        "%0 = torch.aten.view %x, %shape : !torch.vtensor<[4,10],f32>, !torch.list<int> -> "
        "!torch.vtensor<[40],f32>",
        "torch.aten.view",
        0,
        0,
    ),
    (
        "TF MatMul with transpose_a: K is the first matrix's leading dim",
        "%a: tensor<64x8xf32>, %b: tensor<64x32xf32>",
        '%0 = "tf.MatMul"(%a, %b) {transpose_a = true, transpose_b = false} : (tensor<64x8xf32>,'
        " tensor<64x32xf32>) -> tensor<8x32xf32>",
        "tf.MatMul",
        2 * 8 * 32 * 64,
        (64 * 8 + 64 * 32 + 8 * 32) * F32,
    ),
    (
        "TF BatchMatMulV2 with adj_x: K is the first matrix's second-to-last dim",
        "%a: tensor<2x8x4xf32>, %b: tensor<2x8x5xf32>",
        '%0 = "tf.BatchMatMulV2"(%a, %b) {adj_x = true, adj_y = false} : (tensor<2x8x4xf32>,'
        " tensor<2x8x5xf32>) -> tensor<2x4x5xf32>",
        "tf.BatchMatMulV2",
        2 * (2 * 4 * 5) * 8,
        (64 + 80 + 40) * F32,
    ),
    (
        "TF BatchMatMulV2 without adj_x: K is the first matrix's last dim",
        "%a: tensor<2x4x8xf32>, %b: tensor<2x8x5xf32>",
        '%0 = "tf.BatchMatMulV2"(%a, %b) {adj_x = false, adj_y = false} : (tensor<2x4x8xf32>,'
        " tensor<2x8x5xf32>) -> tensor<2x4x5xf32>",
        "tf.BatchMatMulV2",
        2 * (2 * 4 * 5) * 8,
        (64 + 80 + 40) * F32,
    ),
    (
        "TF depthwise conv, filter [kh, kw, in, multiplier]",
        "%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x1xf32>",
        '%0 = "tf.DepthwiseConv2dNative"(%x, %w) : (tensor<1x8x8x4xf32>, tensor<3x3x4x1xf32>) ->'
        " tensor<1x8x8x4xf32>",
        "tf.DepthwiseConv2dNative",
        2 * (8 * 8 * 4) * 9,
        (256 + 36 + 256) * F32,
    ),
    (
        "TF MaxPool with ksize: out * window",
        "%x: tensor<1x8x8x4xf32>",
        '%0 = "tf.MaxPool"(%x) {ksize = [1, 2, 2, 1], strides = [1, 2, 2, 1]} : '
        "(tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>",
        "tf.MaxPool",
        64 * 4,
        (256 + 64) * F32,
    ),
    (
        "TF Softmax on bf16: 2 bytes an element",
        "%x: tensor<4x10xbf16>",
        '%0 = "tf.Softmax"(%x) : (tensor<4x10xbf16>) -> tensor<4x10xbf16>',
        "tf.Softmax",
        5 * 40,
        80 * 2,
    ),
    (
        "TF ReadVariableOp: a resource handle moves nothing",
        "%v: tensor<!tf_type.resource<tensor<8xf32>>>",
        '%0 = "tf.ReadVariableOp"(%v) : (tensor<!tf_type.resource<tensor<8xf32>>>) -> '
        "tensor<8xf32>",
        "tf.ReadVariableOp",
        0,
        0,
    ),
]


@pytest.mark.parametrize(
    ("args", "body", "name", "flops", "moved"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_cost_of_common_ops(
    context: ir.Context, args: str, body: str, name: str, flops: int, moved: int
) -> None:
    cost = op_cost(first(body, args, name))
    assert (cost.flops, cost.bytes) == (flops, moved)


LINALG = """
  %e = tensor.empty() : tensor<8x32xf32>
  %c = arith.constant 0.0 : f32
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x64xf32>, tensor<64x32xf32>)
         outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%m : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf ugt, %in, %c : f32
    %1 = arith.select %0, %in, %c : f32
    linalg.yield %1 : f32
  } -> tensor<8x32xf32>
  %t = tensor.empty() : tensor<32x8xf32>
  %tr = linalg.transpose ins(%g : tensor<8x32xf32>) outs(%t : tensor<32x8xf32>)
          permutation = [1, 0]
"""


def test_linalg_counts_iteration_points_times_body_arithmetic(context: ir.Context) -> None:
    ops = ops_of(LINALG, "%a: tensor<8x64xf32>, %b: tensor<64x32xf32>")
    by_name = {op.name: op_cost(op) for op in ops if op.name.startswith("linalg.")}
    matmul = by_name["linalg.matmul"]
    # mulf + addf per point; reads A, B and the accumulator it adds to, writes C.
    assert matmul.flops == 2 * 8 * 32 * 64
    assert matmul.bytes == (8 * 64 + 64 * 32 + 8 * 32 + 8 * 32) * F32
    assert matmul.category == "matmul"
    relu = by_name["linalg.generic"]
    assert relu.flops == 2 * 8 * 32  # cmpf + select; its `outs` is never read
    assert relu.bytes == 2 * 8 * 32 * F32 and relu.category == "elementwise"
    assert by_name["linalg.fill"].flops == 0 and by_name["linalg.fill"].bytes == 8 * 32 * F32
    assert by_name["linalg.transpose"].category == "copy"
    assert by_name["linalg.transpose"].bytes == 2 * 8 * 32 * F32
    # The body's ops are the parent's work, never counted twice.
    body = [op for op in ops if op.parent.name.startswith("linalg.")]
    assert {op.name for op in body} >= {"arith.cmpf", "arith.select", "linalg.yield"}
    assert all(op_cost(op).category == "body" and op_cost(op).flops == 0 for op in body)


FUSED = """
  %0 = "tf.Conv2D"(%x, %w) : (tensor<1x8x8x4xf32>, tensor<3x3x4x16xf32>) -> tensor<1x8x8x16xf32>
  %1 = "tf.BiasAdd"(%0, %b) : (tensor<1x8x8x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  %2 = "tf.Relu"(%1) : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %3 = "tf.Identity"(%2) : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %4 = "tf.Transpose"(%x, %p) : (tensor<1x8x8x4xf32>, tensor<4xi32>) -> tensor<4x8x8x1xf32>
  %5 = "tf.Relu"(%u) : (tensor<*xf32>) -> tensor<*xf32>
"""
FUSED_ARGS = (
    "%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x16xf32>, %b: tensor<16xf32>, %p: tensor<4xi32>,"
    " %u: tensor<*xf32>"
)


def test_a_fused_group_moves_only_what_crosses_its_boundary(context: ir.Context) -> None:
    conv, bias, relu, _, transpose, unranked = ops_of(FUSED, FUSED_ARGS)
    fused = group_cost([conv, bias, relu])
    out = 8 * 8 * 16
    assert fused.flops == 2 * out * (3 * 3 * 4) + out + out
    # Input, filter and bias in, the ReLU's result out; the two intermediates never leave.
    assert fused.bytes == (8 * 8 * 4 + 3 * 3 * 4 * 16 + 16 + out) * F32
    assert fused.category == "conv"
    alone = [op_cost(op).bytes or 0 for op in (conv, bias, relu)]
    assert sum(alone) - fused.bytes == 4 * out * F32  # written twice and read twice
    assert op_cost(transpose).flops == 0
    assert op_cost(unranked).flops is None and op_cost(unranked).bytes is None


def test_share_weights_by_flops_then_bytes_then_even(context: ir.Context) -> None:
    conv, bias, relu, identity, transpose, unranked = ops_of(FUSED, FUSED_ARGS)
    weights, basis = share_weights([conv, bias, identity])
    assert basis == "flops" and weights[2] == 0 and weights[0] > 50 * weights[1]
    # Pure data movement: no FLOPs anywhere, so the bytes decide.
    weights, basis = share_weights([transpose, identity])
    assert basis == "bytes" and weights == [float(2 * 8 * 8 * 4 * F32 + 16), 0.0]
    assert share_weights([relu, unranked]) == ([1.0, 1.0], "even")


CALLED = """
module {
  func.func @main(%x: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %0 = stablehlo.add %x, %b : tensor<64x32xf32>
    %1 = func.call @relu(%0) : (tensor<64x32xf32>) -> tensor<64x32xf32>
    return %1 : tensor<64x32xf32>
  }
  func.func private @relu(%a: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<64x32xf32>
    %0 = stablehlo.maximum %a, %z : tensor<64x32xf32>
    return %0 : tensor<64x32xf32>
  }
}
"""


def test_a_fusion_across_a_private_function_does_not_move_the_value_it_hands_over(
    context: ir.Context,
) -> None:
    module = ir.Module.parse(CALLED)
    PARSED.append(module)
    ops = {op.name: op for op in walk_ops(module)}
    add, maximum, constant = (
        ops["stablehlo.add"],
        ops["stablehlo.maximum"],
        ops["stablehlo.constant"],
    )
    tile = 64 * 32 * F32
    fused = group_cost([add, maximum, constant], call_graph(module))
    # x and b read, the maximum written; the sum handed to @relu never leaves the fusion.
    assert fused.bytes == 3 * tile and fused.flops == 2 * 64 * 32
    # Without the call graph the call boundary counts as a write and a read.
    assert group_cost([add, maximum, constant]).bytes == 5 * tile


RETURNED = """
module {
  func.func @main(%x: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %0 = func.call @dense(%x, %b) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %z = stablehlo.constant dense<0.0> : tensor<64x32xf32>
    %1 = stablehlo.maximum %0, %z : tensor<64x32xf32>
    return %1 : tensor<64x32xf32>
  }
  func.func private @dense(%x: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
    %0 = stablehlo.add %x, %b : tensor<64x32xf32>
    return %0 : tensor<64x32xf32>
  }
}
"""


def test_a_value_returned_from_a_function_into_the_fusion_stays_inside(
    context: ir.Context,
) -> None:
    module = ir.Module.parse(RETURNED)
    PARSED.append(module)
    ops = {op.name: op for op in walk_ops(module)}
    members = [ops["stablehlo.add"], ops["stablehlo.maximum"], ops["stablehlo.constant"]]
    assert group_cost(members, call_graph(module)).bytes == 3 * 64 * 32 * F32

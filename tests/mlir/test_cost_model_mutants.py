"""The cost model's fills, scatters, copies, gathers and slices, a scalar result, the one-FLOP
boundary of sharing by FLOPs and the category of no ops: FLOPs, bytes and category worked out
by hand from the shapes of each op written here.

Written from the first mutation run of `mlir/cost_model.py`, where no selected test reached a
fill (`Ones`, `ZerosLike`, `Fill`) or a scatter (`TensorScatterUpdate`, `TensorScatterAdd`).
"""

from __future__ import annotations

import pytest

from irprof.mlir.cost_model import OpCost, dominant_category, op_cost, share_weights
from tests.mlir.test_cost_model import (  # noqa: F401  (the fixture is found by its name)
    F32,
    context,
    first,
    ops_of,
)

I32 = 4
I64 = 8

pytestmark = pytest.mark.usefixtures("context")


def cost(args: str, body: str, name: str) -> OpCost:
    """The cost of the op `name` in `func.func @f(args) { body; return }`."""
    return op_cost(first(body, args, name))


def test_a_fill_writes_its_result_and_computes_nothing() -> None:
    ones = cost("", '%0 = "tf.Ones"() : () -> tensor<4x8xf32>', "tf.Ones")
    assert ones == OpCost(0, 4 * 8 * F32, "copy")
    # ZerosLike reads no data of its operand: only the result's bytes
    like = cost(
        "%x: tensor<16xf32>", '%0 = "tf.ZerosLike"(%x) : (tensor<16xf32>) -> tensor<16xf32>',
        "tf.ZerosLike",
    )  # fmt: skip
    assert like == OpCost(0, 16 * F32, "copy")
    unknown = cost("", '%0 = "tf.Fill"() : () -> tensor<?x8xf32>', "tf.Fill")
    assert unknown == OpCost(0, None, "copy")


SCATTER = "tf.TensorScatterUpdate"


def test_a_scatter_counts_its_updates() -> None:
    # updates 3x4 f32 = 48 bytes read and written; indices 3x1 i32 = 12 bytes; one op each
    known = cost(
        "%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<3x4xf32>",
        f'%0 = "{SCATTER}"(%t, %i, %u) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>)'
        " -> tensor<8x4xf32>",
        SCATTER,
    )
    assert known == OpCost(3 * 4, 2 * 3 * 4 * F32 + 3 * 1 * I32, "gather")
    # two index tensors, one of them given twice: read once
    put = "tf.TensorScatterAdd"
    both = cost(
        "%t: tensor<8x4xf32>, %i: tensor<2xi64>, %j: tensor<2xi64>, %u: tensor<2xf32>",
        f'%0 = "{put}"(%t, %i, %j, %i, %u) : (tensor<8x4xf32>, tensor<2xi64>, tensor<2xi64>, '
        "tensor<2xi64>, tensor<2xf32>) -> tensor<8x4xf32>",
        put,
    )
    assert both == OpCost(2, 2 * 2 * F32 + 2 * 2 * I64, "gather")


def test_a_scatter_with_unknown_indices_or_updates() -> None:
    # indices of unknown size count as none; updates of unknown size leave both unknown
    dynamic_index = cost(
        "%t: tensor<8x4xf32>, %i: tensor<?x1xi32>, %u: tensor<3x4xf32>",
        f'%0 = "{SCATTER}"(%t, %i, %u) : (tensor<8x4xf32>, tensor<?x1xi32>, tensor<3x4xf32>)'
        " -> tensor<8x4xf32>",
        SCATTER,
    )
    assert dynamic_index == OpCost(3 * 4, 2 * 3 * 4 * F32, "gather")
    dynamic_updates = cost(
        "%t: tensor<8x4xf32>, %i: tensor<3x1xi32>, %u: tensor<?x4xf32>",
        f'%0 = "{SCATTER}"(%t, %i, %u) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<?x4xf32>)'
        " -> tensor<8x4xf32>",
        SCATTER,
    )
    assert dynamic_updates == OpCost(None, None, "gather")
    no_operands = cost("", f'%0 = "{SCATTER}"() : () -> tensor<8x4xf32>', SCATTER)
    assert no_operands == OpCost(None, None, "gather")
    # a scalar update holds no tensor data: 0 bytes, but no shape to count FLOPs by
    scalar = cost(
        "%t: tensor<8xf32>, %i: tensor<1xi32>, %u: f32",
        f'%0 = "{SCATTER}"(%t, %i, %u) : (tensor<8xf32>, tensor<1xi32>, f32) -> tensor<8xf32>',
        SCATTER,
    )
    assert scalar == OpCost(None, None, "gather")


def test_copies_gathers_and_slices_by_category() -> None:
    # a transpose reads and writes its tensor: (32 + 32) * 4 bytes, no FLOPs
    moved = cost(
        "%x: tensor<4x8xf32>", '%0 = "tf.Transpose"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>',
        "tf.Transpose",
    )  # fmt: skip
    assert moved == OpCost(0, (32 + 32) * F32, "copy")
    # a gather reads and writes what it selects (2 x 4 f32) and reads its indices (2 i32)
    gathered = cost(
        "%t: tensor<8x4xf32>, %i: tensor<2xi32>",
        '%0 = "tf.GatherV2"(%t, %i) : (tensor<8x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>',
        "tf.GatherV2",
    )
    assert gathered == OpCost(0, 2 * 2 * 4 * F32 + 2 * I32, "gather")
    sliced = cost(
        "%t: tensor<8x4xf32>", '%0 = "tf.Slice"(%t) : (tensor<8x4xf32>) -> tensor<3x4xf32>',
        "tf.Slice",
    )  # fmt: skip
    assert sliced == OpCost(0, 2 * 3 * 4 * F32, "copy")


def test_a_scalar_result_is_one_element() -> None:
    # scalars hold no tensor data (0 bytes); the op is one FLOP on one element
    add = cost("%a: f32, %b: f32", '%0 = "tf.AddV2"(%a, %b) : (f32, f32) -> f32', "tf.AddV2")
    assert add == OpCost(1, 0, "elementwise")


def test_one_flop_is_enough_to_share_by_flops() -> None:
    ops = ops_of(
        '%0 = "tf.AddV2"(%a, %b) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>',
        "%a: tensor<1xf32>, %b: tensor<1xf32>",
    )
    assert share_weights(ops) == ([1.0], "flops")  # one FLOP, 12 bytes: FLOPs decide


def test_no_category_is_free() -> None:
    assert dominant_category([]) == "free"
    assert dominant_category(["copy", "body", "matmul"]) == "matmul"


def test_torch_slice_is_a_view() -> None:
    # torch's slice (unlike TF's) makes a view: nothing is read or written
    ints = ", ".join(f"%{name}: !torch.int" for name in "dset")
    view = cost(
        f"%x: !torch.vtensor<[8,4],f32>, {ints}",
        "%0 = torch.aten.slice.Tensor %x, %d, %s, %e, %t : !torch.vtensor<[8,4],f32>, "
        "!torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[3,4],f32>",
        "torch.aten.slice.Tensor",
    )
    assert view == OpCost(0, 0, "free")


LINALG_ARGS = (
    "%A: tensor<4x8xf32>, %v8: tensor<8xf32>, %v4: tensor<4xf32>, %s: tensor<f32>, "
    "%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>, %k: tensor<3x3xf32>, "
    "%o4: tensor<1x4x4x4xf32>, %o2: tensor<1x4x4x2xf32>, %B: tensor<8x2xf32>, %C: tensor<4x2xf32>"
)
LINALG_BODY = """
  %mv = linalg.matvec ins(%A, %v8 : tensor<4x8xf32>, tensor<8xf32>) outs(%v4 : tensor<4xf32>)
    -> tensor<4xf32>
  %vm = linalg.vecmat ins(%v4, %A : tensor<4xf32>, tensor<4x8xf32>) outs(%v8 : tensor<8xf32>)
    -> tensor<8xf32>
  %d = linalg.dot ins(%v8, %v8 : tensor<8xf32>, tensor<8xf32>) outs(%s : tensor<f32>)
    -> tensor<f32>
  %mm = linalg.contract indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
      affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%A, %B : tensor<4x8xf32>, tensor<8x2xf32>) outs(%C : tensor<4x2xf32>) -> tensor<4x2xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>,
    strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) outs(%o4 : tensor<1x4x4x4xf32>)
    -> tensor<1x4x4x4xf32>
  %p = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>,
    strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : tensor<1x6x6x2xf32>, tensor<3x3xf32>) outs(%o2 : tensor<1x4x4x2xf32>)
    -> tensor<1x4x4x2xf32>
  %r = linalg.reduce ins(%A : tensor<4x8xf32>) outs(%v4 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %sum = arith.addf %in, %acc : f32
      linalg.yield %sum : f32
    }
  %gr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
    ins(%A : tensor<4x8xf32>) outs(%v4 : tensor<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %sum = arith.addf %in, %acc : f32
      linalg.yield %sum : f32
    } -> tensor<4xf32>
  %ge = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
    ins(%v4 : tensor<4xf32>) outs(%v4 : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %twice = arith.addf %in, %in : f32
      linalg.yield %twice : f32
    } -> tensor<4xf32>
  %gc = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
    ins(%v4 : tensor<4xf32>) outs(%v4 : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4xf32>
"""


def test_linalg_categories() -> None:
    ops = [op for op in ops_of(LINALG_BODY, LINALG_ARGS) if op.name.startswith("linalg.")]
    ops = [op for op in ops if op.name != "linalg.yield"]
    categories = [(op.name, op_cost(op).category) for op in ops]
    assert categories == [
        ("linalg.matvec", "matmul"),
        ("linalg.vecmat", "matmul"),
        ("linalg.dot", "matmul"),
        ("linalg.contract", "matmul"),
        ("linalg.conv_2d_nhwc_hwcf", "conv"),
        ("linalg.pooling_nhwc_max", "pool"),
        ("linalg.reduce", "reduction"),
        ("linalg.generic", "reduction"),  # a reduction iterator
        ("linalg.generic", "elementwise"),  # parallel, one add a point
        ("linalg.generic", "copy"),  # parallel, no arithmetic
    ]


def matmul_cost(name: str, operands: list[str]) -> OpCost:
    """`name` on the named operands of a 4x8 by 8x2 product (and a bias of 2) -> 4x2."""
    types = {"a": "tensor<4x8xf32>", "b": "tensor<8x2xf32>", "bias": "tensor<2xf32>"}
    args = ", ".join(f"%{key}: {value}" for key, value in types.items())
    used = ", ".join(f"%{key}" for key in operands)
    signature = ", ".join(types[key] for key in operands)
    body = f'%0 = "{name}"({used}) : ({signature}) -> tensor<4x2xf32>'
    return cost(args, body, name)


# 4x2 outputs, K = 8: 2 * 8 * 8 FLOPs; bytes of the distinct tensors read and written
PRODUCT = 2 * (4 * 2) * 8
OUT = 4 * 2
A_B_OUT = (4 * 8 + 8 * 2 + 4 * 2) * F32


@pytest.mark.parametrize("name", ["x.addmm", "x.baddbmm", "x.addbmm"])
def test_addmm_takes_its_matrices_after_the_bias(name: str) -> None:
    # the bias comes first: the product is of the 2nd and 3rd tensors, plus one add an output
    assert matmul_cost(name, ["bias", "a", "b"]) == OpCost(
        PRODUCT + OUT, A_B_OUT + 2 * F32, "matmul"
    )
    # only the bias: no matrix to count by (bytes still known)
    assert matmul_cost(name, ["bias"]) == OpCost(None, (2 + 8) * F32, "matmul")


def test_a_matmul_with_a_bias_and_without_its_dimensions() -> None:
    assert matmul_cost("x.matmul", ["a", "b"]) == OpCost(PRODUCT, A_B_OUT, "matmul")
    # a third tensor (TF's fused bias): one add an output
    assert matmul_cost("x.matmul", ["a", "b", "bias"]) == OpCost(
        PRODUCT + OUT, A_B_OUT + 2 * F32, "matmul"
    )
    # a dot_general without its dimension numbers: K unknown, the bytes known
    assert matmul_cost("x.dot_general", ["a", "b"]) == OpCost(None, A_B_OUT, "matmul")


@pytest.mark.parametrize(
    ("name", "category"),
    [("x.softmax", "softmax"), ("x.log_softmax", "softmax"), ("x.layer_norm", "norm"),
     ("x.batch_norm", "norm")],
)  # fmt: skip
def test_per_element_ops_by_category(name: str, category: str) -> None:
    per = {"x.softmax": 5, "x.log_softmax": 5, "x.layer_norm": 8, "x.batch_norm": 4}[name]
    op = cost("%a: tensor<4x8xf32>", f'%0 = "{name}"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>',
              name)  # fmt: skip
    assert op == OpCost(per * 32, 2 * 32 * F32, category)
    # no tensor operand: counted on the result
    scalar = cost("%s: f32", f'%0 = "{name}"(%s) : (f32) -> tensor<4x8xf32>', name)
    assert scalar == OpCost(per * 32, 32 * F32, category)


def test_per_element_ops_count_their_first_operand() -> None:
    # a loss reads logits and labels (4x8 each) and writes one value a row: counted on the
    # logits, 6 a logit; unknown logits leave the FLOPs unknown
    name = "x.softmaxcrossentropywithlogits"
    loss = cost(
        "%a: tensor<4x8xf32>, %b: tensor<4x8xf32>",
        f'%0 = "{name}"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4xf32>',
        name,
    )
    assert loss == OpCost(6 * 32, (32 + 32 + 4) * F32, "softmax")
    unknown = cost(
        "%a: tensor<?x8xf32>", f'%0 = "{name}"(%a) : (tensor<?x8xf32>) -> tensor<4xf32>', name
    )
    assert unknown == OpCost(None, None, "softmax")

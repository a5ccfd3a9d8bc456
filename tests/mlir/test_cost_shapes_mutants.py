"""What the cost model reads from types and attributes, function by function: static shapes
of builtin and torch tensors (with their unknown and negative dims), element sizes, bytes of
distinct values, integer lists and flags from attributes, StableHLO dimension numbers, torch
constant lists and linalg iteration domains.

Written from the mutants of `mlir/cost_shapes.py`, which was reached only through the cost
model's op costs (its torch paths through framework tests, which the mutation runs leave
out). Every expected value is read off the type or attribute text each case gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from iree.compiler import ir

from irprof.mlir.cost_shapes import (
    attr_text,
    bool_attr,
    dims_in,
    element_bytes,
    elements,
    int_list,
    is_index_tensor,
    is_tensor,
    linalg_domain,
    shape_of,
    sum_bytes,
    torch_int_list,
    value_bytes,
)
from irprof.mlir.op_index import walk_ops


@pytest.fixture(scope="module")
def context() -> Iterator[ir.Context]:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        yield ctx


PARSED: list[ir.Module] = []  # parsed modules outlive the test: ops keep pointers into them


def parse(text: str) -> ir.Module:
    module = ir.Module.parse(text)
    PARSED.append(module)
    return module


def function(args: str, body: str) -> tuple[list[ir.Value], list[ir.Operation]]:
    """The arguments of `func.func @f(args) { body; return }` and its ops in order (without
    the func and the return)."""
    module = parse(f"func.func @f({args}) {{\n{body}\n  return\n}}")
    ops = [op for op in walk_ops(module) if op.name not in ("func.func", "func.return")]
    func = next(op for op in walk_ops(module) if op.name == "func.func")
    return list(func.regions[0].blocks[0].arguments), ops


SHAPES = [
    ("tensor<2x3xf32>", (2, 3)),
    ("tensor<f32>", ()),
    ("tensor<0x3xf32>", (0, 3)),
    ("tensor<?x3xf32>", None),
    ("tensor<*xf32>", None),
    ("memref<4xi1>", (4,)),
    ("vector<4xf16>", (4,)),
    ("i32", None),
    ("!torch.vtensor<[2,12,24],f32>", (2, 12, 24)),
    ("!torch.tensor<[5],f32>", (5,)),
    ("!torch.vtensor<[],si64>", ()),
    ("!torch.vtensor<[0,3],f32>", (0, 3)),
    ("!torch.vtensor<[2,?],f32>", None),
    ("!torch.vtensor<[2,-1],f32>", None),
    ("!torch.int", None),
    ("!torch.list<int>", None),
]


@pytest.mark.parametrize(("text", "expected"), SHAPES)
def test_static_shapes(context: ir.Context, text: str, expected: tuple[int, ...] | None) -> None:
    assert shape_of(ir.Type.parse(text)) == expected


TENSORS = [
    # (type, is a tensor, of integers or indices, bytes per element)
    ("tensor<2xf32>", True, False, 4),
    ("tensor<*xf64>", True, False, 8),
    ("tensor<2xf16>", True, False, 2),
    ("tensor<2xbf16>", True, False, 2),
    ("tensor<2xi1>", True, True, 1),
    ("tensor<2xi4>", True, True, 1),
    ("tensor<2xi8>", True, True, 1),
    ("tensor<2xi9>", True, True, 2),
    ("tensor<2xi64>", True, True, 8),
    ("tensor<2xindex>", True, True, 8),
    ("memref<2xi32>", True, True, 4),
    ("tensor<2xcomplex<f32>>", True, False, 8),
    ("tensor<2xcomplex<f64>>", True, False, 16),
    ("tensor<2x!foo.handle>", True, False, None),
    ("!torch.vtensor<[2],f32>", True, False, 4),
    ("!torch.tensor<[2],f64>", True, False, 8),
    ("!torch.vtensor<[2],bf16>", True, False, 2),
    ("!torch.vtensor<[2],si64>", True, True, 8),
    ("!torch.vtensor<[2],si32>", True, True, 4),
    ("!torch.vtensor<[2],ui8>", True, True, 1),
    ("!torch.vtensor<[2],i1>", True, True, 1),
    ("i32", False, False, None),
    ("f32", False, False, None),
    ("index", False, False, None),
    ("!torch.int", False, False, None),
    ("!torch.list<int>", False, False, None),
]


@pytest.mark.parametrize(("text", "tensor", "indices", "size"), TENSORS)
def test_tensor_kinds_and_element_sizes(
    context: ir.Context, text: str, tensor: bool, indices: bool, size: int | None
) -> None:
    value_type = ir.Type.parse(text)
    assert is_tensor(value_type) is tensor
    assert is_index_tensor(value_type) is indices
    found = element_bytes(value_type)
    assert found == size and type(found) is type(size)  # an int, not 4.0


def test_elements_of_a_shape() -> None:
    assert elements(()) == 1  # a scalar
    assert elements((2, 3, 4)) == 24
    assert elements((0, 3)) == 0
    assert elements([7]) == 7


def test_bytes_of_values_and_of_distinct_values(context: ir.Context) -> None:
    args, _ = function(
        "%a: tensor<2x3xf32>, %b: tensor<?xf32>, %c: i32, %d: !torch.vtensor<[4],f16>, "
        "%e: tensor<2x!foo.handle>, %f: !torch.vtensor<[?],f16>",
        "",
    )
    a, b, c, d, e, f = args
    assert [value_bytes(v) for v in args] == [2 * 3 * 4, None, 0, 4 * 2, 0, None]
    assert sum_bytes([a, a, d]) == 24 + 8  # `a` read once
    assert sum_bytes([c, a, e]) == 24
    assert sum_bytes([a, b, d]) is None
    assert sum_bytes([f]) is None
    assert sum_bytes([]) == 0


ATTRS = (
    '"x.op"() {w = array<i64: 1, 2>, v = array<i32: 3>, u = [1, 2, 2, 1], '
    'd = dense<[5, 6]> : tensor<2xi64>, s = "str", t = true, f = false, n = 1 : i64, '
    'e = [], m = [1, "x"], dn = #stablehlo.dot<lhs_batching_dimensions = [0], '
    "lhs_contracting_dimensions = [2, 1], rhs_contracting_dimensions = []>} : () -> ()"
)


def test_integer_lists_from_every_attribute_form(context: ir.Context) -> None:
    _, ops = function("", ATTRS)
    op = ops[0]
    assert int_list(op, "w") == (1, 2)
    assert int_list(op, "v") == (3,)
    assert int_list(op, "u") == (1, 2, 2, 1)
    assert int_list(op, "d") == (5, 6)
    assert int_list(op, "e") == ()
    assert int_list(op, "missing") is None
    assert int_list(op, "s") is None
    assert int_list(op, "n") is None
    assert int_list(op, "m") is None


def test_flags_and_printed_attributes(context: ir.Context) -> None:
    _, ops = function("", ATTRS)
    op = ops[0]
    assert bool_attr(op, "t") is True
    assert bool_attr(op, "f") is False
    assert bool_attr(op, "missing") is False
    assert bool_attr(op, "n") is False  # an i64 1 is not a bool
    assert bool_attr(op, "s") is False
    assert attr_text(op, "s") == '"str"'
    assert attr_text(op, "n") == "1 : i64"
    assert attr_text(op, "missing") == ""


def test_dimension_numbers_from_printed_text(context: ir.Context) -> None:
    _, ops = function("", ATTRS)
    text = attr_text(ops[0], "dn")
    assert dims_in(text, "lhs_batching_dimensions") == (0,)
    assert dims_in(text, "lhs_contracting_dimensions") == (2, 1)
    assert dims_in("rhs_contracting_dimensions = []", "rhs_contracting_dimensions") == ()
    assert dims_in(text, "rhs_batching_dimensions") is None
    assert dims_in(text, "contracting_dimensions") is None  # a whole word only
    assert dims_in("a = [3,4 , 5]", "a") == (3, 4, 5)


TORCH_LISTS = """
  %0 = "torch.constant.int"() {value = 3 : i64} : () -> !torch.int
  %1 = "torch.constant.int"() {value = -4 : i64} : () -> !torch.int
  %2 = "torch.prim.ListConstruct"(%0, %1) : (!torch.int, !torch.int) -> !torch.list<int>
  %3 = "torch.prim.ListConstruct"(%0, %arg0) : (!torch.int, !torch.int) -> !torch.list<int>
  %4 = "x.other"() {value = 7 : i64} : () -> !torch.int
  %5 = "torch.prim.ListConstruct"(%0, %4) : (!torch.int, !torch.int) -> !torch.list<int>
  %6 = "x.list"(%0) : (!torch.int) -> !torch.list<int>
  %7 = "torch.prim.ListConstruct"() : () -> !torch.list<int>
"""


def test_constant_lists_of_torch_ints(context: ir.Context) -> None:
    args, ops = function("%arg0: !torch.int", TORCH_LISTS)
    results = [op.results[0] for op in ops]
    assert torch_int_list(results[2]) == (3, -4)
    assert torch_int_list(results[7]) == ()
    assert torch_int_list(results[3]) is None  # an operand is a block argument
    assert torch_int_list(results[5]) is None  # an operand is not a torch.constant.int (even
    # with a `value`)
    assert torch_int_list(results[6]) is None  # not a ListConstruct
    assert torch_int_list(results[0]) is None
    assert torch_int_list(args[0]) is None  # no producing op


LINALG = """
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = linalg.matmul ins(%x, %b : tensor<?x8xf32>, tensor<8x16xf32>)
                     outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = linalg.matmul ins(%x, %b : tensor<?x8xf32>, tensor<8x16xf32>)
                     outs(%y : tensor<?x16xf32>) -> tensor<?x16xf32>
  %t = linalg.transpose ins(%c : tensor<4x16xf32>) outs(%z : tensor<16x4xf32>)
                        permutation = [1, 0]
  %other = "x.op"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
"""


def test_linalg_iteration_domains(context: ir.Context) -> None:
    _, ops = function(
        "%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>, %x: tensor<?x8xf32>, "
        "%y: tensor<?x16xf32>, %z: tensor<16x4xf32>",
        LINALG,
    )
    top = [op for op in ops if op.name in ("linalg.matmul", "linalg.transpose", "x.op")]
    by_result = [linalg_domain(op) for op in top]
    # M x N x K = 4 x 16 x 8; M comes from the output when the lhs has it dynamic; unknown
    # when no operand gives it; a transpose iterates over its 4 x 16 points; other ops: None
    assert by_result == [4 * 16 * 8, 4 * 16 * 8, None, 4 * 16, None]


BROADCAST = """
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%a : tensor<1x8xf32>) outs(%c : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
"""


def test_a_linalg_domain_with_a_constant_index(context: ir.Context) -> None:
    # the input is read at row 0 of a 1 x 8 tensor for every one of the 4 x 8 points: the
    # constant result bounds no loop, d0 comes from the output
    _, ops = function("%a: tensor<1x8xf32>, %c: tensor<4x8xf32>", BROADCAST)
    generic = next(op for op in ops if op.name == "linalg.generic")
    assert linalg_domain(generic) == 4 * 8


@pytest.mark.parametrize(("dtype", "size"), [("complex<f32>", 8), ("complex<f64>", 16)])
def test_a_torch_complex_element_size_is_an_integer(
    context: ir.Context, dtype: str, size: int
) -> None:
    # two floats of 32 or 64 bits; a byte count, never a float
    value = element_bytes(ir.Type.parse(f"!torch.vtensor<[2],{dtype}>"))
    assert value == size
    assert type(value) is int

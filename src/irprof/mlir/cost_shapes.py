"""What the cost model reads from an op's types and attributes: static shapes, element sizes,
tensor bytes, small integer lists (window sizes, contracted dims) and linalg iteration domains.

Everything comes from the bindings' typed API where it exists (`ShapedType`, `AffineMap`,
`linalg.get_indexing_maps`); the torch dialect's value tensors and StableHLO's dimension-number
attributes have no Python classes in these bindings, so their printed forms are read instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from iree.compiler import ir
from iree.compiler.dialects import linalg

Shape = tuple[int, ...]

# `!torch.vtensor<[2,12,24],f32>`: dims and dtype of a torch value tensor.
_TORCH_TENSOR = re.compile(r"!torch\.v?tensor<\[([^\]]*)\],(.+)>")
# Element types as the torch dialect prints them: i1, si64, ui8, bf16, f32, the 8-bit floats
# (f8E4M3FN, f8E5M2, ...: the width, then the format) and complex<f32>, two parts of a float.
_TORCH_BITS = re.compile(r"(?:bf|f|si|ui|i)(\d+)(?:E\d+M\d+[A-Z]*)?")
_TORCH_COMPLEX = re.compile(r"complex<(?:bf|f)(\d+)>")


def shape_of(value_type: ir.Type) -> Shape | None:
    """Static dims of a ranked tensor/memref/vector or torch value tensor; None when the type
    is unranked, has a dynamic dim, or is not a shaped type."""
    try:
        shaped = ir.ShapedType(value_type)
    except ValueError:
        return _torch_shape(str(value_type))
    if not shaped.has_rank or not shaped.has_static_shape:
        return None
    return tuple(int(d) for d in shaped.shape)


def _torch_shape(text: str) -> Shape | None:
    match = _TORCH_TENSOR.fullmatch(text)
    if match is None:
        return None
    dims = match.group(1)
    if not dims:
        return ()
    try:
        values = tuple(int(d) for d in dims.split(","))
    except ValueError:
        return None  # `?` dims
    return values if all(d >= 0 for d in values) else None


def is_tensor(value_type: ir.Type) -> bool:
    """A shaped or torch tensor type (ranked or not): something that holds data in memory."""
    try:
        ir.ShapedType(value_type)
        return True
    except ValueError:
        return str(value_type).startswith(("!torch.vtensor<", "!torch.tensor<"))


def is_index_tensor(value_type: ir.Type) -> bool:
    """A tensor of integers or indices: the indices of a gather or scatter."""
    try:
        element = ir.ShapedType(value_type).element_type
    except ValueError:
        match = _TORCH_TENSOR.fullmatch(str(value_type))
        return match is not None and match.group(2).startswith(("si", "ui", "i"))
    return isinstance(element, ir.IntegerType | ir.IndexType)


def element_bytes(value_type: ir.Type) -> int | None:
    """Bytes per element of a tensor type (an i1 takes a byte); None when the element type is
    not a number (a resource handle, a string, a token) or the type is not a tensor."""
    try:
        element = ir.ShapedType(value_type).element_type
    except ValueError:
        match = _TORCH_TENSOR.fullmatch(str(value_type))
        if match is None:
            return None
        dtype = match.group(2)
        if bits_match := _TORCH_BITS.fullmatch(dtype):
            return max(1, int(bits_match.group(1)) // 8)
        if complex_match := _TORCH_COMPLEX.fullmatch(dtype):
            return 2 * int(complex_match.group(1)) // 8
        return None
    return _scalar_bytes(element)


def _scalar_bytes(element: ir.Type) -> int | None:
    if isinstance(element, ir.IndexType):
        return 8
    for cast in (ir.IntegerType, ir.FloatType):
        try:
            return max(1, (int(cast(element).width) + 7) // 8)
        except ValueError:
            continue
    if isinstance(element, ir.ComplexType):
        inner = _scalar_bytes(ir.ComplexType(element).element_type)
        return None if inner is None else 2 * inner
    return None


def elements(shape: Sequence[int]) -> int:
    """Number of elements of a static shape (1 for a scalar)."""
    return math.prod(shape) if shape else 1


def value_bytes(value: ir.Value) -> int | None:
    """Bytes a value holds in memory: 0 for a scalar or a handle (no tensor data), None for a
    tensor of numbers whose shape is not static."""
    value_type = value.type
    if not is_tensor(value_type):
        return 0
    size = element_bytes(value_type)
    if size is None:
        return 0  # resource handles, strings: no data of their own to move
    shape = shape_of(value_type)
    return None if shape is None else elements(shape) * size


def sum_bytes(values: Sequence[ir.Value]) -> int | None:
    """Bytes of distinct `values` (a value used twice is read once); None when one is unknown."""
    total = 0
    seen: set[ir.Value] = set()
    for value in values:
        if value in seen:
            continue
        seen.add(value)
        size = value_bytes(value)
        if size is None:
            return None
        total += size
    return total


def int_list(op: ir.Operation, name: str) -> tuple[int, ...] | None:
    """An integer-array attribute (`array<i64: ...>`, `[1, 2, 2, 1]`, dense ints) as a tuple."""
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    for cast in (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr):
        try:
            return tuple(int(v) for v in cast(attr))
        except ValueError:
            continue
    try:
        return tuple(int(ir.IntegerAttr(item).value) for item in ir.ArrayAttr(attr))
    except ValueError:
        pass
    try:
        return tuple(int(v) for v in ir.DenseIntElementsAttr(attr))
    except ValueError:
        return None


def bool_attr(op: ir.Operation, name: str) -> bool:
    """A boolean attribute (`transpose_a = true`); False when absent or not a bool."""
    if name not in op.attributes:
        return False
    try:
        return bool(ir.BoolAttr(op.attributes[name]).value)
    except ValueError:
        return False


def attr_text(op: ir.Operation, name: str) -> str:
    """The printed form of an attribute ("" when absent)."""
    return str(op.attributes[name]) if name in op.attributes else ""


def dims_in(text: str, field: str) -> tuple[int, ...] | None:
    """`[1, 2]` after `field = ` in a printed attribute (StableHLO dimension numbers)."""
    match = re.search(rf"\b{field} = \[([0-9, ]*)\]", text)
    if match is None:
        return None
    return tuple(int(d) for d in match.group(1).replace(" ", "").split(",") if d)


def torch_int_list(value: ir.Value) -> tuple[int, ...] | None:
    """The constant ints of a `torch.prim.ListConstruct` of `torch.constant.int`s (a kernel
    size, a stride), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation):
        return None
    if owner.operation.name != "torch.prim.ListConstruct":
        return None
    found: list[int] = []
    for item in owner.operation.operands:
        producer = item.owner
        if not isinstance(producer, ir.OpView | ir.Operation):
            return None
        operation = producer.operation
        if operation.name != "torch.constant.int" or "value" not in operation.attributes:
            return None
        found.append(int(ir.IntegerAttr(operation.attributes["value"]).value))
    return tuple(found)


def linalg_domain(op: ir.Operation) -> int | None:
    """Iteration points of a linalg structured op, from its indexing maps and operand shapes;
    None for other ops or when a loop's bound is not static."""
    try:
        maps = linalg.get_indexing_maps(op)
    except (TypeError, ValueError):
        return None
    if not maps:
        return None
    affine_maps = [ir.AffineMapAttr(item).value for item in maps]
    bounds: dict[int, int] = {}
    for affine_map, operand in zip(affine_maps, op.operands, strict=False):
        shape = shape_of(operand.type)
        if shape is None:
            continue
        for axis, expr in enumerate(affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and axis < len(shape):
                bounds.setdefault(expr.position, shape[axis])
    loops = affine_maps[0].n_dims
    if any(d not in bounds for d in range(loops)):
        return None
    return math.prod(bounds[d] for d in range(loops))

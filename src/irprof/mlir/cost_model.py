"""The cost of an op from its IR types: FLOPs and bytes moved, one model for every use.

Design notes: docs/mlir.md, "Module notes", `mlir/cost_model.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from iree.compiler import ir

from irprof.mlir.cost_kinds import (
    BODY_NON_COMPUTE,
    CALL_KINDS,
    CONV_KINDS,
    COPY_KINDS,
    DIALECT_FREE,
    FILL_KINDS,
    FREE_KINDS,
    GATHER_KINDS,
    MATMUL_KINDS,
    PAYLOAD_PARENTS,
    PER_ELEMENT,
    POOL_KINDS,
    REDUCTION_KINDS,
    SCATTER_KINDS,
    SLICE_KINDS,
    op_kind,
)
from irprof.mlir.cost_shapes import (
    Shape,
    attr_text,
    bool_attr,
    dims_in,
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


@dataclass(frozen=True)
class OpCost:
    """FLOPs and bytes moved by one execution of an op; None where a shape is unknown."""

    flops: int | None
    bytes: int | None
    category: str  # matmul conv pool elementwise reduction softmax/norm gather copy free body

    @property
    def known(self) -> bool:
        """Both numbers are known."""
        return self.flops is not None and self.bytes is not None

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity (FLOPs per byte); None when unknown or no bytes move."""
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes


FREE = OpCost(0, 0, "free")
BODY = OpCost(0, 0, "body")
UNKNOWN_CALL = OpCost(None, None, "call")


def _results(op: ir.Operation) -> list[ir.Value]:
    return list(op.results)


def _out_shape(op: ir.Operation) -> Shape | None:
    """The first result's static shape; `()` for a scalar result, None when unknown."""
    results = _results(op)
    if not results:
        return None
    result_type = results[0].type
    return shape_of(result_type) if is_tensor(result_type) else ()


def _tensor_shapes(op: ir.Operation) -> list[Shape | None]:
    """Shapes of the operands that are tensors (scalars and lists left out)."""
    return [shape_of(value.type) for value in op.operands if is_tensor(value.type)]


def matmul_flops(out_elements: int, contracted: int) -> int:
    """A matrix product's FLOPs: a multiply and an add per output element and contracted one
    (2*M*N*K). Shared with XLA's `dot` instructions (`frameworks/jax/hlo.instruction_flops`)."""
    return 2 * out_elements * contracted


def conv_flops(points: int, per_point: int) -> int:
    """A convolution's FLOPs: a multiply and an add per output point and filter element feeding
    it. Shared with XLA's `convolution` instructions."""
    return 2 * points * per_point


def _io_bytes(op: ir.Operation) -> int | None:
    return sum_bytes([*op.operands, *op.results])


def _with_flops(op: ir.Operation, flops: int | None, category: str) -> OpCost:
    return OpCost(flops, _io_bytes(op), category)


def _elementwise(op: ir.Operation) -> OpCost:
    out = _out_shape(op)
    return _with_flops(op, None if out is None else elements(out), "elementwise")


def _copy(op: ir.Operation) -> OpCost:
    return OpCost(0, _io_bytes(op), "copy")


def _fill(op: ir.Operation) -> OpCost:
    return OpCost(0, sum_bytes(_results(op)), "copy")


def _selected(op: ir.Operation, category: str) -> OpCost:
    """A gather or slice: what it selects, read and written, plus integer index tensors."""
    written = sum_bytes(_results(op))
    indices = [v for v in list(op.operands)[1:] if is_index_tensor(v.type)]
    index_bytes = sum_bytes(indices)
    if written is None or index_bytes is None:
        return OpCost(0, None, category)
    return OpCost(0, 2 * written + index_bytes, category)


def _gather(op: ir.Operation) -> OpCost:
    return _selected(op, "gather")


def _slice(op: ir.Operation) -> OpCost:
    return _selected(op, "copy")


def _scatter(op: ir.Operation) -> OpCost:
    operands = list(op.operands)
    updates = operands[-1] if operands else None
    size = value_bytes(updates) if updates is not None else None
    shape = shape_of(updates.type) if updates is not None else None
    if size is None or shape is None:
        return OpCost(None, None, "gather")
    index_bytes = sum_bytes(operands[1:-1]) or 0
    return OpCost(elements(shape), 2 * size + index_bytes, "gather")


def _per_element(op: ir.Operation) -> OpCost:
    shapes = _tensor_shapes(op)
    first = shapes[0] if shapes else _out_shape(op)
    kind = op_kind(op.name)
    category = "softmax" if "softmax" in kind else "norm"
    flops = None if first is None else PER_ELEMENT[kind] * elements(first)
    return _with_flops(op, flops, category)


def _body_compute_ops(op: ir.Operation) -> int:
    count = 0
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                name = inner.operation.name
                dialect = name.split(".", 1)[0]
                if name in BODY_NON_COMPUTE or name.endswith(("yield", "return")):
                    continue
                if dialect in ("arith", "math", "complex", "stablehlo", "chlo", "tosa"):
                    count += 1
    return count


def _reduction(op: ir.Operation) -> OpCost:
    shapes = _tensor_shapes(op)
    first = shapes[0] if shapes else None
    per_element = max(1, _body_compute_ops(op) // max(1, len(_results(op))))
    flops = None if first is None else elements(first) * per_element
    return _with_flops(op, flops, "reduction")


def _window(op: ir.Operation) -> tuple[int, ...] | None:
    for name in ("ksize", "kernel", "window_dimensions"):
        window = int_list(op, name)
        if window:
            return window
    operands = list(op.operands)
    # torch's pools take their kernel size second; an adaptive pool takes its output size there
    # (its windows then cover the input about once: counted on the input, below).
    adaptive = "adaptive" in op_kind(op.name)
    if op.name.startswith("torch.") and len(operands) > 1 and not adaptive:
        return torch_int_list(operands[1])
    return None


def _pool(op: ir.Operation) -> OpCost:
    out, shapes, window = _out_shape(op), _tensor_shapes(op), _window(op)
    if out is not None and window:
        return _with_flops(op, elements(out) * elements(window), "pool")
    first = shapes[0] if shapes else None
    return _with_flops(op, None if first is None else elements(first), "pool")


def _contracted(op: ir.Operation, kind: str, lhs: Shape) -> int | None:
    """K of a matrix product from its first matrix operand and the op's attributes."""
    if kind == "dot_general":
        dims = dims_in(attr_text(op, "dot_dimension_numbers"), "lhs_contracting_dimensions")
        if dims is None:
            return None
        return elements([lhs[d] for d in dims if d < len(lhs)])
    if not lhs:
        return None
    transposed = bool_attr(op, "transpose_a") or bool_attr(op, "adj_x")
    return lhs[-2] if transposed and len(lhs) >= 2 else lhs[-1]


def _matmul(op: ir.Operation) -> OpCost:
    kind = op_kind(op.name)
    out, shapes = _out_shape(op), _tensor_shapes(op)
    # addmm(bias, a, b): the first matrix is the second tensor operand.
    first_index = 1 if kind in ("addmm", "baddbmm", "addbmm") else 0
    if out is None or len(shapes) <= first_index or shapes[first_index] is None:
        return OpCost(None, _io_bytes(op), "matmul")
    lhs = shapes[first_index]
    assert lhs is not None
    contracted = _contracted(op, kind, lhs)
    if contracted is None:
        return OpCost(None, _io_bytes(op), "matmul")
    # Tensors past the two matrices are a bias (and TF's fused activation inputs); TOSA's are
    # zero points, except a fully connected layer's bias.
    extra = max(0, len(shapes) - 2 - first_index) + (1 if first_index else 0)
    if op.name.startswith("tosa."):
        extra = 1 if kind == "fully_connected" and len(shapes) > 2 else 0
    flops = matmul_flops(elements(out), contracted) + extra * elements(out)
    return _with_flops(op, flops, "matmul")


def _stablehlo_kernel_out(op: ir.Operation, kernel: Shape) -> int | None:
    text = attr_text(op, "dimension_numbers")
    if "x[" not in text:
        return None
    layout = text.split("x[", 1)[1].split("]", 1)[0].replace(" ", "").split(",")
    return kernel[layout.index("o")] if "o" in layout and len(layout) == len(kernel) else None


def _conv_macs(op: ir.Operation, kind: str, shapes: list[Shape | None]) -> tuple[int, int] | None:
    """(output points, multiply-adds per point) of a convolution."""
    out = _out_shape(op)
    if len(shapes) < 2:
        return None
    dialect = op.name.split(".", 1)[0]
    first, second = shapes[0], shapes[1]
    if kind == "conv2dbackpropinput" and len(shapes) > 2 and second and shapes[2]:
        return elements(shapes[2]), elements(second[:-1])
    if kind == "conv2dbackpropfilter" and len(shapes) > 2 and out and shapes[2]:
        return elements(shapes[2]), elements(out[:-1])
    if kind == "transpose_conv2d" and first and second:
        return elements(first), elements(second[:-1])
    if out is None or second is None:
        return None
    if "depthwise" in kind:
        return elements(out), elements(second[:2])
    if dialect == "tf":  # filter [kh, kw, in, out]
        return elements(out), elements(second[:-1])
    if dialect == "stablehlo":
        kernel_out = _stablehlo_kernel_out(op, second)
        return None if not kernel_out else (elements(out), elements(second) // kernel_out)
    return elements(out), elements(second[1:])  # torch [out, in/g, k...], tosa [out, k..., in]


def _conv(op: ir.Operation) -> OpCost:
    kind = op_kind(op.name)
    shapes = _tensor_shapes(op)
    macs = _conv_macs(op, kind, shapes)
    if macs is None:
        return OpCost(None, _io_bytes(op), "conv")
    points, per_point = macs
    # TF's fused convolutions take their bias/activation inputs as extra tensors.
    extra = max(0, len(shapes) - 2) if kind.startswith("_fused") else 0
    return _with_flops(op, conv_flops(points, per_point) + extra * points, "conv")


def _linalg_category(op: ir.Operation, body_ops: int) -> str:
    kind = op_kind(op.name)
    for marks, category in (
        (("matmul", "matvec", "vecmat", "contract", "dot"), "matmul"),
        (("conv",), "conv"),
        (("pooling",), "pool"),
        (("fill", "copy", "transpose", "broadcast"), "copy"),
        (("reduce",), "reduction"),
    ):
        if any(mark in kind for mark in marks):
            return category
    if body_ops == 0:
        return "copy"
    iterators = attr_text(op, "iterator_types")
    return "reduction" if "reduction" in iterators else "elementwise"


def _linalg(op: ir.Operation, domain: int) -> OpCost:
    """A linalg structured op: iteration points * body arithmetic; ins read, outs written."""
    body_ops = _body_compute_ops(op)
    operands = list(op.operands)
    segments = int_list(op, "operandSegmentSizes")
    inputs = segments[0] if segments else max(0, len(operands) - len(_results(op)))
    outs = operands[inputs:]
    block = op.regions[0].blocks[0] if op.regions and len(op.regions[0].blocks) else None
    arguments = list(block.arguments) if block is not None else []
    read_outs = [
        value
        for position, value in enumerate(outs)
        if inputs + position < len(arguments) and len(list(arguments[inputs + position].uses))
    ]
    written = _results(op) or outs
    moved = sum_bytes([*operands[:inputs], *read_outs, *written])
    return OpCost(domain * body_ops, moved, _linalg_category(op, body_ops))


Rule = Callable[[ir.Operation], OpCost]
RULES: dict[str, Rule] = {
    **dict.fromkeys(MATMUL_KINDS, _matmul),
    **dict.fromkeys(CONV_KINDS, _conv),
    **dict.fromkeys(POOL_KINDS, _pool),
    **dict.fromkeys(REDUCTION_KINDS, _reduction),
    **dict.fromkeys(PER_ELEMENT, _per_element),
    **dict.fromkeys(GATHER_KINDS, _gather),
    **dict.fromkeys(SCATTER_KINDS, _scatter),
    **dict.fromkeys(SLICE_KINDS, _slice),
    **dict.fromkeys(COPY_KINDS, _copy),
    **dict.fromkeys(FILL_KINDS, _fill),
    **dict.fromkeys(FREE_KINDS, lambda op: FREE),
}


def is_payload(op: ir.Operation) -> bool:
    """An op in the region of a structured op (a linalg body, a reduce's combiner)."""
    parent = op.parent
    if parent is None:
        return False
    name = parent.name
    return name in PAYLOAD_PARENTS or name.startswith("linalg.")


def op_cost(op: ir.Operation | ir.OpView) -> OpCost:
    """FLOPs and bytes of one execution of `op` (see the module docstring for the rules)."""
    operation = op.operation
    name = operation.name
    if is_payload(operation):
        return BODY
    dialect, kind = name.split(".", 1)[0], op_kind(name)
    if kind in CALL_KINDS:
        return UNKNOWN_CALL
    if dialect == "linalg":
        domain = linalg_domain(operation)
        if domain is not None:
            return _linalg(operation, domain)
    if f"{dialect}:{kind}" in DIALECT_FREE:
        return FREE
    rule = RULES.get(kind)
    if rule is not None:
        return rule(operation)
    if not _results(operation):
        return FREE  # no value produced: a terminator, a side effect without data
    return _elementwise(operation)


def estimate_flops(op: ir.Operation | ir.OpView) -> int | None:
    """FLOPs of one execution of `op`, or None when a needed shape is unknown."""
    return op_cost(op).flops


def share_weights(ops: Sequence[ir.Operation | ir.OpView]) -> tuple[list[float], str]:
    """Weights to split one event over `ops` and their basis: `flops` when every op's FLOPs are
    known and some are not zero, else `bytes` (pure data movement) on the same terms, else
    `even`."""
    costs = [op_cost(op) for op in ops]
    for basis in ("flops", "bytes"):
        values = [getattr(cost, basis) for cost in costs]
        if all(v is not None for v in values) and sum(v or 0 for v in values) > 0:
            return [float(v or 0) for v in values], basis
    return [1.0] * len(ops), "even"


# Which category names a row of several ops: the most telling work first.
CATEGORY_ORDER = (
    "matmul", "conv", "pool", "softmax", "norm", "reduction", "elementwise", "gather", "copy",
    "call", "free", "body",
)  # fmt: skip


def dominant_category(categories: Iterable[str]) -> str:
    """The category that names ops of several categories (`matmul` over `copy`)."""
    present = set(categories)
    return next((c for c in CATEGORY_ORDER if c in present), "free")

"""Estimated work of one ONNX node, from its imported op's static shapes: the share basis of a
kernel ORT fused from several source nodes.

Output bytes alone split ORT's `MatMul + Add` kernel (a `FusedMatMul`, or a `Gemm` with its
bias) in half, since both members write the same tensor: on a DistilBERT the Adds then held 30%
of the run. By FLOPs the `MatMul` has `2K` operations per output element and the `Add` one.

- MatMul, Gemm: `2 * out * K` (K the contracted dim of the first input, `transA` read; of the
  second when the first's is dynamic, `transB` read).
- Conv: `2 * out * Cin/group * prod(kernel)` (the weight's dims after the first);
  ConvTranspose: `2 * input * Cout/group * prod(kernel)`.
- Reductions, normalisations, softmax, pooling: the first input's elements (one pass over it;
  the output's for a shape-preserving one whose input has a dynamic dim).
- Data movement and shape ops (Reshape, Transpose, Gather, Concat, Slice, ...): 0.
- Anything else (elementwise arithmetic, activations, casts): the output's elements.

The output's size comes from the IR's type, or from the bytes the node wrote at the profiled
shapes when a dim is symbolic; None when a size it needs is unknown (a dynamic contracted dim):
the group then falls back to output bytes.
"""

from __future__ import annotations

import math
import re

from iree.compiler import ir

from irprof.mlir.cost_shapes import element_bytes

ATTRIBUTE_PREFIX = "torch.onnx."
# `!torch.vtensor<[?,256],f32>`: the dims, `?` when dynamic.
_TORCH_DIMS = re.compile(r"!torch\.v?tensor<\[([^\]]*)\],.+>")
CONTRACTIONS = frozenset({"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"})
ONE_PASS = frozenset(
    {
        "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
        "Softmax", "LogSoftmax", "LayerNormalization", "BatchNormalization",
        "InstanceNormalization", "GroupNormalization", "LpNormalization",
        "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "TopK",
        "CumSum",
    }
)  # fmt: skip
# One-pass ops whose output has their input's shape: the output's size stands in for the input's.
SHAPE_PRESERVING = frozenset(
    {
        "Softmax", "LogSoftmax", "LayerNormalization", "BatchNormalization",
        "InstanceNormalization", "GroupNormalization", "LpNormalization", "CumSum",
    }
)  # fmt: skip
MOVEMENT = frozenset(
    {
        "Reshape", "Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Slice",
        "Split", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "Identity",
        "Shape", "Size", "Constant", "ConstantOfShape", "DepthToSpace", "SpaceToDepth",
        "ScatterND", "ScatterElements", "Range", "NonZero", "Dropout",
    }
)  # fmt: skip


def node_work(op: ir.Operation, op_type: str, output_bytes: int | None = None) -> float | None:
    """Estimated operations of one imported ONNX node (see the module docstring);
    `output_bytes`: what the node writes at the profiled input shapes (the graphs' record),
    which fixes the output's size when the IR leaves a dim dynamic (a symbolic batch)."""
    if op_type in MOVEMENT:
        return 0.0
    inputs = [_dims(value.type) for value in op.operands]
    results = list(op.results)
    out = _elements_written(results[0].type, output_bytes) if results else None
    if op_type in CONTRACTIONS or op_type == "Gemm":
        k = _contracted(op, op_type, inputs)
        return 2.0 * out * k if out is not None and k is not None else None
    if op_type in ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose"):
        index = 3 if op_type == "QLinearConv" else 1
        weight = inputs[index] if len(inputs) > index else None
        per_point = _known_product(weight[1:]) if weight else None
        if per_point is None:
            return None
        if op_type == "ConvTranspose":
            source = _known_product(inputs[0]) if inputs[0] else None
            return 2.0 * source * per_point if source is not None else None
        return 2.0 * out * per_point if out is not None else None
    if op_type in ONE_PASS:
        first = inputs[0] if inputs else None
        read = _known_product(first) if first else None
        if read is None and op_type in SHAPE_PRESERVING:
            read = out
        return float(read) if read is not None else None
    return float(out) if out is not None else None


def _contracted(
    op: ir.Operation, op_type: str, inputs: list[tuple[int | None, ...] | None]
) -> int | None:
    """K of a contraction: the first input's contracted dim, else the second's, which must
    equal it (a reshape before a projection can leave `[2,17,?]` times a `[64,64]` weight)."""
    first = inputs[0] if inputs else None
    second = inputs[1] if len(inputs) > 1 else None
    gemm = op_type == "Gemm"
    k = None
    if first:
        k = first[0] if gemm and _int_attribute(op, "transA") else first[-1]
    if k is None and second:
        if gemm:
            k = second[-1] if _int_attribute(op, "transB") else second[0]
        else:
            k = second[-2] if len(second) >= 2 else second[0]
    return k


def _dims(value_type: ir.Type) -> tuple[int | None, ...] | None:
    """Dims of a ranked tensor type, None for each dynamic one; None when not a ranked tensor."""
    try:
        shaped = ir.ShapedType(value_type)
    except ValueError:
        match = _TORCH_DIMS.fullmatch(str(value_type))
        if match is None:
            return None
        text = match.group(1)
        return tuple(None if d == "?" else int(d) for d in text.split(",")) if text else ()
    if not shaped.has_rank:
        return None
    return tuple(
        None if shaped.is_dynamic_dim(axis) else int(dim) for axis, dim in enumerate(shaped.shape)
    )


def _known_product(dims: tuple[int | None, ...]) -> int | None:
    if any(dim is None for dim in dims):
        return None
    return math.prod(dim or 0 for dim in dims)


def _elements_written(value_type: ir.Type, output_bytes: int | None) -> int | None:
    """Elements of a result: from its static type, else from the bytes written at run time."""
    dims = _dims(value_type)
    static = _known_product(dims) if dims is not None else None
    if static is not None:
        return static
    size = element_bytes(value_type)
    if output_bytes is None or not size:
        return None
    return output_bytes // size


def _int_attribute(op: ir.Operation, name: str) -> int:
    key = ATTRIBUTE_PREFIX + name
    if key not in op.attributes:
        return 0
    try:
        return int(ir.IntegerAttr(op.attributes[key]).value)
    except ValueError:  # not an integer: ONNX's default
        return 0

"""Analytic FLOP estimates from an op's operand and result shapes, to split a shared event.

Used when one profiled event ran several ops: a fused TF kernel, a decomposed aten call. The
estimate only needs to rank the members, so it counts what dominates: 2*M*N*K for matrix
products, 2*out*window for convolutions, input elements for reductions, output elements for
elementwise ops, nothing for ops that only relabel data (views, reshapes). Shapes come from the
IR's types (`tensor<...>`, `!torch.vtensor<[...],dtype>`); an op with an unknown shape has no
estimate (None), and the caller then splits evenly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from iree.compiler import ir

# Op kinds by their last name component (`tf.MatMul` -> `matmul`, `torch.aten.addmm` -> `addmm`).
MATMUL_KINDS = frozenset(
    {"matmul", "batchmatmul", "batchmatmulv2", "batchmatmulv3", "mm", "bmm", "addmm", "linear",
     "batch_matmul", "matvec", "baddbmm", "einsum"}
)  # fmt: skip
CONV_KINDS = frozenset({"conv2d", "conv3d", "convolution", "conv1d", "conv_2d_nhwc_hwcf"})
DEPTHWISE_KINDS = frozenset({"depthwiseconv2dnative"})
REDUCTION_KINDS = frozenset(
    {"sum", "mean", "max", "min", "prod", "amax", "amin", "var_mean", "var", "std", "argmax",
     "argmin", "logsumexp", "reduce", "any", "all"}
)  # fmt: skip
FREE_KINDS = frozenset(
    {"view", "_unsafe_view", "reshape", "expand", "squeeze", "unsqueeze", "t", "transpose",
     "permute", "alias", "slice", "select", "as_strided", "detach", "unflatten", "flatten",
     "expand_shape", "collapse_shape", "identity", "identityn", "readvariableop", "const",
     "constant", "literal", "listconstruct", "empty", "bitcast", "stopgradient", "shape", "size",
     "int", "float", "bool", "none", "str", "device", "to_builtin_tensor", "from_builtin_tensor",
     "numtotensor", "squeeze_dim", "expand_dims", "expanddims", "clone", "contiguous"}
)  # fmt: skip


def op_kind(op_name: str) -> str:
    """`tf.Conv2D` -> `conv2d`, `torch.aten.addmm` -> `addmm`, `linalg.matmul` -> `matmul`."""
    return op_name.rsplit(".", 1)[-1].lower()


def shape_of(value_type: ir.Type) -> tuple[int, ...] | None:
    """Static dims of a ranked tensor or torch value tensor type; None when unknown/dynamic."""
    try:
        shaped = ir.ShapedType(value_type)
    except ValueError:
        shaped = None
    if shaped is not None:
        if not shaped.has_rank or not shaped.has_static_shape:
            return None
        return tuple(int(d) for d in shaped.shape)
    text = str(value_type)
    # The torch dialect's value tensors print as `!torch.vtensor<[2,12,24],f32>`; the bindings
    # have no Python class for them, so read the dims from the type's own printed form.
    if text.startswith(("!torch.vtensor<[", "!torch.tensor<[")):
        dims = text.split("[", 1)[1].split("]", 1)[0]
        if not dims:
            return ()
        try:
            values = tuple(int(d) for d in dims.split(","))
        except ValueError:
            return None  # `?` dims
        return values if all(d >= 0 for d in values) else None
    return None


def _elements(shape: Sequence[int]) -> int:
    return math.prod(shape) if shape else 1


def _operand_shapes(op: ir.Operation) -> list[tuple[int, ...] | None]:
    return [shape_of(value.type) for value in op.operands]


def _result_shape(op: ir.Operation) -> tuple[int, ...] | None:
    results = list(op.results)
    if not results:
        return None
    return shape_of(results[0].type)


def estimate_flops(op: ir.Operation) -> int | None:
    """A FLOP estimate of `op` from its shapes, or None when a needed shape is unknown."""
    kind = op_kind(op.name)
    if kind in FREE_KINDS:
        return 0
    out = _result_shape(op)
    if out is None:
        return None
    operands = _operand_shapes(op)
    if kind in MATMUL_KINDS:
        tensors = [s for s in operands if s is not None and len(s) >= 1]
        if not tensors:
            return None
        # K is the contracted dim of the first matrix: its last dim unless it was transposed
        # (TF's transpose_a), in which case the first matrix's other dim equals the output's.
        first = tensors[0] if kind != "addmm" or len(tensors) < 2 else tensors[1]
        contracted = first[-1]
        if len(first) >= 2 and len(out) >= 2 and first[-1] == out[-2] and first[-2] != out[-2]:
            contracted = first[-2]
        return 2 * _elements(out) * contracted
    if kind in CONV_KINDS or kind in DEPTHWISE_KINDS:
        if len(operands) < 2 or operands[1] is None:
            return None
        weight = operands[1]
        if kind in DEPTHWISE_KINDS:  # filter [kh, kw, in, multiplier]: one input channel each
            return 2 * _elements(out) * _elements(weight[:2])
        if op.name.startswith("tf."):  # filter [kh, kw, in, out]
            return 2 * _elements(out) * _elements(weight[:-1])
        return 2 * _elements(out) * _elements(weight[1:])  # torch/linalg weight [out, in, kh, kw]
    if kind in REDUCTION_KINDS:
        first_shape = operands[0] if operands else None
        return _elements(first_shape) if first_shape is not None else None
    return _elements(out)


def share_weights(ops: Sequence[ir.Operation]) -> tuple[list[float], str]:
    """Weights to split one event over `ops` and their basis: `flops`, else `even`."""
    estimates = [estimate_flops(op) for op in ops]
    if all(e is not None for e in estimates) and sum(e or 0 for e in estimates) > 0:
        return [float(e or 0) for e in estimates], "flops"
    return [1.0] * len(ops), "even"

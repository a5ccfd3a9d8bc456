"""An op's kind as its users name it.

torch-mlir imports an op it has no definition for as the generic `torch.operator "<name>"`:
iree-import-onnx turns every ONNX node into one (`torch.operator "onnx.MatMul"`). Ranked or
grouped by MLIR name, a whole ONNX model is one kind, `torch.operator`; by this kind it is
`onnx.MatMul`, `onnx.Softmax`, ...
"""

from __future__ import annotations

from iree.compiler import ir

GENERIC_OPERATOR = "torch.operator"


def operator_name(op: ir.Operation) -> str:
    """`onnx.Conv` for a `torch.operator "onnx.Conv"`, else ""."""
    if op.name != GENERIC_OPERATOR or "name" not in op.attributes:
        return ""
    attribute = op.attributes["name"]
    return str(ir.StringAttr(attribute).value) if isinstance(attribute, ir.StringAttr) else ""


def op_kind(op: ir.Operation, op_name: str) -> str:
    """The kind users know `op` by: a generic operator's own name, else `op_name` (its MLIR
    name, passed in: the caller has it already)."""
    if op_name != GENERIC_OPERATOR:
        return op_name
    return operator_name(op) or op_name

"""Shapes the TF profiler recorded, so a fused kernel's time is split by FLOPs where the IR is
shapeless.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/shapes.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir

from irprof.frameworks.tf.fusion import ExecutedGraph, Membership
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.cost_kinds import CONV_KINDS, MATMUL_KINDS, op_kind
from irprof.mlir.cost_model import op_cost
from irprof.mlir.cost_shapes import Shape, shape_of
from irprof.trace.model import Trace

SHAPE_ITEM = re.compile(r"^[A-Za-z0-9_]+\[([0-9,]*)\]$")
SHAPE_STAT = "shape"
# Kinds whose result has the broadcast shape of their operands.
NOT_ELEMENTWISE = MATMUL_KINDS | CONV_KINDS


def parse_shapes(text: str) -> list[Shape | None]:
    """`(float[32,2704];int32[];)` -> [(32, 2704), (), None]: one entry per kernel input."""
    inner = text.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        return []
    items = inner[1:-1].split(";")
    shapes: list[Shape | None] = []
    for item in items:
        match = SHAPE_ITEM.match(item.strip())
        if match is None:
            shapes.append(None)  # a resource handle, a variant: no dims recorded
            continue
        dims = match.group(1)
        shapes.append(tuple(int(d) for d in dims.split(",")) if dims else ())
    return shapes


@dataclass
class RuntimeShapes:
    """Recorded shapes of IR values: op results by (position, result index), function
    arguments by (function, argument number)."""

    view: TfOpIndex
    results: dict[tuple[int, int], Shape] = field(default_factory=dict)
    arguments: dict[tuple[str, int], Shape] = field(default_factory=dict)

    @staticmethod
    def collect(
        view: TfOpIndex,
        graph: ExecutedGraph,
        membership: Membership,
        trace: Trace,
        rows: np.ndarray,
    ) -> RuntimeShapes:
        """Read the first recorded shapes of every executed node among `rows`."""
        found = RuntimeShapes(view)
        arguments = _entry_arguments(view)
        seen: set[str] = set()
        for args in trace.args_many(rows):
            node, text = args.get("tf_op_name"), args.get(SHAPE_STAT)
            if not isinstance(node, str) or not isinstance(text, str) or node in seen:
                continue
            seen.add(node)
            executed = graph.nodes.get(node)
            shapes = parse_shapes(text)
            if executed is None or len(shapes) != len(executed.data_inputs):
                continue
            for (producer, port), shape in zip(executed.data_inputs, shapes, strict=True):
                if shape is not None:
                    found._record(producer, port, shape, arguments, membership)
        return found

    def _record(
        self,
        producer: str,
        port: int,
        shape: Shape,
        arguments: dict[str, int],
        membership: Membership,
    ) -> None:
        if producer in arguments:
            self.arguments[(self.view.entry_name(), arguments[producer])] = shape
            return
        positions = self.view.resolve(producer) or membership.members_of(producer)[:1]
        if len(positions) == 1:
            self.results[(positions[0], port)] = shape

    def value_shape(self, value: ir.Value) -> Shape | None:
        """The value's static IR shape, else the shape the profiler recorded for it."""
        static = shape_of(value.type)
        if static is not None:
            return static
        if isinstance(value, ir.BlockArgument):
            function = _function_name(value.owner.owner)
            return self.arguments.get((function, value.arg_number))
        owner = value.owner
        operation = owner if isinstance(owner, ir.Operation) else getattr(owner, "operation", None)
        position = self.view.position_of.get(operation) if operation is not None else None
        if position is None:
            return None
        return self.results.get((position, ir.OpResult(value).result_number))


def _function_name(operation: ir.Operation | ir.OpView) -> str:
    op = operation.operation
    if "sym_name" not in op.attributes:
        return ""
    return str(ir.StringAttr(op.attributes["sym_name"]).value)


def _entry_arguments(view: TfOpIndex) -> dict[str, int]:
    """`_Arg` node name -> argument number of the entry function (`tf.entry_function`)."""
    if view.entry_function is None:
        return {}
    op = view.infos[view.entry_function].op
    if "tf.entry_function" not in op.attributes:
        return {}
    entry = ir.DictAttr(op.attributes["tf.entry_function"])
    if "inputs" not in entry:
        return {}
    names = ir.StringAttr(entry["inputs"]).value.split(",")
    return {name: index for index, name in enumerate(names) if name}


def properties(op: ir.Operation) -> dict[str, ir.Attribute]:
    """The op's properties (`<{strides = [...], transpose_b = true}>`), which the bindings do not
    expose for unregistered ops, parsed from its generic printed form with MLIR's parser."""
    # Verified when parsed: the verifier at each print was half of its cost.
    text = op.get_asm(
        print_generic_op_form=True, large_elements_limit=16, assume_verified=True, skip_regions=True
    )
    start = text.find("<{")
    if start < 0:
        return {}
    depth = 0
    for index in range(start + 1, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                try:
                    parsed = ir.DictAttr(
                        ir.Attribute.parse(text[start + 1 : index + 1], op.context)
                    )
                except (ValueError, ir.MLIRError):
                    return {}
                return {named.name: named.attr for named in parsed}
    return {}


def _ints(attributes: dict[str, ir.Attribute], name: str) -> list[int]:
    attr = attributes.get(name)
    if attr is None:
        return []
    try:
        return [int(ir.IntegerAttr(item).value) for item in ir.ArrayAttr(attr)]
    except ValueError:
        return []


def _text(attributes: dict[str, ir.Attribute], name: str) -> str:
    attr = attributes.get(name)
    if attr is None:
        return ""
    try:
        return str(ir.StringAttr(attr).value)
    except ValueError:
        return ""


def _flag(attributes: dict[str, ir.Attribute], name: str) -> bool:
    attr = attributes.get(name)
    try:
        return attr is not None and bool(ir.BoolAttr(attr).value)
    except ValueError:
        return False


def infer_result(
    kind: str, attributes: dict[str, ir.Attribute], operands: Sequence[Shape | None]
) -> Shape | None:
    """The first result's shape from the operands' shapes, for the kinds where it follows."""
    known = [shape for shape in operands if shape is not None]
    if len(known) != len(operands) or not known:
        return None
    if kind in ("matmul", "batchmatmul", "batchmatmulv2", "batchmatmulv3") and len(known) >= 2:
        return _matmul_result(attributes, known[0], known[1])
    if kind in ("conv2d", "depthwiseconv2dnative") and len(known) >= 2:
        return _conv_result(kind, attributes, known[0], known[1])
    if kind in NOT_ELEMENTWISE:
        return None
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*known))
    except ValueError:
        return None


def _matmul_result(attributes: dict[str, ir.Attribute], lhs: Shape, rhs: Shape) -> Shape | None:
    if len(lhs) < 2 or len(rhs) < 2:
        return None
    rows = lhs[-1] if _flag(attributes, "transpose_a") or _flag(attributes, "adj_x") else lhs[-2]
    cols = rhs[-2] if _flag(attributes, "transpose_b") or _flag(attributes, "adj_y") else rhs[-1]
    batch = lhs[:-2] if len(lhs) >= len(rhs) else rhs[:-2]
    return (*batch, rows, cols)


def _conv_result(
    kind: str, attributes: dict[str, ir.Attribute], image: Shape, kernel: Shape
) -> Shape | None:
    """Output of a 2-D convolution from its input, filter, strides, dilations and padding."""
    if len(image) != 4 or len(kernel) != 4:
        return None
    channels_last = _text(attributes, "data_format") != "NCHW"
    spatial = (1, 2) if channels_last else (2, 3)
    strides = _ints(attributes, "strides") or [1, 1, 1, 1]
    dilations = _ints(attributes, "dilations") or [1, 1, 1, 1]
    padding = _text(attributes, "padding")
    explicit = _ints(attributes, "explicit_paddings")
    out = []
    for axis, window in zip(spatial, kernel[:2], strict=True):
        size, stride = image[axis], max(strides[axis], 1)
        effective = (window - 1) * max(dilations[axis], 1) + 1
        if padding == "SAME":
            out.append(math.ceil(size / stride))
        elif padding == "VALID":
            out.append(math.ceil((size - effective + 1) / stride))
        elif padding == "EXPLICIT" and len(explicit) == 8:
            padded = size + explicit[2 * axis] + explicit[2 * axis + 1]
            out.append((padded - effective) // stride + 1)
        else:
            return None
    channels = kernel[2] * kernel[3] if kind == "depthwiseconv2dnative" else kernel[3]
    if channels_last:
        return (image[0], out[0], out[1], channels)
    return (image[0], channels, out[0], out[1])


def _typed(shape: Shape | None, original: ir.Type) -> ir.Type:
    """`original` with `shape` when it is known and `original` is a tensor of numbers."""
    if shape is None:
        return original
    try:
        element = ir.ShapedType(original).element_type
    except ValueError:
        return original
    return ir.RankedTensorType.get(list(shape), element)


def shaped_flops(
    view: TfOpIndex, members: Sequence[int], shapes: RuntimeShapes
) -> list[int] | None:
    """FLOPs of each member, costed on copies with the recorded and inferred shapes; None when
    one member has no number."""
    internal: dict[tuple[int, int], Shape] = {}
    flops: dict[int, int] = {}
    with view.infos[members[0]].op.context, ir.Location.unknown():
        holder = ir.Operation.create("irprof.scratch", regions=1)
        for position in sorted(members):  # walk order: producers before their users
            op = view.infos[position].op
            operand_shapes = [
                _operand_shape(view, value, shapes, internal) for value in op.operands
            ]
            attributes = {**properties(op), **{a.name: a.attr for a in _named(op)}}
            result_shapes = []
            for number, result in enumerate(op.results):
                shape = shapes.value_shape(result)
                if shape is None and number == 0:
                    shape = infer_result(op_kind(op.name), attributes, operand_shapes)
                if shape is not None:
                    internal[(position, number)] = shape
                result_shapes.append(shape)
            block = holder.regions[0].blocks.append(
                *[_typed(s, v.type) for s, v in zip(operand_shapes, op.operands, strict=True)]
            )
            try:
                copy = ir.Operation.create(
                    op.name,
                    results=[
                        _typed(s, r.type) for s, r in zip(result_shapes, op.results, strict=True)
                    ],
                    operands=list(block.arguments),
                    attributes=attributes,
                    ip=ir.InsertionPoint(block),
                )
            except (ValueError, ir.MLIRError):
                return None  # an op that cannot stand alone (regions, successors): even split
            estimate = op_cost(copy).flops
            if estimate is None:
                return None
            flops[position] = estimate
    return [flops[p] for p in members]


def _named(op: ir.Operation) -> list[ir.NamedAttribute]:
    attributes = op.attributes
    return [attributes[index] for index in range(len(attributes))]


def _operand_shape(
    view: TfOpIndex,
    value: ir.Value,
    shapes: RuntimeShapes,
    internal: dict[tuple[int, int], Shape],
) -> Shape | None:
    found = shapes.value_shape(value)
    if found is not None or isinstance(value, ir.BlockArgument):
        return found
    owner = value.owner
    operation = owner if isinstance(owner, ir.Operation) else getattr(owner, "operation", None)
    position = view.position_of.get(operation) if operation is not None else None
    if position is None:
        return None
    return internal.get((position, ir.OpResult(value).result_number))

"""Bounds for the random values of integer inputs that index a table.

An input read as the indices of a `Gather` whose data is a weight (an initializer or a
`Constant`), directly or through ops that keep its values (`Cast`, `Reshape`, `Unsqueeze`...),
can only take values below that weight's size on the gathered axis: BERT's `token_type_ids`
index a table of 2 rows, so the capture's default random integers (0-3) made ONNX Runtime fail
with "indices element out of data bounds". Found from the graph's def-use, whatever the names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the capture's child has onnx; this module needs only its protos' fields
    import onnx

# Ops whose first output holds the values of their first input (rearranged or retyped).
VALUE_KEEPING = frozenset(
    {"Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Expand", "Transpose"}
)


def _weight_shapes(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """Tensor -> shape, for the graph's initializers and `Constant` nodes' tensors."""
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and not node.domain and node.output:
            for attribute in node.attribute:
                if attribute.name == "value":
                    shapes[node.output[0]] = tuple(attribute.t.dims)
    return shapes


def index_bounds(graph: onnx.GraphProto) -> dict[str, int]:
    """Graph input -> the smallest table size it indexes (inputs that index no weight: absent).

    ONNX lists nodes in topological order, so one pass follows each input's values forward.
    """
    shapes = _weight_shapes(graph)
    origin = {value.name: value.name for value in graph.input if value.name not in shapes}
    bounds: dict[str, int] = {}
    for node in graph.node:
        if node.domain or not node.input:
            continue
        if node.op_type in VALUE_KEEPING and node.input[0] in origin and node.output:
            origin[node.output[0]] = origin[node.input[0]]
        elif node.op_type == "Gather" and len(node.input) > 1 and node.input[1] in origin:
            shape = shapes.get(node.input[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if shape is None or not -len(shape) <= axis < len(shape) or shape[axis] < 1:
                continue
            name = origin[node.input[1]]
            bounds[name] = min(bounds.get(name, shape[axis]), shape[axis])
    return bounds

"""Wrap every op's location in an origin NameLoc (`irprof.origin=<level>#<index>`).

Attributes do not survive lowering, locations do: after `convert-linalg-to-loops` or
`iree-compile`, the `irprof.origin=<level>#<index>` names still say which op a lowered op came
from. The index is the op's position in pre-order walk of the module (stable for one input).
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.keys import ORIGIN_PREFIX, origin_name, parse_origin
from irprof.mlir.op_index import walk_ops


def stamp_origin(root: ir.Operation, level: str) -> None:
    """Stamp every op below `root`; re-stamping the same level replaces the old stamp."""
    if "#" in level or not level:
        raise ValueError(f"origin level {level!r} must be non-empty and without '#'")
    context = root.context
    for index, op in enumerate(walk_ops(root)):
        location = op.location
        if isinstance(location, ir.NameLoc) and location.name_str.startswith(ORIGIN_PREFIX):
            stamped = parse_origin(location.name_str[len(ORIGIN_PREFIX) :])
            if stamped is not None and stamped[0] == level:
                location = location.child_loc
        op.location = ir.Location.name(origin_name(level, index), location, context)

"""Give the body ops of linalg ops their parent's location.

Design notes: docs/mlir.md, "Module notes", `mlir/copy_loc_to_body.py`.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.mlir.keys import ORIGIN_PREFIX
from irprof.mlir.op_index import walk_ops


def _is_anonymous(location: ir.Location) -> bool:
    """Unknown, or only an origin stamp around unknown: nothing to trace the op by."""
    while isinstance(location, ir.NameLoc) and location.name_str.startswith(ORIGIN_PREFIX):
        location = location.child_loc
    return isinstance(location, ir.UnknownLoc)


def copy_loc_to_body(root: ir.Operation) -> None:
    """Body ops of `linalg.*` ops get the parent's location (as the caller when they have one)."""
    for op in walk_ops(root):
        if not op.name.startswith("linalg.") or len(op.regions) == 0:
            continue
        parent_location = op.location
        for region in op.regions:
            for block in region.blocks:
                # Only a handful of body ops per linalg op: iterating is cheap here.
                for body_op in block.operations:
                    inner = body_op.operation
                    own = inner.location
                    if _is_anonymous(own):
                        inner.location = parent_location
                    elif not (isinstance(own, ir.CallSiteLoc) and own.caller == parent_location):
                        inner.location = ir.Location.callsite(
                            own, [parent_location], context=root.context
                        )

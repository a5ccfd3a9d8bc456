"""Give the body ops of linalg ops their parent's location.

Named linalg ops (`linalg.matmul`, `linalg.fill`, ...) build their region implicitly with
`loc(unknown)`, so after `convert-linalg-to-loops` the arithmetic of the loop body would have no
location and no origin. Copying the parent's location first keeps the body traceable.
Body ops that do have a location of their own (a `linalg.generic` payload written by a frontend)
keep it as the callee of `callsite(own at parent)`: they execute as part of the parent, so after
lowering they still lead back to the parent's origin (which is what the profiler measured).
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

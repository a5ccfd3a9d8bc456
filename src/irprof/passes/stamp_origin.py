"""`irprof-stamp-origin{level=NAME}`: wrap every op's location in an origin NameLoc.

Attributes do not survive lowering, locations do: after `convert-linalg-to-loops` or
`iree-compile`, the `irprof.origin=<level>#<index>` names still say which op a lowered op came
from. The index is the op's position in pre-order walk of the module (stable for one input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.keys import ORIGIN_PREFIX, origin_name, parse_origin
from irprof.mlir.op_index import walk_ops


@dataclass(frozen=True)
class StampOriginPass:
    """Wraps each op's location in `NameLoc("irprof.origin=<level>#<index>")`."""

    name: ClassVar[str] = "irprof-stamp-origin"
    summary: ClassVar[str] = "wrap op locations in NameLoc irprof.origin=<level>#<index>"
    level: str = "input"

    def run(self, root: ir.Operation) -> None:
        """Stamp every op below `root`; re-stamping the same level replaces the old stamp."""
        if "#" in self.level or not self.level:
            raise ValueError(f"origin level {self.level!r} must be non-empty and without '#'")
        context = root.context
        for index, op in enumerate(walk_ops(root)):
            location = op.location
            if isinstance(location, ir.NameLoc) and location.name_str.startswith(ORIGIN_PREFIX):
                stamped = parse_origin(location.name_str[len(ORIGIN_PREFIX) :])
                if stamped is not None and stamped[0] == self.level:
                    location = location.child_loc
            op.location = ir.Location.name(origin_name(self.level, index), location, context)

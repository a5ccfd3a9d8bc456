"""`irprof-stamp-origin{level=NAME}`: wrap every op's location in an origin NameLoc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.stamp_origin import stamp_origin


@dataclass(frozen=True)
class StampOriginPass:
    """Wraps each op's location in `NameLoc("irprof.origin=<level>#<index>")`."""

    name: ClassVar[str] = "irprof-stamp-origin"
    summary: ClassVar[str] = "wrap op locations in NameLoc irprof.origin=<level>#<index>"
    level: str = "input"

    def run(self, root: ir.Operation) -> None:
        """Stamp every op below `root` (see `irprof.mlir.stamp_origin`)."""
        stamp_origin(root, self.level)

"""`irprof-cost{remove=false}`: write (or remove) `irprof.cost = {flops, bytes, category}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.cost_attrs import attach_costs, strip_costs


@dataclass(frozen=True)
class CostPass:
    """Attaches the cost model's FLOPs and bytes moved per execution to every op with work."""

    name: ClassVar[str] = "irprof-cost"
    summary: ClassVar[str] = "attach irprof.cost = {flops, bytes, category} from the IR's types"
    remove: bool = False

    def run(self, root: ir.Operation) -> None:
        """Attach (or with `remove`, strip) the attributes below `root`."""
        if self.remove:
            strip_costs(root)
        else:
            attach_costs(root)

"""torch-dialect -> linalg-on-tensors in-process, keeping every op traceable to its origin.

`irprof-stamp-origin{level=torch}` runs on the torch IR before anything else, so each lowered op's
location still names the torch op it came from (`irprof.origin=torch#<index>`); that is what
`irprof-reattach` uses to annotate the linalg level from the torch level. The lowering itself is
torch-mlir's own pipelines as registered in IREE's compiler bindings (the same ones `iree-opt`
lists): backend-contract normalisation, then conversion to linalg on tensors. Finally
`irprof-copy-loc-to-body` gives the regions of linalg ops their parent's location, so a later
lowering (to loops, or IREE dispatches) cannot leave the arithmetic anonymous.
"""

from __future__ import annotations

from iree.compiler import ir, passmanager

from irprof.errors import PipelineError
from irprof.passes.copy_loc_to_body import CopyLocToBodyPass
from irprof.passes.stamp_origin import StampOriginPass

TORCH_LEVEL = "torch"
TORCH_TO_LINALG_PIPELINE = (
    "builtin.module(torchdynamo-export-to-torch-backend-pipeline,"
    "torch-backend-to-linalg-on-tensors-backend-pipeline)"
)


def stamp_torch_level(module: ir.Module) -> None:
    """Wrap every torch op's location in its origin stamp (`torch#<walk index>`)."""
    StampOriginPass(level=TORCH_LEVEL).run(module.operation)


def lower_torch_to_linalg(module: ir.Module) -> None:
    """Lower a stamped torch-dialect module to linalg on tensors, in place."""
    with module.context:
        try:
            manager = passmanager.PassManager.parse(TORCH_TO_LINALG_PIPELINE)
            manager.run(module.operation)
        except ir.MLIRError as exc:
            raise PipelineError(f"torch -> linalg lowering failed: {exc}") from exc
    CopyLocToBodyPass().run(module.operation)

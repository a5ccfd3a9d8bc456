"""torch-dialect -> linalg-on-tensors in-process, keeping every op traceable to its origin.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/lowering.py`.
"""

from __future__ import annotations

from iree.compiler import ir, passmanager

from irprof.errors import PipelineError
from irprof.mlir.copy_loc_to_body import copy_loc_to_body
from irprof.mlir.stamp_origin import stamp_origin

TORCH_LEVEL = "torch"
TORCH_TO_LINALG_PIPELINE = (
    "builtin.module(torchdynamo-export-to-torch-backend-pipeline,"
    "torch-backend-to-linalg-on-tensors-backend-pipeline)"
)


def stamp_torch_level(module: ir.Module) -> None:
    """Wrap every torch op's location in its origin stamp (`torch#<walk index>`)."""
    stamp_origin(module.operation, TORCH_LEVEL)


def lower_torch_to_linalg(module: ir.Module) -> None:
    """Lower a stamped torch-dialect module to linalg on tensors, in place."""
    with module.context:
        try:
            manager = passmanager.PassManager.parse(TORCH_TO_LINALG_PIPELINE)
            manager.run(module.operation)
        except ir.MLIRError as exc:
            raise PipelineError(f"torch -> linalg lowering failed: {exc}") from exc
    copy_loc_to_body(module.operation)

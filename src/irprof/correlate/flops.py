"""Compatibility name: the FLOP estimate lives in `irprof.mlir.cost_model`, one cost model for
attribution shares, the roofline, `irprof.cost` and the MLGO features."""

from __future__ import annotations

from irprof.mlir.cost_kinds import op_kind
from irprof.mlir.cost_model import estimate_flops, share_weights
from irprof.mlir.cost_shapes import shape_of

__all__ = ["estimate_flops", "op_kind", "shape_of", "share_weights"]

"""A trace export that also knows each annotated op's FLOPs, for FLOP-rate counter tracks.

The FLOPs come from the IR's types (`mlir.cost_model`); an op whose work ran as several
distinct kernels is credited an equal part of its FLOPs per kernel event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.trace_export import TraceExport
from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.mlir.cost_model import op_cost
from irprof.mlir.op_index import walk_ops


@dataclass(frozen=True)
class CostedTraceExport(TraceExport):
    """`TraceExport` plus FLOPs per event of each op with a known cost, by (level, op index)."""

    flops_per_event: dict[tuple[str, int], float] = field(default_factory=dict)


def load_costed_trace_export(bundle: RunBundle, level: str | None = None) -> CostedTraceExport:
    """The bundle's first trace, its annotated levels (all, or `level`) and their ops' FLOPs."""
    names = [level] if level is not None else bundle.annotated_levels()
    if not names:
        raise BundleError(
            f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
        )
    loaded = [load_annotated_level(bundle, name) for name in names]
    flops: dict[tuple[str, int], float] = {}
    for item in loaded:
        ir_ops = walk_ops(item.module)
        for op in item.profiled.ops:
            if op.profile is None or op.inclusive or op.index >= len(ir_ops):
                continue
            work = op_cost(ir_ops[op.index]).flops
            if work:
                flops[(item.level, op.index)] = work / max(1, len(op.profile.kernels))
    return CostedTraceExport(
        trace=bundle.trace(),
        trace_path=bundle.primary_trace_path.relative_to(bundle.root).as_posix(),
        manifest=bundle.manifest(),
        levels=tuple((item.level, item.profiled) for item in loaded),
        flops_per_event=flops,
    )

"""Roofline per hotspot row: FLOPs and bytes from the IR (`mlir.cost_model`) against measured
time and this machine's peaks.

Design notes: docs/views.md, "Module notes", `analyses/roofline.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iree.compiler import ir

from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.table import Tabular, dataclass_rows, row_columns
from irprof.errors import BundleError
from irprof.mlir.cost_groups import CallGraph, call_graph, group_cost
from irprof.mlir.cost_model import OpCost, dominant_category, op_cost
from irprof.mlir.op_index import walk_ops

BOUNDS = ("compute", "memory", "overhead", "unknown")


@dataclass(frozen=True)
class RooflineOptions:
    """When a row counts as overhead-bound."""

    overhead_ns: int = 20_000
    overhead_fraction: float = 0.1


@dataclass(frozen=True)
class RooflinePoint:
    """One hotspot row on the roofline; work figures are totals over the profile."""

    key: str
    op_name: str
    location: str
    op_index: int
    group: str
    ops: int
    total_ns: int
    share: float
    estimated: bool  # the row's time is partly an estimated share of a group
    executions: int
    category: str  # the cost model's category (a group: its dominant one)
    flops: int | None  # over all executions
    bytes: int | None
    peaks: MachinePeaks | None
    options: RooflineOptions

    @property
    def known(self) -> bool:
        """FLOPs and bytes are both known."""
        return self.flops is not None and self.bytes is not None

    @property
    def flops_per_run(self) -> float | None:
        """FLOPs of one execution."""
        return None if self.flops is None else self.flops / max(1, self.executions)

    @property
    def bytes_per_run(self) -> float | None:
        """Bytes moved by one execution."""
        return None if self.bytes is None else self.bytes / max(1, self.executions)

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte (None when unknown or when nothing moves)."""
        if self.flops is None or not self.bytes:
            return None
        return self.flops / self.bytes

    @property
    def achieved_gflops(self) -> float | None:
        """FLOPs per nanosecond = GFLOP/s."""
        return None if self.flops is None or self.total_ns <= 0 else self.flops / self.total_ns

    @property
    def achieved_gbps(self) -> float | None:
        """Bytes per nanosecond = GB/s."""
        return None if self.bytes is None or self.total_ns <= 0 else self.bytes / self.total_ns

    @property
    def roof_ns(self) -> float | None:
        """The time this work takes at the machine's peaks (None without a cost or peaks)."""
        if not self.known or self.peaks is None:
            return None
        assert self.flops is not None and self.bytes is not None
        return max(self.flops / self.peaks.gflops, self.bytes / self.peaks.gbps)

    @property
    def roof_gflops(self) -> float | None:
        """The attainable GFLOP/s at this intensity."""
        if self.peaks is None or self.intensity is None:
            return None
        return min(self.peaks.gflops, self.intensity * self.peaks.gbps)

    @property
    def roof_fraction(self) -> float | None:
        """Time at the roof over measured time (achieved / attainable)."""
        roof = self.roof_ns
        return None if roof is None or self.total_ns <= 0 else roof / self.total_ns

    @property
    def bound(self) -> str:
        """compute | memory | overhead | unknown (see the module docstring)."""
        fraction = self.roof_fraction
        if fraction is None or self.peaks is None:
            return "unknown"
        mean_ns = self.total_ns / max(1, self.executions)
        small = mean_ns <= self.options.overhead_ns
        if (small and fraction < self.options.overhead_fraction) or not (self.flops or self.bytes):
            return "overhead"
        intensity = self.intensity
        return "compute" if intensity is not None and intensity >= self.peaks.ridge else "memory"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form, derived figures included."""
        return {
            "key": self.key,
            "op_name": self.op_name,
            "location": self.location,
            "op_index": self.op_index,
            "group": self.group,
            "ops": self.ops,
            "total_ns": self.total_ns,
            "share": self.share,
            "estimated": self.estimated,
            "executions": self.executions,
            "category": self.category,
            "flops": self.flops,
            "bytes": self.bytes,
            "intensity": self.intensity,
            "achieved_gflops": self.achieved_gflops,
            "achieved_gbps": self.achieved_gbps,
            "roof_gflops": self.roof_gflops,
            "roof_fraction": self.roof_fraction,
            "bound": self.bound,
        }


@dataclass(frozen=True)
class Roofline(Tabular):
    """The rows of one hotspot table on this machine's roofline."""

    level: str
    by: str
    peaks: MachinePeaks | None
    options: RooflineOptions
    points: tuple[RooflinePoint, ...]  # in the table's row order

    @property
    def total_ns(self) -> int:
        """Time of all rows."""
        return sum(point.total_ns for point in self.points)

    @property
    def costed_ns(self) -> int:
        """Time of the rows whose FLOPs and bytes are known."""
        return sum(point.total_ns for point in self.points if point.known)

    def bound_ns(self) -> dict[str, int]:
        """Time per bound (`BOUNDS` order)."""
        totals = dict.fromkeys(BOUNDS, 0)
        for point in self.points:
            totals[point.bound] += point.total_ns
        return totals

    def to_json(self) -> dict[str, Any]:
        """The report's and `--json` form: peaks, totals and every point."""
        return {
            "level": self.level,
            "by": self.by,
            "peaks": self.peaks.to_json() if self.peaks else None,
            "ridge": self.peaks.ridge if self.peaks else None,
            "overhead_ns": self.options.overhead_ns,
            "overhead_fraction": self.options.overhead_fraction,
            "total_ns": self.total_ns,
            "costed_ns": self.costed_ns,
            "bound_ns": self.bound_ns(),
            "points": [point.to_json() for point in self.points],
        }

    def table_columns(self) -> tuple[str, ...]:
        """The fields of `RooflinePoint` (not the shared peaks and options), then its figures."""
        return row_columns(RooflinePoint, properties=_POINT_FIGURES, exclude=("peaks", "options"))

    def table_rows(self) -> list[tuple[Any, ...]]:
        """One tuple per point, in the hotspot table's order."""
        return dataclass_rows(self.points, self.table_columns())

    def table_caption(self) -> str:
        """Level, grouping and the roofs."""
        roofs = self.peaks.describe() if self.peaks else "no peaks: achieved rates only"
        return f"level {self.level}, by {self.by}; {roofs}"


_POINT_FIGURES = (
    "flops_per_run",
    "bytes_per_run",
    "intensity",
    "achieved_gflops",
    "achieved_gbps",
    "roof_gflops",
    "roof_fraction",
    "bound",
)


def executions(op: ProfiledOp) -> int:
    """Runs of an op over the profile: its events per distinct kernel."""
    if op.profile is None:
        return 0
    return runs(op.profile.count, len(op.profile.kernels))


def runs(count: int, kernels: int) -> int:
    """Events per distinct kernel, when they divide evenly; else every event is a run."""
    if kernels > 1 and count % kernels == 0:
        return count // kernels
    return count


def row_members(row: HotspotRow, by: str, ops: Sequence[ProfiledOp]) -> list[ProfiledOp]:
    """The profiled ops a hotspot row stands for (a group row: all of its members)."""
    counted = [op for op in ops if op.profile is not None and not op.inclusive]
    if by == "type":
        return [op for op in counted if op.op_name == row.key]
    if by == "scope":
        return [op for op in counted if (op.scope or "(no scope)") == row.key]
    if row.group and row.ops > 1:
        return [op for op in counted if op.profile is not None and op.profile.group == row.group]
    return [ops[row.op_index]]


def _totals(costs: Sequence[tuple[OpCost, int]]) -> tuple[int | None, int | None]:
    """FLOPs and bytes over all runs of ops with their costs (None if one is unknown)."""
    flops: int | None = 0
    moved: int | None = 0
    for cost, count in costs:
        flops = None if flops is None or cost.flops is None else flops + cost.flops * count
        moved = None if moved is None or cost.bytes is None else moved + cost.bytes * count
    return flops, moved


def _point(
    row: HotspotRow,
    by: str,
    members: list[ProfiledOp],
    ir_ops: Sequence[ir.Operation],
    graph: CallGraph,
    peaks: MachinePeaks | None,
    options: RooflineOptions,
) -> RooflinePoint:
    if by == "op":
        # One kernel (a single op or a group that ran together): its runs and its cost.
        count = runs(row.count, len(row.kernels))
        if len(members) > 1:
            cost = group_cost([ir_ops[op.index] for op in members], graph)
        else:
            cost = op_cost(ir_ops[members[0].index])
        flops, moved = _totals([(cost, count)])
        category = cost.category
    else:
        count = sum(executions(op) for op in members)
        costs = [(op_cost(ir_ops[op.index]), executions(op)) for op in members]
        flops, moved = _totals(costs)
        category = dominant_category(cost.category for cost, _ in costs)
    return RooflinePoint(
        key=row.key,
        op_name=row.op_name,
        location=row.location,
        op_index=row.op_index,
        group=row.group,
        ops=row.ops,
        total_ns=row.total_ns,
        share=row.share,
        estimated=row.estimated_ns > 0,
        executions=count,
        category=category,
        flops=flops,
        bytes=moved,
        peaks=peaks,
        options=options,
    )


def roofline(
    table: HotspotTable,
    profiled: ProfiledModule,
    module: ir.Module,
    *,
    level: str,
    peaks: MachinePeaks | None,
    options: RooflineOptions | None = None,
) -> Roofline:
    """The rows of `table` (built from `profiled`, the ops of `module`) on the roofline."""
    options = options or RooflineOptions()
    ir_ops = walk_ops(module)
    if len(ir_ops) != len(profiled.ops):
        raise BundleError(f"{profiled.path}: the module changed under its profiled ops")
    graph = call_graph(module)
    points = tuple(
        _point(
            row, table.by, row_members(row, table.by, profiled.ops), ir_ops, graph, peaks, options
        )
        for row in table.rows
    )
    return Roofline(level=level, by=table.by, peaks=peaks, options=options, points=points)

"""Re-derive annotations on lowered IR from an upper level's origin-keyed profile.

Design notes: docs/mlir.md, "Module notes", `mlir/reattach.py`.
"""

from __future__ import annotations

from collections import defaultdict

from iree.compiler import ir

from irprof.coverage import is_trivial_op
from irprof.errors import PipelineError
from irprof.mlir.locations import render
from irprof.mlir.op_index import derive_op_infos
from irprof.mlir.profile_attrs import PROFILE_ATTRS, AttributeBuilder, Layout, attach_profile
from irprof.mlir.profile_table import ROW_ATTR, attach_table
from irprof.opprofile import OpProfile, OpProfileEntry, ProfileData


def _merge(origins: list[str], data: list[ProfileData]) -> ProfileData:
    """The data of an op several upper ops were fused into: their time adds up."""
    total = sum(d.total_ns for d in data)
    count = max(d.count for d in data)
    return ProfileData(
        count=count,
        total_ns=total,
        mean_ns=total // count if count else 0,
        min_ns=sum(d.min_ns for d in data),
        max_ns=sum(d.max_ns for d in data),
        first_ts_ns=min(d.first_ts_ns for d in data),
        fraction=sum(d.fraction for d in data),
        kernels=tuple(dict.fromkeys(k for d in data for k in d.kernels)),
        fused_with=tuple(origins),
        source="reattach:fused " + "+".join(origins),
    )


def reattach(
    root: ir.Module | ir.Operation, upper: OpProfile, *, level: str, layout: Layout = "irprof"
) -> OpProfile:
    """Annotate lowered `root` from `upper`'s origin-keyed entries; returns the lower OpProfile."""
    by_origin: dict[str, ProfileData] = {}
    for entry in upper.entries:
        if entry.key.origin is not None:
            by_origin[entry.key.origin] = entry.data
    if upper.entries and not by_origin:
        raise PipelineError(
            f"reattach: no entry of the '{upper.level}' profile has an origin key; run "
            "irprof-stamp-origin on that level before correlating it"
        )
    infos = derive_op_infos(root)
    reached: list[list[str]] = []
    reach_count: dict[str, int] = defaultdict(int)
    for info in infos:
        # Containers, constants and terminators inherit locations too but do no work.
        if is_trivial_op(info.op_name):
            reached.append([])
            continue
        # A lower level's own stamps may wrap the upper ones; only profiled origins count.
        found = [o for o in info.keys.origins if o in by_origin]
        reached.append(found)
        for origin in found:
            reach_count[origin] += 1
    operation = root.operation if isinstance(root, ir.Module) else root
    builder = AttributeBuilder(operation.context)
    seen_split: dict[str, int] = defaultdict(int)
    entries: list[OpProfileEntry] = []
    table_rows: list[tuple[ProfileData, list[ir.Operation]]] = []  # the compact layout's
    for info, found in zip(infos, reached, strict=True):
        if not found:
            continue
        if len(found) == 1:
            origin = found[0]
            data = by_origin[origin]
            seen_split[origin] += 1
            parts = reach_count[origin]
            note = f" split {seen_split[origin]}/{parts}" if parts > 1 else ""
            data = ProfileData(
                **{**data.__dict__, "source": f"reattach:{origin}{note}", "event_ts": ()}
            )
        else:
            data = _merge(found, [by_origin[o] for o in found])
        if layout == "compact":
            table_rows.append((data, [info.op]))
        else:
            attach_profile(info.op, data, layout=layout, builder=builder)
        entries.append(OpProfileEntry(info.key, data, info.op_name, render(info.loc)))
    if layout == "compact":  # one table for the module, not one rebuilt per op
        per_op = tuple(name for name in PROFILE_ATTRS if name != ROW_ATTR)
        attach_table(operation, table_rows, replaces=per_op)
    lower = OpProfile(
        level=level,
        framework=upper.framework,
        entries=tuple(entries),
        totals={**upper.totals, "reattached_from": upper.level},
        source_trace=upper.source_trace,
    )
    return lower

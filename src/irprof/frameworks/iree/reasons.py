"""Why an op of an IREE bundle got no dispatch time, and which of those ops are free.

Source level: an op named only by binding loads/stores or by host-side flow ops; an op that only
re-indexes data or is computed from constants (`iree_absorbed`); an op whose work IREE absorbed
into a consumer (it is measured with that consumer, so it is not listed here); an op with no
trace left at all. Flow level: an op of a dispatch that did not run, or a host-side op.
"""

from __future__ import annotations

from dataclasses import dataclass

from irprof.correlate.payload import payload_reason
from irprof.frameworks.iree.absorbed import MissingOps, feeds_control_flow, is_reindexing
from irprof.frameworks.iree.dispatch import DispatchPlan, origins
from irprof.frameworks.iree.sites import SiteMap
from irprof.mlir.op_index import OpInfo

INITIALIZER = "_initializer_"  # dispatch keys of module initializers (run once at load)
# Host-side flow ops that only rename or re-view buffers: no run-time work of their own.
FREE_HOST_OPS = frozenset({"flow.tensor.reshape", "flow.tensor.bitcast"})
# The function's boundary: a buffer view argument or result taken as, or given from, a tensor
# (IREE's `hal` dialect spec: an ownership and type change, no data moved and no dispatch).
BOUNDARY_OPS = frozenset({"hal.tensor.import", "hal.tensor.export", "hal.tensor.barrier"})


@dataclass(frozen=True)
class NamedOrigins:
    """Source ops some IREE op names: computed in a dispatch, named by any op of a dispatch
    (loads and stores too), or named anywhere (by which key)."""

    computed_in: dict[int, str]
    in_dispatch: dict[int, str]
    anywhere: set[int]


def named_origins(
    flow_infos: list[OpInfo], plans: dict[str, DispatchPlan], sites: SiteMap, level: str
) -> NamedOrigins:
    """The source ops named by a dispatch's ops (any, loads and stores too) or by any IREE op."""
    in_dispatch: dict[int, str] = {}
    computed_in: dict[int, str] = {}
    bodies = [(flow_infos, plan) for plan in plans.values()]
    bodies += [(sites.region_infos, plan) for plan in sites.plans.values()]
    for body_infos, plan in bodies:
        for position in plan.flow_weights:
            for origin in origins(body_infos[position].location, level)[:1]:
                in_dispatch.setdefault(origin, plan.key)
        for origin, weight in plan.source_weights.items():
            if weight > 0:
                computed_in.setdefault(origin, plan.key)
    anywhere = {
        origin
        for info in (*flow_infos, *sites.region_infos)
        for origin in origins(info.location, level)[:1]
    }
    return NamedOrigins(computed_in, in_dispatch, anywhere)


def source_reasons(
    infos: list[OpInfo],
    annotated: set[int],
    ran: set[str],
    named: NamedOrigins,
    missing: MissingOps,
) -> tuple[dict[int, str], set[int]]:
    """Why each source op got no time, and the ones that do no run-time work (free).
    `ran`: the dispatch keys with profiled events."""
    reasons: dict[int, str] = {}
    free: set[int] = set()
    for position, info in enumerate(infos):
        if position in annotated:
            continue
        payload = payload_reason(info.op)
        if payload is not None:  # its work was given to the op applying its region
            reasons[position] = payload
            free.add(position)
            continue
        reindexing = is_reindexing(info.op_name)
        key = named.computed_in.get(position) or named.in_dispatch.get(position)
        if reindexing:
            # Whatever names it (a binding offset, a copy folded into a consumer's maps), it
            # moves or re-views data that its readers load: no work of its own.
            where = f"the bindings or maps of {key}" if key else "its readers' indexing maps"
            reasons[position] = f"re-indexes data only: folded into {where} (no work of its own)"
            free.add(position)
        elif named.computed_in.get(position) in ran:
            reasons[position] = (
                f"computed in {named.computed_in[position]}, whose events could not be told "
                "apart by launch site (see the warnings): they follow its executable's ops"
            )
        elif position in named.computed_in and INITIALIZER in named.computed_in[position]:
            reasons[position] = (
                f"computed once when the module loads ({named.computed_in[position]}: IREE "
                "hoisted it into an initializer), not in a profiled run"
            )
            free.add(position)
        elif position in named.computed_in:
            reasons[position] = (
                f"computed in {named.computed_in[position]}, which did not run in the profiled "
                "runs (a branch not taken, a loop that ran no iteration)"
            )
            free.add(position)  # it did no work in these runs
        elif position in missing.constant:
            reasons[position] = "computed from constants only: folded at compile time"
            free.add(position)
        elif info.op_name.endswith("call"):
            reasons[position] = (
                "a call whose callee did no dispatch work from here (its ops were folded or "
                "only re-index data)"
            )
            free.add(position)
        elif position in named.in_dispatch:
            reasons[position] = (
                f"only binding loads/stores of {named.in_dispatch[position]} carry it (no compute)"
            )
        elif position in named.anywhere:
            reasons[position] = (
                "only host-side flow ops carry it and no measured op consumes it (host work is "
                "not profiled per op)"
            )
        elif feeds_control_flow(info.op):
            reasons[position] = (
                "decides control flow (a branch predicate, a loop bound) that IREE evaluates on "
                "the host: host work is not profiled per op"
            )
        else:
            reasons[position] = (
                "no IREE op carries its origin and no measured op consumes it: folded by IREE, "
                "or absorbed into an op that keeps another location"
            )  # not free: absorbed work is real but has no measure here
    return reasons, free


def flow_reasons(
    flow_infos: list[OpInfo], plans: dict[str, DispatchPlan], annotated: set[int], ran: set[str]
) -> tuple[dict[int, str], set[int]]:
    """Why each flow op got no time: in a dispatch that never ran, or host-side; and the ones
    that cannot run (declarations, boundary ops, a named op's payload): `ran` holds the
    dispatch keys with profiled events."""
    in_plan = {position: plan.key for plan in plans.values() for position in plan.flow_weights}
    reasons: dict[int, str] = {}
    free: set[int] = set()
    for position, info in enumerate(flow_infos):
        if position in annotated:
            continue
        key = info.key
        if position in in_plan and key.name is None and key.source is None and key.origin is None:
            # Not an op of its own at run time: the scalar payload the named op applies per
            # element, like a sort's comparator (`correlate.payload`).
            reasons[position] = (
                f"in {in_plan[position]} without a location (loc(unknown): the body of a named "
                "op IREE generated): its time is on the op around it"
            )
            if in_plan[position] in ran:
                free.add(position)
        elif position in in_plan:
            reasons[position] = f"in {in_plan[position]}, which did not run in the profiled steps"
        elif _declares(info):
            reasons[position] = (
                "declaration (an executable, its export or the export's workgroup count): "
                "no run-time work of its own"
            )
            free.add(position)
        elif info.op_name in FREE_HOST_OPS or info.op_name.startswith("iree_tensor_ext."):
            reasons[position] = "host-side op that renames or re-views a buffer: no work"
            free.add(position)
        elif info.op_name in BOUNDARY_OPS:
            reasons[position] = (
                "takes or gives a function argument's buffer (an ownership change at the "
                "function's boundary): no data moved, no dispatch"
            )
            free.add(position)
        else:
            reasons[position] = "host-side op outside every dispatch (not profiled per op)"
    return reasons, free


def _declares(info: OpInfo) -> bool:
    """An executable, an export, or an op of an export's workgroup-count region."""
    if info.op_name in ("flow.executable", "flow.executable.export"):
        return True
    parent = info.op.parent
    while parent is not None:
        if parent.name == "flow.executable.export":
            return True
        parent = parent.parent
    return False

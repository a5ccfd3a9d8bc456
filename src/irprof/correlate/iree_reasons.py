"""Why an op of an IREE bundle got no dispatch time, and which of those ops are free.

Source level: an op named only by binding loads/stores or by host-side flow ops; an op that only
re-indexes data or is computed from constants (`iree_absorbed`); an op whose work IREE absorbed
into a consumer (it is measured with that consumer, so it is not listed here); an op with no
trace left at all. Flow level: an op of a dispatch that did not run, or a host-side op.
"""

from __future__ import annotations

from dataclasses import dataclass

from irprof.correlate.iree_absorbed import MissingOps, is_reindexing
from irprof.correlate.iree_dispatch import DispatchPlan, origins
from irprof.correlate.iree_sites import SiteMap
from irprof.mlir.op_index import OpInfo

# Host-side flow ops that only rename or re-view buffers: no run-time work of their own.
FREE_HOST_OPS = frozenset(
    {"flow.tensor.reshape", "flow.tensor.bitcast", "flow.executable", "flow.executable.export"}
)


@dataclass(frozen=True)
class NamedOrigins:
    """Source ops some IREE op names: inside a dispatch (by which key), or anywhere."""

    in_dispatch: dict[int, str]
    anywhere: set[int]


def named_origins(
    flow_infos: list[OpInfo], plans: dict[str, DispatchPlan], sites: SiteMap, level: str
) -> NamedOrigins:
    """The source ops named by a dispatch's ops (any, loads and stores too) or by any IREE op."""
    in_dispatch: dict[int, str] = {}
    bodies = [(flow_infos, plan) for plan in plans.values()]
    bodies += [(sites.region_infos, plan) for plan in sites.plans.values()]
    for body_infos, plan in bodies:
        for position in plan.flow_weights:
            for origin in origins(body_infos[position].location, level)[:1]:
                in_dispatch.setdefault(origin, plan.key)
    anywhere = {
        origin
        for info in (*flow_infos, *sites.region_infos)
        for origin in origins(info.location, level)[:1]
    }
    return NamedOrigins(in_dispatch, anywhere)


def source_reasons(
    infos: list[OpInfo], annotated: set[int], named: NamedOrigins, missing: MissingOps
) -> tuple[dict[int, str], set[int]]:
    """Why each source op got no time, and the ones that do no run-time work (free)."""
    reasons: dict[int, str] = {}
    free: set[int] = set()
    for position, info in enumerate(infos):
        if position in annotated:
            continue
        reindexing = is_reindexing(info.op_name)
        if position in named.in_dispatch:
            key = named.in_dispatch[position]
            if reindexing:
                reasons[position] = (
                    f"re-indexes data only: an offset or stride of {key}'s bindings "
                    "(no work of its own)"
                )
                free.add(position)
            else:
                reasons[position] = f"only binding loads/stores of {key} carry it (no compute)"
        elif position in named.anywhere and (reindexing or position in missing.constant):
            reasons[position] = "only host-side flow ops carry it (no dispatch; run-time free)"
            free.add(position)
        elif position in named.anywhere:
            reasons[position] = (
                "only host-side flow ops carry it and no measured op consumes it (host work is "
                "not profiled per op)"
            )
        elif reindexing:
            reasons[position] = (
                "re-indexes data only: IREE folded it into the indexing maps of the ops that "
                "read it (no work of its own)"
            )
            free.add(position)
        elif position in missing.constant:
            reasons[position] = "computed from constants only: folded at compile time"
            free.add(position)
        else:
            reasons[position] = (
                "no IREE op carries its origin and no measured op consumes it: folded by IREE, "
                "or absorbed into an op that keeps another location"
            )  # not free: absorbed work is real but has no measure here
    return reasons, free


def flow_reasons(
    flow_infos: list[OpInfo], plans: dict[str, DispatchPlan], annotated: set[int]
) -> tuple[dict[int, str], set[int]]:
    """Why each flow op got no time: in a dispatch that never ran, or host-side."""
    in_plan = {position: plan.key for plan in plans.values() for position in plan.flow_weights}
    reasons: dict[int, str] = {}
    free: set[int] = set()
    for position, info in enumerate(flow_infos):
        if position in annotated:
            continue
        key = info.key
        if position in in_plan and key.name is None and key.source is None and key.origin is None:
            reasons[position] = (
                f"in {in_plan[position]} without a location (loc(unknown): the body of a named "
                "op IREE generated): its time is on the op around it"
            )
        elif position in in_plan:
            reasons[position] = f"in {in_plan[position]}, which did not run in the profiled steps"
        elif info.op_name in FREE_HOST_OPS or info.op_name.startswith("iree_tensor_ext."):
            reasons[position] = "host-side or declaration op: no run-time work of its own"
            free.add(position)
        else:
            reasons[position] = "host-side op outside every dispatch (not profiled per op)"
    return reasons, free

"""Launch sites of IREE dispatches: which `flow.dispatch` ran each event, and that site's own ops.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/sites.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from iree.compiler import ir

from irprof.frameworks.iree.dispatch import DispatchPlan, add_to_plan, attribute_copy
from irprof.mlir.op_index import OpInfo
from irprof.trace.model import Trace

LAUNCH = "flow.dispatch"
REGION = "flow.dispatch.workgroups"
ONCE_ONLY = ("util.initializer",)  # sites here run at module load, not in a profiled run
MAX_SITES_LISTED = 8


@dataclass(frozen=True)
class SiteMap:
    """Launch sites by dispatch key, their own plans, and which site ran each event."""

    sites: dict[str, list[int]]  # key -> flow positions of its `flow.dispatch` ops, in order
    plans: dict[int, DispatchPlan]  # flow position of a site -> plan of its own region
    of_row: dict[int, int]  # event row -> flow position of the site that launched it
    region_module: ir.Module | None = None  # the dispatch-creation IR (owns `region_infos`)
    region_infos: list[OpInfo] = field(default_factory=list)  # its ops, in walk order
    notes: list[str] = field(default_factory=list)  # where events follow their executable


def launch_sites(flow_infos: Sequence[OpInfo]) -> dict[str, list[int]]:
    """Dispatch key -> positions of the `flow.dispatch` ops that launch it, in program order."""
    found: dict[str, list[int]] = defaultdict(list)
    for position, info in enumerate(flow_infos):
        if info.op_name != LAUNCH or "entry_points" not in info.op.attributes:
            continue
        if _inside(info.op, ONCE_ONLY):
            continue
        for entry in info.op.attributes["entry_points"]:
            nested = ir.SymbolRefAttr(entry).value
            if nested:
                found[nested[-1]].append(position)
    return dict(found)


def _inside(op: ir.Operation, names: tuple[str, ...]) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name in names:
            return True
        parent = parent.parent
    return False


def region_plans(
    flow_infos: Sequence[OpInfo],
    region_infos: Sequence[OpInfo],
    sites: dict[str, list[int]],
    level: str,
    functions: frozenset[int],
) -> tuple[dict[int, DispatchPlan], list[str]]:
    """Flow position of each site -> the plan of its dispatch-creation region (see module doc)."""
    key_of = {position: key for key, positions in sites.items() for position in positions}
    launches = sorted(key_of)
    regions = [
        position
        for position, info in enumerate(region_infos)
        if info.op_name == REGION and not _inside(info.op, ONCE_ONLY)
    ]
    if len(regions) != len(launches):
        return {}, [
            f"dispatch-creation IR has {len(regions)} dispatch regions for {len(launches)} "
            "flow.dispatch sites: each dispatch follows its executable's ops"
        ]
    plans: dict[int, DispatchPlan] = {}
    for launch, region in zip(launches, regions, strict=True):
        if str(flow_infos[launch].location) != str(region_infos[region].location):
            return {}, [
                f"dispatch region {region} of the dispatch-creation IR and flow.dispatch "
                f"{launch} disagree on their location: each dispatch follows its executable's ops"
            ]
        plan = DispatchPlan(key_of[launch])
        for position in _region_positions(region_infos, region):
            add_to_plan(plan, position, region_infos[position], level, functions)
        attribute_copy(plan, region_infos[region].location, level, functions)
        plans[launch] = plan
    return plans, []


def _region_positions(infos: Sequence[OpInfo], region: int) -> range:
    """Positions of the ops nested in the region op at `region` (contiguous in pre-order)."""
    end = region + 1
    while end < len(infos) and _inside(infos[end].op, (REGION,)):
        end += 1
    return range(region + 1, end)


def assign_rows(
    trace: Trace, rows: Sequence[int], sites: dict[str, list[int]]
) -> tuple[dict[int, int], list[str]]:
    """Event row -> flow position of its launch site (see module doc), and notes on the rest."""
    by_run: dict[tuple[object, str], list[int]] = defaultdict(list)
    for row, args in zip(rows, trace.args_many(list(rows)), strict=True):
        by_run[(args.get("submission_id"), trace.name_of(row))].append(row)
    assigned: dict[int, int] = {}
    uneven: dict[str, tuple[int, int]] = {}
    for (_, key), events in by_run.items():
        positions = sites.get(key, [])
        if len(positions) == 1:
            assigned.update(dict.fromkeys(events, positions[0]))
        elif positions and len(events) == len(positions):
            ordered = sorted(events, key=lambda row: int(trace.ts_ns[row]))
            assigned.update(zip(ordered, positions, strict=True))
        elif positions:
            uneven[key] = (len(events), len(positions))
    notes = [
        f"{key}: {events} events in a run for {count} launch sites (a loop or a branch): its "
        "time follows the executable's own ops"
        for key, (events, count) in sorted(uneven.items())
    ]
    return assigned, notes


@dataclass
class LaunchTimes:
    """The time each launch site of each dispatch key ran, and the sites that shared events
    they could not be told apart on (`assign_rows`)."""

    by_key: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    shared: set[int] = field(default_factory=set)

    def add(self, key: str, launched: Sequence[int], duration: int) -> None:
        """One event of `key`, run by its one site or shared evenly by `launched`."""
        sites = self.by_key[key]
        for position in launched:
            sites[position] = sites.get(position, 0.0) + duration / len(launched)
        if len(launched) > 1:
            self.shared.update(launched)

    def listed(self, keys: Sequence[str], label: Callable[[int], str]) -> str:
        """ "; launched at SITE N ns, ..." for the executables `keys` ("" without a site)."""
        found = [
            f"{label(position)} {round(ns)} ns"
            for key in keys
            for position, ns in sorted(self.by_key.get(key, {}).items())
        ]
        if len(found) > MAX_SITES_LISTED:
            found = [*found[:MAX_SITES_LISTED], f"{len(found) - MAX_SITES_LISTED} more"]
        return "; launched at " + ", ".join(found) if found else ""

"""IREE correlator: profiled dispatches -> their `flow.executable` -> compute ops -> source ops.

The capture compiled an origin-stamped copy of the source, so every flow op names the source
op it came from (`iree_dispatch.origins`). For one dispatch invocation (a `DISPATCH` event of
the `iree-profile` trace, warm-up runs left out by the manifest's `warmup_until_ns`):

- level `flow`: its time is shared among the ops of the dispatch's function by estimated work
  (`iree_dispatch`: iteration points x body ops; loads/stores get 0 ns but record the dispatch);
  the host-side `flow.dispatch` op that launches it gets the whole time, inclusively.
- the source level (`stablehlo`, `torch`, `tosa`, `linalg`): the same work shares summed per
  source op, so a dispatch that fused several source ops is a group whose members' shares add up
  to its time (`fused_with` names the other members, `source` gives each share and the basis);
  `func.call` ops an op was inlined through get its share inclusively.

Dispatches no export matches, and work whose op carries no origin, are unattributed and listed.
"""

from __future__ import annotations

from collections import defaultdict

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.payload import payload_owners
from irprof.coverage import UnmatchedEvent
from irprof.errors import BundleError, CorrelationError
from irprof.frameworks.iree.absorbed import MissingOps, absorb_into_plans, classify_missing
from irprof.frameworks.iree.dispatch import DispatchPlan, plan_dispatches
from irprof.frameworks.iree.reasons import (
    NamedOrigins,
    flow_reasons,
    named_origins,
    source_reasons,
)
from irprof.frameworks.iree.sites import SiteMap, assign_rows, launch_sites, region_plans
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.trace.model import EventKind, Trace

FLOW = "flow"
SHARE_BASIS = "share by estimated work (iteration points x body ops)"


class IreeCorrelator:
    """Joins IREE dispatch events to the flow IR and to the stamped source IR."""

    framework = "iree"
    levels: tuple[str, ...] = ("stablehlo", "torch", "tosa", "linalg", FLOW)

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Correlate the bundle's dispatch events with `RUN/ir/<level>.mlir`."""
        if options.fused_time_rule not in ("default", "flops"):
            raise CorrelationError(
                f"unknown fused-time rule '{options.fused_time_rule}' for IREE (known: default, "
                "flops: both share a dispatch by estimated work)"
            )
        manifest = bundle.manifest()
        source_level = manifest.option_str("origin_level", manifest.ir_levels[0])
        if level not in (source_level, FLOW):
            raise BundleError(
                f"{bundle.root}: the iree correlator annotates '{source_level}' and '{FLOW}'"
            )
        warmup_until = manifest.options.get("warmup_until_ns", 0)
        if not isinstance(warmup_until, int):
            raise BundleError(f"{bundle.manifest_path}: options.warmup_until_ns must be an int")
        trace = bundle.trace()
        rows = [
            row
            for row in trace.rows_of_kind(EventKind.DISPATCH).tolist()
            if int(trace.ts_ns[row]) >= warmup_until
        ]
        if not rows:
            raise CorrelationError(f"{bundle.primary_trace_path}: no dispatch event to correlate")
        flow_infos = derive_op_infos(bundle.ir(FLOW))
        source_infos = derive_op_infos(bundle.ir(source_level))
        functions = frozenset(
            position
            for position, info in enumerate(source_infos)
            if info.op_name in ("func.func", "util.func", "builtin.module")
        )
        plans = plan_dispatches(flow_infos, source_level, functions)
        sites = _site_map(bundle, trace, rows, flow_infos, source_level, functions)
        fold_payload_weights([*plans.values(), *sites.plans.values()], source_infos)
        named = named_origins(flow_infos, plans, sites, source_level)
        missing = MissingOps(frozenset(), {})
        if level != FLOW:
            missing = _absorb(source_infos, plans, sites, named, functions)
        infos = flow_infos if level == FLOW else source_infos
        return _correlate(
            trace,
            rows,
            plans,
            sites,
            flow_infos,
            infos,
            level,
            (named, missing),
            manifest.steps,
            str(bundle.primary_trace_path.relative_to(bundle.root)),
        )


def fold_payload_weights(plans: list[DispatchPlan], infos: list[OpInfo]) -> None:
    """Give the work of a region a source op applies (its comparator or combiner, stamped on
    the dispatch's body ops with their own origins) to that op (`correlate.payload`)."""
    owners = payload_owners(infos)
    for plan in plans:
        for position in [position for position in plan.source_weights if position in owners]:
            plan.source_weights[owners[position]] += plan.source_weights.pop(position)


def _absorb(
    infos: list[OpInfo],
    plans: dict[str, DispatchPlan],
    sites: SiteMap,
    named: NamedOrigins,
    functions: frozenset[int],
) -> MissingOps:
    """Find the source ops IREE absorbed into a measured consumer and put them in its plans."""
    measured = {
        position
        for plan in (*plans.values(), *sites.plans.values())
        for position, weight in plan.source_weights.items()
        if weight > 0
    }
    calls = frozenset(
        position for position, info in enumerate(infos) if info.op_name.endswith("call")
    )
    missing = classify_missing(infos, measured, set(named.in_dispatch), functions | calls)
    # Plans are used per event: a launch site's own when it has one, else its executable's.
    sited = {plan.key for plan in sites.plans.values()}
    absorb_into_plans(
        [*sites.plans.values(), *(plan for key, plan in plans.items() if key not in sited)],
        missing.absorbed,
        infos,
    )
    absorb_into_plans(
        [plan for key, plan in plans.items() if key in sited], missing.absorbed, infos
    )
    return missing


def _site_map(
    bundle: RunBundle,
    trace: Trace,
    rows: list[int],
    flow_infos: list[OpInfo],
    source_level: str,
    functions: frozenset[int],
) -> SiteMap:
    """Launch sites, their own regions' plans (when the capture kept the dispatch-creation IR;
    bundles without it attribute each dispatch by its executable), and each event's site."""
    sites = launch_sites(flow_infos)
    of_row, notes = assign_rows(trace, rows, sites)
    regions = bundle.manifest().option_str("dispatch_regions", "")
    if not regions:
        return SiteMap(sites, {}, of_row, notes=notes)
    # The module must outlive its ops' infos: the SiteMap keeps it.
    what = "dispatch-creation IR"
    module = load_module(
        bundle.member(regions, what=what),
        make_context(),
        data=bundle.read_member(regions, what=what),
    )
    region_infos = derive_op_infos(module)
    plans, region_notes = region_plans(flow_infos, region_infos, sites, source_level, functions)
    return SiteMap(sites, plans, of_row, module, region_infos, [*region_notes, *notes])


def _correlate(
    trace: Trace,
    rows: list[int],
    plans: dict[str, DispatchPlan],
    sites: SiteMap,
    flow_infos: list[OpInfo],
    infos: list[OpInfo],
    level: str,
    source_ops: tuple[NamedOrigins, MissingOps],
    steps: int,
    source_trace: str,
) -> CorrelationResult:
    is_flow = level == FLOW
    op_time: dict[int, dict[int, float]] = defaultdict(dict)
    inclusive: dict[int, dict[int, float]] = defaultdict(dict)
    members: dict[int, set[str]] = defaultdict(set)  # position -> dispatch groups it ran in
    shares: dict[int, dict[str, float]] = defaultdict(dict)
    unmatched: dict[str, UnmatchedEvent] = {}
    located = _located_targets(infos) if is_flow else {}
    profiled = attributed = 0.0
    for row in rows:
        key = trace.name_of(row)
        duration = int(trace.dur_ns[row])
        profiled += duration
        site = sites.of_row.get(row)
        plan = plans.get(key)
        if not is_flow and site is not None and plan is not None:
            plan = sites.plans.get(site, plan)  # this instance's own source ops
        weights, calls, total = _weights(plan, is_flow, located)
        if plan is None or total <= 0 or not weights:
            why = (
                f"no flow.executable export named '{key}' in ir/{FLOW}.mlir"
                if plan is None
                else "no compute op of the dispatch carries a source origin"
            )
            _add_unmatched(unmatched, key, duration, why)
            continue
        resolved = sum(weights.values())
        attributed += duration * resolved / total
        if resolved < total:
            _add_unmatched(
                unmatched,
                f"{key} (unstamped part)",
                round(duration * (1 - resolved / total)),
                "compute ops without an origin stamp in their location",
            )
        for position, weight in weights.items():
            op_time[position][row] = op_time[position].get(row, 0.0) + duration * weight / total
            # The group is one launch site's dispatch (an executable's, at the flow level).
            members[position].add(key if is_flow or site is None else f"{key}@{site}")
            shares[position][key] = weight / total
        for position, weight in calls.items():
            # Outer stamps also name the enclosing function ops; only call ops get inclusive time.
            if infos[position].op_name.endswith("call"):
                inclusive[position][row] = duration * weight / total
        if is_flow:
            # The launch that ran it; without one, its sites share it evenly.
            launched = [site] if site is not None else sites.sites.get(key, [])
            for position in launched:
                inclusive[position][row] = duration / len(launched)
    profiled_ns = int(profiled)
    positioned = _entries(
        trace, infos, op_time, inclusive, members, shares, profiled_ns, level, source_ops[1]
    )
    entries = [entry for _, entry in positioned]
    annotated = {position for position, _ in positioned}
    reasons, not_executed = (
        flow_reasons(flow_infos, plans, annotated)
        if is_flow
        else source_reasons(infos, annotated, {trace.name_of(row) for row in rows}, *source_ops)
    )
    coverage = coverage_for(
        [(info.op, info.key) for info in infos],
        annotated,
        level=level,
        profiled_ns=profiled_ns,
        attributed_ns=round(attributed),
        unmatched_events=list(unmatched.values()),
        reasons=reasons,
        not_executed=not_executed,
        warnings=[*trace.warnings, *sites.notes],
    )
    opprofile = OpProfile(
        level=level,
        framework="iree",
        entries=tuple(entries),
        totals={
            "profiled_ns": profiled_ns,
            "attributed_ns": round(attributed),
            "steps": steps,
            "dispatch_events": len(rows),
            "dispatches": len({trace.name_of(row) for row in rows}),
            "fused_time_rule": SHARE_BASIS,
        },
        source_trace=source_trace,
    )
    return CorrelationResult(opprofile, coverage)


def _weights(
    plan: DispatchPlan | None, is_flow: bool, located: dict[int, int]
) -> tuple[dict[int, float], dict[int, float], float]:
    """(target position -> weight, call position -> weight, total weight) of one dispatch."""
    if plan is None:
        return {}, {}, 0.0
    if is_flow:
        weights: dict[int, float] = defaultdict(float)
        for position, weight in plan.flow_weights.items():
            weights[located.get(position, position)] += weight
        total = sum(weights.values())
        if total <= 0 and weights:  # nothing weighable (a pure copy): every op evenly
            weights = dict.fromkeys(weights, 1.0)
            total = float(len(weights))
        return weights, {}, total
    return dict(plan.source_weights), dict(plan.call_weights), plan.total_weight


def _located_targets(infos: list[OpInfo]) -> dict[int, int]:
    """Op without any location key -> its nearest ancestor with one: IREE gives the bodies of
    named ops it generates `loc(unknown)`, and their work is the named op's."""
    position_of = {info.op: position for position, info in enumerate(infos)}
    targets: dict[int, int] = {}
    for position, info in enumerate(infos):
        if info.key.name or info.key.source or info.key.origin:
            continue
        parent = info.op.parent
        while parent is not None:
            owner = position_of.get(parent)
            if owner is None:
                break
            key = infos[owner].key
            if key.name or key.source or key.origin:
                targets[position] = owner
                break
            parent = parent.parent
    return targets


def _add_unmatched(table: dict[str, UnmatchedEvent], name: str, ns: int, reason: str) -> None:
    old = table.get(name)
    count = old.count + 1 if old else 1
    total = (old.total_ns if old else 0) + ns
    table[name] = UnmatchedEvent(name, total, count, reason)


def _label(info: OpInfo, position: int) -> str:
    return info.key.name or f"{info.op_name}#{position}"


def _entries(
    trace: Trace,
    infos: list[OpInfo],
    op_time: dict[int, dict[int, float]],
    inclusive: dict[int, dict[int, float]],
    members: dict[int, set[str]],
    shares: dict[int, dict[str, float]],
    profiled_ns: int,
    level: str,
    missing: MissingOps,
) -> list[tuple[int, OpProfileEntry]]:
    """(position, entry) per op with time; ops whose key names nothing are left out."""
    by_dispatch: dict[str, set[int]] = defaultdict(set)
    for position, keys in members.items():
        for key in keys:
            by_dispatch[key].add(position)
    entries: list[tuple[int, OpProfileEntry]] = []
    for position in sorted(set(op_time) | set(inclusive)):
        info = infos[position]
        if info.key.name is None and info.key.source is None and info.key.origin is None:
            continue  # an ordinal alone would designate every op
        if position in op_time:
            times = op_time[position]
            fused = {
                _label(infos[other], other)
                for key in members[position]
                for other in by_dispatch[key]
                if other != position
            }
            source = (
                "iree:"
                + ", ".join(f"{key} {share:.1%}" for key, share in sorted(shares[position].items()))
                + f" ({SHARE_BASIS})"
            )
            if position in missing.absorbed:
                consumers = ", ".join(
                    _label(infos[other], other) for other in missing.absorbed[position]
                )
                source += (
                    f"; absorbed into {consumers}: no IREE op carries its location, its work "
                    "is estimated from its shapes"
                )
        else:
            times = inclusive[position]
            fused = set()
            source = f"iree:inclusive ({'dispatch launch' if level == FLOW else 'call'})"
        ordered = sorted(times)
        durations = [round(times[row]) for row in ordered]
        entries.append(
            (
                position,
                OpProfileEntry(
                    key=OpKey(
                        name=info.key.name,
                        source=info.key.source,
                        origin=info.key.origin,
                        ordinal=info.key.ordinal,
                    ),
                    data=ProfileData.from_durations(
                        durations,
                        min(int(trace.ts_ns[row]) for row in ordered),
                        profiled_ns,
                        kernels=sorted({trace.name_of(row) for row in ordered}),
                        fused_with=sorted(fused - {_label(info, position)}),
                        source=source,
                    ),
                    op_name=info.op_name,
                    location=" <- ".join(info.keys.chain[:2]),
                ),
            )
        )
    return entries


CORRELATOR = IreeCorrelator()

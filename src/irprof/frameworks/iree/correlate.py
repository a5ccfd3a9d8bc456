"""IREE correlator: profiled dispatches -> their `flow.executable` -> compute ops -> source ops.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/correlate.py`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.correlate.payload import payload_owners
from irprof.errors import BundleError, CorrelationError
from irprof.frameworks.iree.absorbed import MissingOps, absorb_into_plans, classify_missing
from irprof.frameworks.iree.dispatch import DispatchPlan, plan_dispatches
from irprof.frameworks.iree.reasons import (
    NamedOrigins,
    flow_reasons,
    named_origins,
    source_reasons,
)
from irprof.frameworks.iree.sites import (
    LaunchTimes,
    SiteMap,
    assign_rows,
    launch_sites,
    region_plans,
)
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.opprofile import OpKey, OpProfileEntry
from irprof.trace.model import EventKind, Trace

FLOW = "flow"
SHARE_BASIS = "share by estimated work (iteration points x body ops)"
# How a profile says it repeats time other ops hold (`analyses.profiled_ops.ProfiledOp.inclusive`):
# sums and rankings leave such an op out.
INCLUSIVE = ":inclusive"


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
        return _correlate_dispatches(
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


def _correlate_dispatches(
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
    """Every dispatch event to the `Ledger`: shared by work over its ops (the part of the work
    no op carries an origin for is unattributed), and inclusively to its launch site (flow) or
    to the call ops its source ops were inlined through."""
    is_flow = level == FLOW
    ledger = Ledger()
    work_shares: dict[int, dict[str, float]] = defaultdict(dict)  # for each op's `source` text
    located = _located_targets(infos) if is_flow else {}
    launches = LaunchTimes()
    alone_with_rest: dict[int, dict[str, int]] = defaultdict(dict)  # op -> group -> measured ns
    profiled_ns = 0
    for row in rows:
        key = trace.name_of(row)
        duration, ts = int(trace.dur_ns[row]), int(trace.ts_ns[row])
        profiled_ns += duration
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
            ledger.unattributed(key, duration, why)
            continue
        positions = list(weights)
        resolved = sum(weights.values())
        # The group is one launch site's dispatch (an executable's, at the flow level).
        group = key if is_flow or site is None else f"{key}@{site}"
        if resolved < total:
            rest = (
                total - resolved,
                f"{key} (unstamped part)",
                "compute ops without an origin stamp in their location",
            )
            ledger.record_with_rest(
                key, ts, duration, positions, [weights[p] for p in positions], rest,
                basis="flops", group=group,
            )  # fmt: skip
            if len(positions) == 1:
                # One op and the unstamped rest: its time is still an estimated share.
                shared = alone_with_rest[positions[0]]
                shared[group] = shared.get(group, 0) + duration
        else:
            ledger.record(
                key, ts, duration, positions, weights=[weights[p] for p in positions],
                basis="flops", group=group,
            )  # fmt: skip
        for position, weight in weights.items():
            work_shares[position][key] = weight / total
        for position, weight in calls.items():
            # Outer stamps also name the enclosing function ops; only call ops get inclusive time.
            if infos[position].op_name.endswith("call"):
                ledger.include(position, row, key, ts, duration * weight / total)
        if is_flow:
            # The launch that ran it; without one, its sites share it evenly.
            launched = [site] if site is not None else sites.sites.get(key, [])
            for position in launched:
                ledger.include(position, row, key, ts, duration / len(launched))
            launches.add(key, launched, duration)
    entries = _dispatch_entries(
        infos, ledger, work_shares, profiled_ns, level, source_ops[1], launches
    )
    _mark_shares_of_a_rest(entries, alone_with_rest)
    _check_within_profiled(entries, profiled_ns, f"{source_trace} -> {level}")
    reasons, not_executed = (
        flow_reasons(flow_infos, plans, set(entries), {trace.name_of(row) for row in rows})
        if is_flow
        else source_reasons(infos, set(entries), {trace.name_of(row) for row in rows}, *source_ops)
    )
    return finish_level(
        ledger,
        infos,
        entries,
        level=level,
        framework="iree",
        profiled_ns=profiled_ns,
        where=f"{source_trace} -> {level}",
        reasons=reasons,
        not_executed=not_executed,
        warnings=[*trace.warnings, *sites.notes],
        totals={
            "steps": steps,
            "dispatch_events": len(rows),
            "dispatches": len({trace.name_of(row) for row in rows}),
            "fused_time_rule": SHARE_BASIS,
        },
        source_trace=source_trace,
    )


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


def _inclusive_source(position: int, level: str, launches: LaunchTimes) -> str:
    """What an inclusive profile holds: a launch site's own dispatches, or a call's."""
    if level != FLOW:
        return f"iree:call, the dispatch work of its callee's ops{INCLUSIVE}"
    if position in launches.shared:
        return (
            "iree:dispatch launch, its events shared evenly with the other sites of its "
            f"executable (not told apart by launch site){INCLUSIVE}"
        )
    return f"iree:dispatch launch, the time of its own launches{INCLUSIVE}"


def _label(info: OpInfo, position: int) -> str:
    return info.key.name or f"{info.op_name}#{position}"


def _mark_shares_of_a_rest(
    entries: dict[int, OpProfileEntry], alone_with_rest: dict[int, dict[str, int]]
) -> None:
    """An op that shared its dispatch only with the work no op is named for holds an estimated
    share too: its group is the dispatch, of two parts (the op and that rest), split by work."""
    for position, groups in alone_with_rest.items():
        entry = entries.get(position)
        if entry is None or entry.data.group:
            continue
        group = max(groups, key=lambda name: (groups[name], name))
        data = dataclasses.replace(
            entry.data,
            group=group,
            group_total_ns=groups[group],
            group_size=2,
            share_basis="flops",
        )
        entries[position] = dataclasses.replace(entry, data=data)


def _check_within_profiled(
    entries: dict[int, OpProfileEntry], profiled_ns: int, where: str
) -> None:
    """Refuse a level whose per-op rows add up past the profiled time: every op that repeats
    time others hold (a launch site, a call) must be marked inclusive."""
    counted = sum(
        entry.data.total_ns
        for entry in entries.values()
        if not entry.data.source.endswith(INCLUSIVE)
    )
    if counted > profiled_ns:
        raise CorrelationError(
            f"{where}: the ops' rows add up to {counted} ns, more than the {profiled_ns} ns "
            "profiled: an op repeating other ops' time is not marked inclusive; this is a "
            "correlator bug"
        )


def _dispatch_entries(
    infos: list[OpInfo],
    ledger: Ledger,
    work_shares: dict[int, dict[str, float]],
    profiled_ns: int,
    level: str,
    missing: MissingOps,
    launches: LaunchTimes,
) -> dict[int, OpProfileEntry]:
    """Position -> entry of every op with time (its shares, else its inclusive view); ops
    whose key names nothing are left out. At the flow level an executable's ops hold the time
    of all its launches, listed by site, and each launch site inclusively its own."""
    entries: dict[int, OpProfileEntry] = {}
    for position in sorted(set(ledger.accounts) | set(ledger.inclusive)):
        info = infos[position]
        if info.key.name is None and info.key.source is None and info.key.origin is None:
            continue  # an ordinal alone would designate every op
        if position in ledger.accounts:
            source = (
                "iree:"
                + ", ".join(
                    f"{key} {share:.1%}" for key, share in sorted(work_shares[position].items())
                )
                + f" ({SHARE_BASIS})"
            )
            if level == FLOW:
                source += launches.listed(
                    sorted(work_shares[position]), lambda site: _label(infos[site], site)
                )
            if position in missing.absorbed:
                consumers = ", ".join(
                    _label(infos[other], other) for other in missing.absorbed[position]
                )
                source += (
                    f"; absorbed into {consumers}: no IREE op carries its location, its work "
                    "is estimated from its shapes"
                )
            data = ledger.profile_data(position, profiled_ns, lambda p: _label(infos[p], p))
            data = dataclasses.replace(
                data,
                kernels=tuple(sorted(set(data.kernels))),
                fused_with=tuple(sorted(set(data.fused_with) - {_label(info, position)})),
                source=source,
            )
        else:
            data = ledger.inclusive_data(
                position, profiled_ns, source=_inclusive_source(position, level, launches)
            )
        entries[position] = OpProfileEntry(
            key=OpKey(
                name=info.key.name,
                source=info.key.source,
                origin=info.key.origin,
                ordinal=info.key.ordinal,
            ),
            data=data,
            op_name=info.op_name,
            location=" <- ".join(info.keys.chain[:2]),
        )
    return entries


CORRELATOR = IreeCorrelator()

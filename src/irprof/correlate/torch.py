"""PyTorch correlator: torch.profiler `aten::*` events -> torch-dialect ops -> linalg ops.

torch level. `torch_events` joins each top-level `aten::*` event to a call node of the exported
program (`RUN/ir/torch.fx.json`) by aten name and module-instance chain, execution order breaking
ties between identical calls. The node then names its ops: the capture put
`"<module>|<node>|<target>"` in every op's NameLoc. A call the decomposition split into several
ops (linear -> view + permute + addmm + view), or an eager fused kernel covering several calls,
gives its time to all of them, each listing the others in `fused_with`. Shares, by
`CorrelationOptions.fused_time_rule`: `default` splits the time equally among the compute ops and
gives metadata-only ops (view, permute, expand...) 0 ns, since eager runs those as stride
changes; `split` shares it equally among all ops.

linalg level. The torch ops were stamped `irprof.origin=torch#<index>` before lowering; the torch
level's profile is re-attached to the lowered ops through those stamps (`irprof-reattach`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from irprof.bundle import RunBundle
from irprof.capture.torch_locations import FxNodeName
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.torch_events import FxCall, load_fx_calls, match_events, top_level_op_events
from irprof.coverage import UnmatchedEvent, is_trivial_op
from irprof.errors import CorrelationError
from irprof.mlir.locations import render
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.mlir.profile_attrs import has_profile
from irprof.mlir.reattach import reattach
from irprof.opprofile import OpProfile, OpProfileEntry, ProfileData
from irprof.trace.model import Trace

DEFAULT_FX_NODES = "ir/torch.fx.json"
# ATen ops that only change tensor metadata in eager mode (strides, shapes): when a decomposed
# call also has a compute op (linear -> view + permute + addmm + view), the event's time goes to
# the compute ops under the default rule; the view ops are still annotated, with 0 ns.
VIEW_OPS = frozenset(
    {
        "view", "_unsafe_view", "reshape", "expand", "squeeze", "unsqueeze", "t", "transpose",
        "permute", "alias", "slice", "select", "as_strided", "detach", "unflatten",
    }
)  # fmt: skip
FUSED_TIME_RULES = ("default", "split")


def ops_by_node(infos: Sequence[OpInfo], *, trivial: bool = False) -> dict[str, list[int]]:
    """FX node name -> walk positions of its non-trivial ops (all ops with `trivial`)."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for position, info in enumerate(infos):
        if not trivial and is_trivial_op(info.op_name):
            continue
        for name in info.keys.names:
            parsed = FxNodeName.parse(name)
            if parsed is not None:
                grouped[parsed.node].append(position)
                break
    return grouped


def is_view_op(info: OpInfo) -> bool:
    """The op's FX target (from its NameLoc) is a metadata-only ATen op."""
    for name in info.keys.names:
        parsed = FxNodeName.parse(name)
        if parsed is not None:
            parts = parsed.target.split(".")  # aten.permute.default
            return len(parts) > 1 and parts[1] in VIEW_OPS
    return False


def no_op_reason(nodes: Sequence[str], named_by_any_op: set[str]) -> str:
    """Why the event's call node(s) have no op that can take its time."""
    if any(node in named_by_any_op for node in nodes):
        return f"FX node(s) {tuple(nodes)} became only constants or other trivial ops"
    return (
        f"no op of the torch-level IR is named after FX node(s) {tuple(nodes)}: the "
        "decomposition removed the call or named its ops after another node"
    )


def _shares(duration: int, weights: Sequence[int]) -> list[int]:
    """`duration` split by integer `weights` into integer shares that add up exactly."""
    total = sum(weights)
    shares = [duration * w // total for w in weights]
    leftover = duration - sum(shares)
    for index, weight in enumerate(weights):
        if leftover == 0:
            break
        if weight:
            shares[index] += 1
            leftover -= 1
    return shares


def share_weights(infos: Sequence[OpInfo], positions: Sequence[int], rule: str) -> list[int]:
    """Relative share of a call's time per op: `split` equal; `default` compute ops only."""
    if rule == "split":
        return [1] * len(positions)
    weights = [0 if is_view_op(infos[p]) else 1 for p in positions]
    return weights if any(weights) else [1] * len(positions)


def correlate_torch_level(
    bundle: RunBundle, trace: Trace, calls: Sequence[FxCall], rule: str = "default"
) -> CorrelationResult:
    """The torch-dialect level: events -> call nodes -> ops."""
    infos = derive_op_infos(bundle.ir("torch"))
    grouped = ops_by_node(infos)
    named_by_any_op = set(ops_by_node(infos, trivial=True))
    events = top_level_op_events(trace)
    matched = match_events(events, calls)
    profiled_ns = sum(event.dur_ns for event in events)
    durations: dict[int, list[int]] = defaultdict(list)
    first_ts: dict[int, int] = {}
    kernels: dict[int, list[str]] = defaultdict(list)
    lost: dict[str, list[int]] = defaultdict(list)
    reasons: dict[str, str] = {}
    attributed_ns = 0
    shared_with: dict[int, set[int]] = defaultdict(set)
    nodes_at: dict[int, set[str]] = defaultdict(set)
    for event in events:
        nodes = matched.nodes_of.get(event.row, ())
        positions = [p for node in nodes for p in grouped.get(node, [])]
        if not positions:
            reason = matched.unmatched.get(event.row) or no_op_reason(nodes, named_by_any_op)
            lost[event.name].append(event.dur_ns)
            reasons.setdefault(event.name, reason)
            continue
        attributed_ns += event.dur_ns
        weights = share_weights(infos, positions, rule)
        for position, share in zip(positions, _shares(event.dur_ns, weights), strict=True):
            durations[position].append(share)
            first_ts.setdefault(position, event.ts_ns)
            kernels[position].append(event.name)
            shared_with[position].update(positions)
            nodes_at[position].update(nodes)
    entries = []
    for position in sorted(durations):
        info = infos[position]
        siblings = sorted(shared_with[position] - {position})
        data = ProfileData.from_durations(
            durations[position],
            first_ts[position],
            profiled_ns,
            kernels=kernels[position],
            fused_with=[str(infos[p].key.name) for p in siblings],
            source="torch.profiler:" + "+".join(sorted(nodes_at[position]))
            + (f" (shared by {len(siblings) + 1} ops, rule {rule})" if siblings else ""),
        )  # fmt: skip
        entries.append(OpProfileEntry(info.key, data, info.op_name, render(info.loc)))
    unmatched_events = [
        UnmatchedEvent(name, sum(durs), len(durs), reasons[name]) for name, durs in lost.items()
    ]
    warnings = []
    if matched.source_disagreements:
        warnings.append(
            f"{len(matched.source_disagreements)} of {len(matched.nodes_of)} joined events do not "
            "have the FX node's source frame on their call stack; the trace may come from a "
            "different version of the script"
        )
    coverage = coverage_for(
        [(info.op, info.key) for info in infos],
        durations.keys(),
        warnings=warnings,
        level="torch",
        profiled_ns=profiled_ns,
        attributed_ns=attributed_ns,
        unmatched_events=unmatched_events,
        reasons=_op_reasons(infos, grouped, matched.matched_nodes()),
    )
    opprofile = OpProfile(
        level="torch",
        framework="torch",
        entries=tuple(entries),
        totals={
            "profiled_ns": profiled_ns,
            "attributed_ns": attributed_ns,
            "events": len(events),
            "events_matched": len(events) - sum(len(d) for d in lost.values()),
            "steps": bundle.manifest().steps,
        },
        source_trace=_trace_name(bundle),
    )
    return CorrelationResult(opprofile, coverage)


def _op_reasons(
    infos: Sequence[OpInfo], grouped: dict[str, list[int]], profiled_nodes: set[str]
) -> dict[int, str]:
    """Why each non-trivial op without profile got none."""
    reasons = {}
    named = {p for ps in grouped.values() for p in ps}
    for node, positions in grouped.items():
        if node not in profiled_nodes:
            for position in positions:
                reasons[position] = f"no top-level aten event was joined to FX node '{node}'"
    for position, info in enumerate(infos):
        if position not in named and not is_trivial_op(info.op_name):
            reasons[position] = "location names no FX node (not made by `irprof capture torch`)"
    return reasons


def correlate_linalg_level(bundle: RunBundle, upper: OpProfile) -> CorrelationResult:
    """The linalg level: the torch level's profile re-attached through origin stamps.

    The bodies of named linalg ops (`linalg.matmul`'s mulf/addf) are not in the printed IR: the
    parser rebuilds them without locations. They are left out of the op counts (and counted in
    `extra["implicit_body_ops"]`) since no profile could name them and no reader sees them.
    """
    module = bundle.load_ir("linalg")  # reattach annotates it: keep the cached one pristine
    lower = reattach(module, upper, level="linalg")
    all_infos = derive_op_infos(module)
    infos = [info for info in all_infos if not _is_implicit_body(info)]
    annotated = {p for p, info in enumerate(infos) if has_profile(info.op)}
    reached = {o for info in infos for o in info.keys.origins}
    attributed_ns = sum(e.data.total_ns for e in upper.entries if e.key.origin in reached)
    reasons = {
        position: (
            f"origin {info.keys.origins[0]} received no time at torch level"
            if info.keys.origins
            else "no irprof.origin stamp in the location (created by lowering)"
        )
        for position, info in enumerate(infos)
    }
    located = [
        p
        for p, info in enumerate(infos)
        if _is_top_level(info) and not is_trivial_op(info.op_name) and _has_location(info)
    ]
    coverage = coverage_for(
        [(info.op, info.key) for info in infos],
        annotated,
        level="linalg",
        profiled_ns=int(upper.totals.get("profiled_ns", 0)),
        attributed_ns=attributed_ns,
        reasons=reasons,
    )
    extra = {
        "nonbody_located_ops": len(located),
        "nonbody_located_annotated": sum(1 for p in located if p in annotated),
        "implicit_body_ops": len(all_infos) - len(infos),
        "reattached_from": "torch",
    }
    return CorrelationResult(lower, dataclasses.replace(coverage, extra=extra))


def _is_implicit_body(info: OpInfo) -> bool:
    """An op of a named linalg op's region that the printed IR does not show (no location)."""
    parent = info.op.parent
    return (
        parent is not None
        and parent.name.startswith("linalg.")
        and parent.name != "linalg.generic"
        and not _has_location(info)
    )


def _is_top_level(info: OpInfo) -> bool:
    """An op directly in a function body, not inside a linalg op's region."""
    parent = info.op.parent
    return parent is not None and parent.name in ("func.func", "util.func")


def _has_location(info: OpInfo) -> bool:
    """The op knows where it came from (a name, a source position or an origin stamp)."""
    return bool(info.keys.names or info.keys.source or info.keys.origins)


def _trace_name(bundle: RunBundle) -> str:
    """The bundle's trace file, relative to the bundle."""
    return bundle.primary_trace_path.relative_to(bundle.root).as_posix()


def load_bundle_inputs(bundle: RunBundle) -> tuple[Trace, list[FxCall]]:
    """The bundle's trace and exported call nodes."""
    manifest = bundle.manifest()
    fx_path = bundle.member(manifest.option_str("fx_nodes", DEFAULT_FX_NODES), what="FX nodes")
    return bundle.trace(), load_fx_calls(fx_path)


@dataclass(frozen=True)
class TorchCorrelator:
    """The `torch` entry of the correlator registry."""

    framework: str = "torch"
    levels: tuple[str, ...] = ("torch", "linalg")

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Join the bundle's trace to `RUN/ir/<level>.mlir`.

        A call decomposed into several ops: `default` gives its time to the compute ops in equal
        shares (view ops get 0 ns), `split` shares it equally among all of them.
        """
        rule = options.fused_time_rule
        if rule not in FUSED_TIME_RULES:
            raise CorrelationError(
                f"fused_time_rule {rule!r}: the torch correlator knows "
                + ", ".join(FUSED_TIME_RULES)
            )
        trace, calls = load_bundle_inputs(bundle)
        torch_result = correlate_torch_level(bundle, trace, calls, rule)
        if level == "torch":
            return torch_result
        if level == "linalg":
            return correlate_linalg_level(bundle, torch_result.opprofile)
        raise CorrelationError(f"torch correlator: unknown level {level!r} (torch or linalg)")


CORRELATOR = TorchCorrelator()

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

Every event goes through the shared `Ledger` (time conservation is checked); a multi-op call
is a group, split by an analytic FLOP estimate from the IR's shapes where one exists.

linalg level: `torch_linalg` carries the torch level's time down through the origin stamps.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from irprof.bundle import RunBundle
from irprof.capture.torch_locations import FxNodeName
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.flops import share_weights as flop_weights
from irprof.correlate.ledger import Ledger
from irprof.correlate.torch_events import FxCall, load_fx_calls, match_events, top_level_op_events
from irprof.correlate.torch_linalg import correlate_linalg_level
from irprof.coverage import is_trivial_op
from irprof.errors import CorrelationError
from irprof.mlir.locations import render
from irprof.mlir.module_coverage import coverage_for
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.opprofile import OpProfile
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


def share_weights(
    infos: Sequence[OpInfo], positions: Sequence[int], rule: str
) -> tuple[list[float], str]:
    """Relative share of a call's time per op and its basis: `split` even; `default` by an
    analytic FLOP estimate, else evenly among the compute ops (view ops get 0 ns)."""
    if rule == "split" or len(positions) == 1:
        return [1.0] * len(positions), "even"
    weights, basis = flop_weights([infos[p].op for p in positions])
    if basis == "flops":
        return weights, basis
    even = [0.0 if is_view_op(infos[p]) else 1.0 for p in positions]
    return (even if any(even) else [1.0] * len(positions)), "even"


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
    ledger = Ledger()
    for event in events:
        nodes = matched.nodes_of.get(event.row, ())
        positions = list(dict.fromkeys(p for node in nodes for p in grouped.get(node, [])))
        if not positions:
            reason = matched.unmatched.get(event.row) or no_op_reason(nodes, named_by_any_op)
            ledger.unattributed(event.name, event.dur_ns, reason)
            continue
        weights, basis = share_weights(infos, positions, rule)
        ledger.record(
            event.name, event.ts_ns, event.dur_ns, positions, weights=weights, basis=basis,
            group="torch:" + "+".join(nodes),
            source="torch.profiler:" + "+".join(sorted(nodes)),
        )  # fmt: skip
    ledger.close(profiled_ns, f"{bundle.root} -> torch")
    entries = ledger.entries(
        infos,
        profiled_ns,
        location_of=lambda info: render(info.loc),
        name_of=lambda p: str(infos[p].key.name),
    )
    warnings = []
    if matched.source_disagreements:
        warnings.append(
            f"{len(matched.source_disagreements)} of {len(matched.nodes_of)} joined events do not "
            "have the FX node's source frame on their call stack; the trace may come from a "
            "different version of the script"
        )
    coverage = coverage_for(
        [(info.op, info.key) for info in infos],
        ledger.annotated,
        warnings=warnings,
        level="torch",
        profiled_ns=profiled_ns,
        attributed_ns=ledger.attributed_ns,
        unmatched_events=ledger.unmatched_events(),
        reasons=_op_reasons(infos, grouped, matched.matched_nodes()),
    )
    coverage = dataclasses.replace(coverage, extra=ledger.totals())
    opprofile = OpProfile(
        level="torch",
        framework="torch",
        entries=tuple(entries),
        totals={
            "profiled_ns": profiled_ns,
            **ledger.totals(),
            "events": len(events),
            "events_matched": len(events)
            - sum(len(d) for d in ledger.unattributed_events.values()),
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
            return correlate_linalg_level(
                bundle, torch_result.opprofile, torch_result.coverage.unmatched_events
            )
        raise CorrelationError(f"torch correlator: unknown level {level!r} (torch or linalg)")


CORRELATOR = TorchCorrelator()

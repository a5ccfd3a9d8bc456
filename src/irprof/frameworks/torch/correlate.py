"""PyTorch correlator: torch.profiler `aten::*` events -> torch-dialect ops -> linalg ops.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/correlate.py`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.correlate.step_check import CountedSpan, check_step_times
from irprof.coverage import is_trivial_op
from irprof.errors import CorrelationError
from irprof.frameworks.torch.events import (
    EventMatch,
    FxCall,
    FxProgram,
    OpEvent,
    load_fx_program,
    match_events,
    top_level_op_events,
)
from irprof.frameworks.torch.linalg import correlate_linalg_level
from irprof.frameworks.torch.locations import FxNodeName
from irprof.frameworks.torch.reference import borrow_call_stacks, split_by_step
from irprof.frameworks.torch.training import (
    GRAD_MODE_REASON,
    OPTIMIZER_REASON,
    BackwardLinks,
    link_backward,
    nested_grad_ops_ns,
    torch_training_record,
)
from irprof.mlir.cost_model import share_weights
from irprof.mlir.locations import render
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.trace.model import Trace
from irprof.trace.steps import step_windows

DEFAULT_FX_NODES = "ir/torch.fx.json"
# ATen ops that only change tensor metadata in eager mode (strides, shapes): when a decomposed
# call also has a compute op (linear -> view + permute + addmm + view), the event's time goes to
# the compute ops under the default rule; the view ops are still annotated, with 0 ns.
VIEW_OPS = frozenset(
    {
        "view", "_unsafe_view", "reshape", "expand", "squeeze", "unsqueeze", "t", "transpose",
        "permute", "alias", "slice", "select", "as_strided", "detach", "unflatten",
        "sym_size",
    }
)  # fmt: skip
# Reads of a dynamic dimension's size that decomposition adds as nodes of their own: eager
# PyTorch reads sizes from tensor metadata and records no event for them.
SHAPE_QUERIES = frozenset({"aten.sym_size.int"})
MAX_SHAPE_USE_DEPTH = 4
MAX_ABSORB_DEPTH = 4  # def-use steps from a removed call to the calls that absorbed it
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


def _fx_name(info: OpInfo) -> FxNodeName | None:
    return next((p for n in info.keys.names if (p := FxNodeName.parse(n)) is not None), None)


def join_shape_queries(infos: Sequence[OpInfo], grouped: dict[str, list[int]]) -> None:
    """Add each shape query's ops (`SHAPE_QUERIES`) to the groups of the calls that use the
    size it reads (through list constructs), where they take 0 ns like view ops: they are part
    of running those calls, and no event of their own will ever name them."""
    position_of = {info.op: position for position, info in enumerate(infos)}
    queries = [
        (p, name) for p, info in enumerate(infos)
        if (name := _fx_name(info)) is not None and name.target in SHAPE_QUERIES
    ]  # fmt: skip
    for position, name in queries:
        frontier, users = [infos[position].op], set()
        for _ in range(MAX_SHAPE_USE_DEPTH):
            following = []
            for op in frontier:
                for result in op.results:
                    for use in result.uses:
                        owner = use.owner
                        owner = owner if isinstance(owner, ir.Operation) else owner.operation
                        found = position_of.get(owner)
                        user_name = _fx_name(infos[found]) if found is not None else None
                        if found is not None and is_trivial_op(infos[found].op_name):
                            following.append(owner)
                        elif user_name is not None and user_name.node != name.node:
                            users.add(user_name.node)
            frontier = following
        for node in sorted(users):
            if position not in grouped[node]:
                grouped[node].append(position)


def is_view_op(info: OpInfo) -> bool:
    """The op's FX target (from its NameLoc) is a metadata-only ATen op."""
    for name in info.keys.names:
        parsed = FxNodeName.parse(name)
        if parsed is not None:
            parts = parsed.target.split(".")  # aten.permute.default
            return len(parts) > 1 and parts[1] in VIEW_OPS
    return False


def absorbing_nodes(
    nodes: Sequence[str], users: dict[str, tuple[str, ...]], grouped: dict[str, list[int]]
) -> tuple[str, ...]:
    """The nearest users (FX def-use, exported graph) of `nodes` that have ops: the calls that
    absorbed a call decomposition removed or merged (a no-op `to`, an `unsqueeze` folded into
    its consumer's indexing), where the removed call's time goes."""
    found: list[str] = []
    frontier, seen = list(nodes), set(nodes)
    for _ in range(MAX_ABSORB_DEPTH):
        following = []
        for node in frontier:
            for user in users.get(node, ()):
                if user in seen:
                    continue
                seen.add(user)
                if grouped.get(user):
                    found.append(user)
                else:
                    following.append(user)
        if found or not following:
            break
        frontier = following
    return tuple(found)


def no_op_reason(nodes: Sequence[str], named_by_any_op: set[str], unused: frozenset[str]) -> str:
    """Why the event's call node(s) have no op that can take its time."""
    if any(node in named_by_any_op for node in nodes):
        return f"FX node(s) {tuple(nodes)} became only constants or other trivial ops"
    if nodes and all(node in unused for node in nodes):
        return (
            f"FX node(s) {tuple(nodes)} compute a value no output of the model uses: eager "
            "runs it, the decomposition removes it as dead code"
        )
    return (
        f"no op of the torch-level IR is named after FX node(s) {tuple(nodes)}: the "
        "decomposition removed the call or named its ops after another node"
    )


def call_share_weights(
    infos: Sequence[OpInfo], positions: Sequence[int], rule: str
) -> tuple[list[float], str]:
    """Relative share of a call's time per op and its basis: `split` even; `default` by an
    analytic FLOP estimate, else evenly among the compute ops (view ops get 0 ns)."""
    if rule == "split" or len(positions) == 1:
        return [1.0] * len(positions), "even"
    weights, basis = share_weights([infos[p].op for p in positions])
    if basis == "flops":
        return weights, basis
    even = [0.0 if is_view_op(infos[p]) else 1.0 for p in positions]
    return (even if any(even) else [1.0] * len(positions)), "even"


@dataclass(frozen=True)
class TorchRun:
    """What the torch correlator reads from a bundle: the timed trace, the exported program,
    the trace's top-level events (with borrowed call stacks) and those that found none."""

    trace: Trace
    program: FxProgram
    events: list[OpEvent]
    unaligned: dict[int, str] = field(default_factory=dict)


@dataclass
class _Attribution:
    """Events through the ledger: which were joined, and how the forward ones matched."""

    ledger: Ledger
    matched: EventMatch
    attributed_rows: set[int]
    carved: dict[int, int]  # attributed event row -> its ns left unattributed (nested grad ops)


def _event_nodes(
    event: OpEvent, matched: EventMatch, backward: BackwardLinks | None
) -> tuple[tuple[str, ...], str, str]:
    """The event's FX call nodes, the reason when it has none, and the group kind."""
    if event.phase == "backward" and backward is not None:
        return (
            backward.nodes_of.get(event.row, ()),
            backward.unlinked.get(event.row, ""),
            "torch-backward",
        )
    return matched.nodes_of.get(event.row, ()), matched.unmatched.get(event.row, ""), "torch"


def match_steps(trace: Trace, events: Sequence[OpEvent], calls: Sequence[FxCall]) -> EventMatch:
    """`match_events` one profiler step at a time: execution-order ranks restart with each
    step, so a step that runs fewer calls of a signature than the program has (eager skipping
    a branch the export kept) does not shift the next step's events onto other calls."""
    steps, outside = split_by_step(events, step_windows(trace, nested=True))
    merged = EventMatch()
    for part in [*steps, outside]:
        if not part:
            continue
        found = match_events(part, calls)
        merged.nodes_of.update(found.nodes_of)
        merged.unmatched.update(found.unmatched)
        merged.source_disagreements += found.source_disagreements
        merged.by_name_only.update(found.by_name_only)
    return merged


def attribute_events(run: TorchRun, infos: Sequence[OpInfo], rule: str) -> _Attribution:
    """Every event of `run` to the ledger: forward calls by signature, backward events through
    autograd links (`torch_training`), the optimizer as its own bucket."""
    grouped = ops_by_node(infos)
    join_shape_queries(infos, grouped)
    named_by_any_op = set(ops_by_node(infos, trivial=True))
    forward = [e for e in run.events if e.phase == "forward" and e.row not in run.unaligned]
    matched = match_steps(run.trace, forward, run.program.calls)
    backward = None
    nested: dict[int, int] = {}
    if run.program.mode == "train":
        backward = link_backward(run.trace, run.events, matched.nodes_of, run.program)
        nested = nested_grad_ops_ns(run.trace, run.events)
    ledger = Ledger()
    attributed: set[int] = set()
    carved: dict[int, int] = {}
    for event in run.events:
        if event.row in run.unaligned:
            ledger.unattributed(event.name, event.dur_ns, run.unaligned[event.row])
            continue
        if event.phase == "optimizer":
            ledger.unattributed(f"optimizer: {event.name}", event.dur_ns, OPTIMIZER_REASON)
            continue
        nodes, reason, kind = _event_nodes(event, matched, backward)
        positions = list(dict.fromkeys(p for node in nodes for p in grouped.get(node, [])))
        absorbed = ""
        if not positions and nodes:
            into = absorbing_nodes(nodes, run.program.users, grouped)
            positions = list(dict.fromkeys(p for node in into for p in grouped[node]))
            absorbed = (
                f" (removed or folded by decomposition, absorbed by {'+'.join(into)})"
                if into
                else ""
            )
        if not positions:
            ledger.unattributed(
                event.name,
                event.dur_ns,
                reason or no_op_reason(nodes, named_by_any_op, run.program.unused),
            )
            continue
        weights, basis = call_share_weights(infos, positions, rule)
        how = f" ({backward.how[event.row]})" if backward and event.row in backward.how else ""
        how += absorbed
        own_ns = event.dur_ns
        if nested.get(event.row):
            carved[event.row] = nested[event.row]
            own_ns -= nested[event.row]
            ledger.unattributed(f"{event.name}: nested ops", nested[event.row], GRAD_MODE_REASON)
        ledger.record(
            event.name, event.ts_ns, own_ns, positions, weights=weights, basis=basis,
            group=f"{kind}:" + "+".join(nodes),
            source=f"torch.profiler:{kind.removeprefix('torch')}" + "+".join(sorted(nodes)) + how,
        )  # fmt: skip
        attributed.add(event.row)
    return _Attribution(ledger, matched, attributed, carved)


def correlate_torch_level(
    bundle: RunBundle, run: TorchRun, rule: str = "default"
) -> CorrelationResult:
    """The torch-dialect level: events -> call nodes -> ops."""
    infos = derive_op_infos(bundle.ir("torch"))
    done = attribute_events(run, infos, rule)
    ledger, matched = done.ledger, done.matched
    profiled_ns = sum(event.dur_ns for event in run.events)
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
    if matched.by_name_only:
        names = ", ".join(sorted(set(matched.by_name_only.values()))[:3])
        warnings.append(
            f"{len(matched.by_name_only)} of {len(matched.nodes_of)} joined events ({names}) "
            "matched no call of their module path in the exported program and were joined by "
            "aten name and execution order alone: their time may belong to another call of the "
            "same op"
        )
    training = None
    if run.program.mode == "train":
        training = torch_training_record(run.events, done.attributed_rows, done.carved)
    return finish_level(
        ledger,
        infos,
        entries,
        level="torch",
        framework="torch",
        profiled_ns=profiled_ns,
        where=f"{bundle.root} -> torch",
        reasons=_op_reasons(infos, ops_by_node(infos), matched.matched_nodes()),
        warnings=warnings,
        totals={
            "events": len(run.events),
            "events_matched": len(done.attributed_rows),
            "steps": bundle.manifest().steps,
        },
        training=training,
        source_trace=_trace_name(bundle),
        step_check=check_step_times(
            step_windows(run.trace, nested=False),
            [
                CountedSpan(
                    e.ts_ns,
                    e.ts_ns + e.dur_ns,
                    int(run.trace.track[e.row]),
                    e.dur_ns - done.carved.get(e.row, 0),
                )
                for e in run.events
                if e.row in done.attributed_rows
            ],
        ),
    )


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


def load_torch_run(bundle: RunBundle) -> TorchRun:
    """The bundle's timed trace, exported program and top-level events. A bundle with a
    call-stack reference trace lends its stacks to the timed events (`torch_reference`); an
    older bundle's timed trace carries its own."""
    manifest = bundle.manifest()
    fx_name = manifest.option_str("fx_nodes", DEFAULT_FX_NODES)
    fx_path = bundle.member(fx_name, what="FX nodes")
    program = load_fx_program(fx_path, bundle.read_member(fx_name, what="FX nodes"))
    trace = bundle.trace()
    events = top_level_op_events(trace)
    if "reference_trace" not in manifest.options:
        return TorchRun(trace, program, events)
    reference_name = manifest.option_str("reference_trace", "")
    reference = bundle.read_trace_member(reference_name, what="call-stack reference trace")
    borrowed = borrow_call_stacks(trace, events, reference, top_level_op_events(reference))
    return TorchRun(trace, program, borrowed.events, borrowed.unaligned)


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
        torch_result = correlate_torch_level(bundle, load_torch_run(bundle), rule)
        if level == "torch":
            return torch_result
        if level == "linalg":
            linalg = correlate_linalg_level(
                bundle, torch_result.opprofile, torch_result.coverage.unmatched_events
            )
            return _with_training(linalg, torch_result)
        raise CorrelationError(f"torch correlator: unknown level {level!r} (torch or linalg)")


def _with_training(linalg: CorrelationResult, torch_result: CorrelationResult) -> CorrelationResult:
    """The torch level's phase figures on the linalg level, which carries the same time down.
    What each phase had attributed is left out when lowering lost some of it (the lost op's
    time mixes phases); the profiled time per phase and the buckets hold at every level."""
    training = torch_result.coverage.extra.get("training")
    if training is None:
        return linalg
    if linalg.coverage.attributed_ns != torch_result.coverage.attributed_ns:
        kept = ("phases_profiled_ns", "buckets")
        training = {key: value for key, value in training.items() if key in kept}
    coverage = dataclasses.replace(
        linalg.coverage, extra={**linalg.coverage.extra, "training": training}
    )
    return CorrelationResult(linalg.opprofile, coverage)


CORRELATOR = TorchCorrelator()

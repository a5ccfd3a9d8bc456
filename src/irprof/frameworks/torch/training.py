"""A PyTorch training step: backward events linked to the forward calls they differentiate.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/training.py`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from irprof.correlate.training import phase_record
from irprof.frameworks.torch.events import SEQUENCE_ARG, FxProgram, OpEvent
from irprof.frameworks.torch.reference import split_by_step
from irprof.trace.model import EventKind, Trace
from irprof.trace.steps import step_windows

ENGINE_PREFIX = "autograd::engine::evaluate_function: "
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
OPTIMIZER_REASON = (
    "optimizer step (its own bucket): torch.optim updating parameters, which no op of the "
    "model's IR computes"
)
GRAD_MODE_REASON = (
    "ops run with grad mode on inside a backward node (activation checkpointing recomputing "
    "forward code, or a backward with create_graph=True): not the node's own work, and not "
    "joined to forward calls"
)


@dataclass
class BackwardLinks:
    """Backward event row -> FX call nodes, how each was linked, and the events left alone."""

    nodes_of: dict[int, tuple[str, ...]] = field(default_factory=dict)
    how: dict[int, str] = field(default_factory=dict)
    unlinked: dict[int, str] = field(default_factory=dict)


class TopLevelIndex:
    """Which top-level event (of a chosen set) a nested event of the same thread lies in."""

    def __init__(self, trace: Trace, events: Sequence[OpEvent]) -> None:
        self._trace = trace
        self._spans: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for event in events:
            row = event.row
            self._spans[int(trace.track[row])].append((event.ts_ns, int(trace.end_ns[row]), row))
        for spans in self._spans.values():
            spans.sort()

    def owner(self, row: int) -> int | None:
        """The row of the top-level event containing `row`, if any."""
        spans = self._spans.get(int(self._trace.track[row]), [])
        start = int(self._trace.ts_ns[row])
        index = bisect_right(spans, (start, 1 << 62, 1 << 62)) - 1
        if index >= 0 and spans[index][0] <= start < spans[index][1]:
            return spans[index][2]
        return None


def flow_links(
    trace: Trace, forward: TopLevelIndex, backward: TopLevelIndex
) -> dict[int, set[int]]:
    """Backward top-level row -> forward top-level rows Kineto's forward/backward flows join."""
    found: dict[int, set[int]] = defaultdict(set)
    flows = trace.flows
    for source, target in zip(flows.src.tolist(), flows.dst.tolist(), strict=True):
        if source < 0 or target < 0:
            continue
        to_row, from_row = backward.owner(target), forward.owner(source)
        if to_row is not None and from_row is not None:
            found[to_row].add(from_row)
    return found


def sequence_creators(trace: Trace, forward: TopLevelIndex) -> dict[int, set[int]]:
    """Autograd sequence number -> the top-level forward event(s) of the op that created the
    node. Every op records the number the next node will get, so several ops carry it; the
    node's creator is the last of them on its thread (the rule Kineto draws its flows by)."""
    rows = trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist()
    latest: dict[tuple[int, int], tuple[int, int]] = {}  # (seq, track) -> (ts, row)
    for row, args in zip(rows, trace.args_many(rows), strict=True):
        sequence = args.get(SEQUENCE_ARG)
        if not isinstance(sequence, int) or sequence < 0 or forward.owner(row) is None:
            continue
        key, stamp = (sequence, int(trace.track[row])), (int(trace.ts_ns[row]), row)
        if key not in latest or stamp > latest[key]:
            latest[key] = stamp
    creators: dict[int, set[int]] = defaultdict(set)
    for (sequence, _), (_, row) in latest.items():
        owner = forward.owner(row)
        if owner is not None:
            creators[sequence].add(owner)
    return creators


def link_backward(
    trace: Trace,
    events: Sequence[OpEvent],
    forward_nodes: Mapping[int, tuple[str, ...]],
    program: FxProgram,
) -> BackwardLinks:
    """Link every backward-phase event of `events` to FX call nodes (module docstring)."""
    links = BackwardLinks()
    backward = [event for event in events if event.phase == "backward"]
    if not backward:
        return links
    forward_index = TopLevelIndex(trace, [e for e in events if e.phase == "forward"])
    flows = flow_links(trace, forward_index, TopLevelIndex(trace, backward))
    creators = sequence_creators(trace, forward_index)
    windows = step_windows(trace, nested=True) or [(min(e.ts_ns for e in events), 1 << 62)]
    steps, outside = split_by_step(backward, windows)
    for event in outside:
        links.unlinked[event.row] = "backward event outside every step marker"
    order = program.grad_accumulation_order
    for step in steps:
        accumulations = [e.row for e in step if e.name == ENGINE_PREFIX + ACCUMULATE_GRAD]
        index_of = {row: index for index, row in enumerate(accumulations)}
        counted = len(accumulations) == len(order)
        for event in step:
            if event.row in index_of:
                _link_accumulation(links, event, index_of[event.row], counted, program)
            elif event.name.startswith(ENGINE_PREFIX):
                _link_engine_event(links, event, flows, creators, forward_nodes)
            elif program.outputs:
                links.nodes_of[event.row] = program.outputs
                links.how[event.row] = "gradient seed of the program's output"
            else:
                links.unlinked[event.row] = "backward event outside the autograd engine"
    return links


def _link_engine_event(
    links: BackwardLinks,
    event: OpEvent,
    flows: Mapping[int, set[int]],
    creators: Mapping[int, set[int]],
    forward_nodes: Mapping[int, tuple[str, ...]],
) -> None:
    found, how = flows.get(event.row, set()), "forward/backward flow"
    if not found and event.sequence is not None:
        found, how = creators.get(event.sequence, set()), "autograd sequence number"
    if not found or (len(found) > 1 and how != "forward/backward flow"):
        links.unlinked[event.row] = (
            "the profiler links this autograd node to no forward event"
            if not found
            else f"autograd sequence number {event.sequence} was created on {len(found)} "
            "threads, so its forward op is not known"
        )
        return
    nodes = tuple(dict.fromkeys(n for owner in sorted(found) for n in forward_nodes.get(owner, ())))
    if not nodes:
        links.unlinked[event.row] = "its forward event found no FX call"
        return
    links.nodes_of[event.row] = nodes
    links.how[event.row] = how


def _link_accumulation(
    links: BackwardLinks, event: OpEvent, index: int, counted: bool, program: FxProgram
) -> None:
    if not counted:
        links.unlinked[event.row] = (
            f"the step accumulated gradients {index + 1}+ times but the capture recorded "
            f"{len(program.grad_accumulation_order)} parameters, so which parameter is unknown"
        )
        return
    parameter = program.grad_accumulation_order[index]
    readers = tuple(program.parameters.get(parameter, ()))
    if not readers:
        links.unlinked[event.row] = f"no FX call reads parameter {parameter!r}"
        return
    links.nodes_of[event.row] = readers
    links.how[event.row] = f"gradient accumulation into {parameter}"


def nested_grad_ops_ns(trace: Trace, events: Sequence[OpEvent]) -> dict[int, int]:
    """Backward engine event row -> its ns that are not its node's own work, for the nodes that
    ran ops building autograd nodes (they carry a `Sequence number`, which an op records only
    with grad mode on, and grad mode is off in a plain backward): forward code run again inside
    the node by activation checkpointing, or the graph of a `create_graph=True` backward.

    Such a node's own work is taken as the ops it ran outside the span of those ops (the
    `aten::mul` of a `MulBackward0` after the recompute); the rest, the recomputed ops, the
    Python between them and the checkpoint's own machinery around them, is not the node's.
    """
    engine = [e for e in events if e.phase == "backward" and e.name.startswith(ENGINE_PREFIX)]
    if not engine:
        return {}
    index = TopLevelIndex(trace, engine)
    own_node = {e.row: e.name.removeprefix(ENGINE_PREFIX) for e in engine}
    rows = trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist()
    grad_on: dict[int, list[tuple[int, int]]] = defaultdict(list)
    others: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for row, args in zip(rows, trace.args_many(rows), strict=True):
        owner = index.owner(row)
        if owner is None or owner == row or trace.name_of(row) == own_node[owner]:
            continue
        span = (int(trace.ts_ns[row]), int(trace.end_ns[row]))
        sequence = args.get(SEQUENCE_ARG)
        (grad_on if isinstance(sequence, int) else others)[owner].append(span)
    durations = {e.row: e.dur_ns for e in engine}
    carved: dict[int, int] = {}
    for owner, found in grad_on.items():
        first, last = min(start for start, _ in found), max(end for _, end in found)
        outside = [span for span in others[owner] if span[1] <= first or span[0] >= last]
        carved[owner] = durations[owner] - _outermost_ns(outside)
    return carved


def _outermost_ns(spans: list[tuple[int, int]]) -> int:
    """Sum of the spans not inside another (spans of one thread nest or are disjoint)."""
    total, reach = 0, -1
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start >= reach:
            total += end - start
            reach = end
    return total


def torch_training_record(
    events: Sequence[OpEvent],
    attributed_rows: set[int],
    carved: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """Per-phase time: `phases_ns` (attributed forward and backward time, the optimizer bucket,
    the unattributed rest; they add up to the profiled time) and `phases_profiled_ns`.
    `carved`: ns of attributed events left unattributed (`nested_grad_ops_ns`)."""
    carved = carved or {}
    profiled = dict.fromkeys(("forward", "backward", "optimizer"), 0)
    attributed = dict.fromkeys(("forward", "backward"), 0)
    for event in events:
        phase = event.phase if event.phase in profiled else "forward"
        profiled[phase] += event.dur_ns
        if phase in attributed and event.row in attributed_rows:
            attributed[phase] += event.dur_ns - carved.get(event.row, 0)
    rest = sum(profiled.values()) - sum(attributed.values()) - profiled["optimizer"]
    return phase_record(
        {**attributed, "optimizer": profiled["optimizer"]},
        rest,
        profiled,
        buckets=["optimizer"],  # phases listed as unattributed: no IR op computes them
        backward_linked_ns=attributed["backward"],
    )

"""torch.profiler events -> the exported program's call nodes (no MLIR here).

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/events.py`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from irprof.errors import BundleError
from irprof.frameworks.torch.locations import PHASE_FUNCTIONS, aten_event_name
from irprof.trace.model import EventKind, Trace

MODULE_FRAME = "nn.Module: "
CALL_STACK_ARG = "Call stack"
SEQUENCE_ARG = "Sequence number"  # autograd: a forward op and its backward node share it
_PY_FRAME_RE = re.compile(r"^(.+)\((\d+)\): (.+)$")


@dataclass(frozen=True)
class FxCall:
    """A call node of the exported program: what one top-level aten event corresponds to."""

    index: int
    node: str
    event_name: str  # `aten::linear`
    chain: tuple[str, ...]  # module instances as the profiler names them: (`Net_0`, `Linear_1`)
    frame: tuple[str, str] | None = None  # innermost source frame: (file, function)


@dataclass(frozen=True)
class OpEvent:
    """A top-level framework-op event of the trace."""

    row: int
    name: str
    ts_ns: int
    dur_ns: int
    chain: tuple[str, ...]
    frames: tuple[tuple[str, str], ...] = ()  # Python frames (file, function), innermost first
    phase: str = "forward"  # of a training step: forward, backward or optimizer
    sequence: int | None = None  # autograd sequence number (`Sequence number` arg)


class _FxNodeSchema(msgspec.Struct):
    index: int
    name: str
    target: str
    modules: list[tuple[str, str]] = []
    frames: list[tuple[str, int | None, str]] = []
    inputs: list[str] = []  # call nodes whose results this call reads
    # What the call writes in place, and the input its result views: call nodes, "" for a
    # graph input, parameter or buffer. None: a capture older than these fields.
    writes: list[str] | None = None
    aliases: str | None = None


class _FxFileSchema(msgspec.Struct):
    """The JSON schema of `torch.fx.json` (what `irprof capture torch` exports)."""

    nodes: list[_FxNodeSchema]
    version: int = 1
    mode: str = "infer"
    parameters: dict[str, list[str]] = {}  # parameter -> the call nodes that read it
    outputs: list[str] = []  # call nodes whose results the program returns
    grad_accumulation_order: list[str] = []  # parameters, in AccumulateGrad order of a step
    # module path -> the first path of the same module object (one instance to the profiler)
    module_aliases: dict[str, str] = {}


@dataclass(frozen=True)
class FxProgram:
    """`torch.fx.json`: the call nodes and what a training step's backward needs besides."""

    calls: list[FxCall]
    mode: str = "infer"
    parameters: dict[str, list[str]] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    grad_accumulation_order: tuple[str, ...] = ()
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)  # call -> calls reading it
    # call -> what it writes in place (from its schema; "" a graph input, parameter or buffer),
    # and view call -> the input it views. Absent for captures older than these fields.
    writes: dict[str, tuple[str, ...]] | None = None
    aliases: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def unused(self) -> frozenset[str]:
        """Calls whose results reach no output of the program through any chain of readers, and
        that change nothing a live call or the caller sees in place: dead code, which eager runs
        and the export's decomposition drops. Empty when the file names no output (a capture
        older than the `outputs` field), as nothing can be told.

        A call writing in place is live when what it writes is visible: a graph input,
        parameter or buffer, or a tensor (through any view of it) that a live call reads or the
        program returns. Writes into a scratch tensor nothing reads (HF BigBird's attention
        probabilities, built and filled when no caller asks for them) are dead with it.
        Without the schema's record (older captures) every in-place call is kept live."""
        if not self.outputs:
            return frozenset()
        live = set(self.outputs)
        seen = {self._root(name) for name in self.outputs}
        changed = True
        while changed:
            changed = False
            for call in reversed(self.calls):  # graph order is a topological order
                if call.node in live or not self._live(call, live, seen):
                    continue
                live.add(call.node)
                seen.update(self._root(name) for name in self.inputs.get(call.node, ()))
                changed = True
        return frozenset(call.node for call in self.calls if call.node not in live)

    def _live(self, call: FxCall, live: set[str], seen: set[str]) -> bool:
        if any(user in live for user in self.users.get(call.node, ())):
            return True
        if self.writes is None:  # no schema record: an in-place call (`aten::add_`) is live
            return call.event_name.endswith("_") and not call.event_name.endswith("__")
        return any(
            not target or self._root(target) in seen or not self._root(target)
            for target in self.writes.get(call.node, ())
        )

    def _root(self, name: str) -> str:
        """The tensor a view chain starts from ("" when it is not a call's result)."""
        for _ in range(len(self.aliases) + 1):
            viewed = self.aliases.get(name)
            if viewed is None:
                return name
            if not viewed:
                return ""
            name = viewed
        return name


def load_fx_calls(path: Path) -> list[FxCall]:
    """Read `torch.fx.json` and number module instances per class in order of first call."""
    return load_fx_program(path).calls


def load_fx_program(path: Path, data: bytes | None = None) -> FxProgram:
    """Read `torch.fx.json` (or decode `data`, its bytes already read): call nodes (module
    instances numbered per class in order of first call, a module registered under two paths
    one instance, as the profiler counts them), the parameters' readers, the outputs and the
    gradient accumulation order."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise BundleError(f"{path}: missing; re-capture with `irprof capture torch`") from exc
    try:
        document = msgspec.json.decode(data, type=_FxFileSchema, strict=True)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise BundleError(
            f"{path}: malformed FX node list: {exc}; re-capture with `irprof capture torch`"
        ) from exc
    nodes = document.nodes
    instance_of: dict[str, str] = {}
    per_class: Counter[str] = Counter()
    calls = []
    for node in nodes:
        chain = []
        for module_path, class_name in node.modules:
            instance = document.module_aliases.get(module_path, module_path)
            if instance not in instance_of:
                instance_of[instance] = f"{class_name}_{per_class[class_name]}"
                per_class[class_name] += 1
            chain.append(instance_of[instance])
        innermost = (node.frames[-1][0], node.frames[-1][2]) if node.frames else None
        calls.append(
            FxCall(
                node.index,
                node.name,
                aten_event_name(node.target),
                tuple(chain),
                innermost,
            )
        )
    users: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for source in node.inputs:
            users[source].append(node.name)
    recorded = all(node.writes is not None for node in nodes)
    return FxProgram(
        calls,
        document.mode,
        document.parameters,
        tuple(document.outputs),
        tuple(document.grad_accumulation_order),
        {name: tuple(readers) for name, readers in users.items()},
        {node.name: tuple(node.writes or ()) for node in nodes} if recorded else None,
        {node.name: node.aliases for node in nodes if node.aliases is not None},
        {node.name: tuple(node.inputs) for node in nodes},
    )


def module_chain(call_stack: str | None) -> tuple[str, ...]:
    """`nn.Module: X_n` frames of a verbose call stack (innermost first) -> outermost first."""
    if not call_stack:
        return ()
    frames = [f[len(MODULE_FRAME) :] for f in call_stack.split(";") if f.startswith(MODULE_FRAME)]
    return tuple(reversed(frames))


def python_frames(call_stack: str | None) -> tuple[tuple[str, str], ...]:
    """(file, function) of the Python frames `file(N): function` of a verbose call stack,
    innermost first, each once (at its innermost place).

    N is the function's first line there, not the calling line, so only file and function can
    be compared with the exported node's frames.
    """
    if not call_stack:
        return ()
    found: dict[tuple[str, str], None] = {}
    for frame in call_stack.split(";"):
        match = _PY_FRAME_RE.match(frame)
        if match:
            found.setdefault((match.group(1), match.group(3)))
    return tuple(found)


def nearest_source(event: OpEvent, candidates: list[FxCall]) -> list[FxCall]:
    """The candidates whose source frame is the innermost of theirs on the event's call stack;
    all of them when the stack holds none of their frames (or was not recorded).

    Every enclosing `forward` of a file is on an event's stack, so "the node's frame is on the
    stack" alone does not tell apart an activation module's call (frame `activations.py:
    forward`) from a call in the `forward` that invoked it; the innermost frame does. The
    profiler names modules the exported program never registered (HF Mamba calls a global
    `ACT2FN` instance), so both calls can share one module chain.
    """
    depth = {frame: i for i, frame in enumerate(event.frames)}
    found = [depth[c.frame] for c in candidates if c.frame is not None and c.frame in depth]
    if not found:
        return candidates
    innermost = min(found)
    return [c for c in candidates if c.frame is not None and depth.get(c.frame) == innermost]


def phase_of(frames: tuple[tuple[str, str], ...]) -> str:
    """The training phase whose capture function is on the call stack; forward by default."""
    for _, function in frames:
        if function in PHASE_FUNCTIONS:
            return PHASE_FUNCTIONS[function]
    return "forward"


def top_level_op_events(trace: Trace) -> list[OpEvent]:
    """Framework-op events not nested in another framework-op event of the same thread."""
    rows = trace.rows_of_kind(EventKind.FRAMEWORK_OP)
    if len(rows) == 0:
        return []
    order = np.lexsort((-trace.dur_ns[rows], trace.ts_ns[rows], trace.track[rows]))
    rows = rows[order]
    kept: list[int] = []
    open_ends: list[int] = []
    current_track = -1
    for row, track, start, end in zip(
        rows.tolist(),
        trace.track[rows].tolist(),
        trace.ts_ns[rows].tolist(),
        trace.end_ns[rows].tolist(),
        strict=True,
    ):
        if track != current_track:
            current_track, open_ends = track, []
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if not open_ends:
            kept.append(row)
        open_ends.append(end)
    kept.sort(key=lambda r: int(trace.ts_ns[r]))
    args = trace.args_many(kept)
    events = []
    for row, arg in zip(kept, args, strict=True):
        frames = python_frames(arg.get(CALL_STACK_ARG))
        sequence = arg.get(SEQUENCE_ARG)
        events.append(
            OpEvent(
                row,
                trace.name_of(row),
                int(trace.ts_ns[row]),
                int(trace.dur_ns[row]),
                module_chain(arg.get(CALL_STACK_ARG)),
                frames,
                phase_of(frames),
                sequence if isinstance(sequence, int) and sequence >= 0 else None,
            )
        )
    return events


@dataclass
class EventMatch:
    """Events joined to call nodes, and the ones that found none (with why)."""

    nodes_of: dict[int, tuple[str, ...]] = field(default_factory=dict)  # event row -> FX nodes
    unmatched: dict[int, str] = field(default_factory=dict)  # event row -> reason
    # Joined events whose call stack lacks the node's own source frame: a sign of a wrong join.
    source_disagreements: list[int] = field(default_factory=list)
    # Joined events that no call of their module chain matched: joined by aten name and
    # execution order alone, event row -> the event's name (the join is plausible, not proven).
    by_name_only: dict[int, str] = field(default_factory=dict)

    def matched_nodes(self) -> set[str]:
        """Every FX node some event was joined to."""
        return {node for nodes in self.nodes_of.values() for node in nodes}


def _classes(chain: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(instance.rsplit("_", 1)[0] for instance in chain)


def _may_contain(
    call_chain: tuple[str, ...], event_chain: tuple[str, ...], registered: set[str]
) -> bool:
    """The call's module classes lead to the event's: equal, or the export saw fewer levels
    because the event's deeper modules are no registered submodules (Keras layers on the torch
    backend, a loss or softmax module built inside `forward`), which `registered`, the classes
    of every module the exported program calls, never holds. A deeper level the export does
    register means the export has that module and dropped this call from it."""
    classes = _classes(call_chain)
    event_classes = _classes(event_chain)
    deeper = event_classes[len(classes) :]
    return event_classes[: len(classes)] == classes and registered.isdisjoint(deeper)


def match_events(events: Sequence[OpEvent], calls: Sequence[FxCall]) -> EventMatch:
    """Join events to calls by (aten name, module chain), execution order breaking ties.

    Events whose exact signature no node has (a module without ops shifting the profiler's
    instance numbers, say) fall back to the aten name among the calls whose module classes lead
    to the event's, again in execution order, and are recorded as such (`by_name_only`) unless
    one call of the event's own module instances remains; with no such call the event is
    unmatched (eager ran a call the export dropped). An event
    whose op the exported program never calls is an eager fused kernel (nn.MultiheadAttention's
    `aten::_native_multi_head_attention` fast path): it covers the calls of its module that no
    other event accounts for.
    """
    exact: dict[tuple[str, tuple[str, ...]], list[FxCall]] = defaultdict(list)
    by_name: dict[str, list[FxCall]] = defaultdict(list)
    for call in calls:
        exact[(call.event_name, call.chain)].append(call)
        by_name[call.event_name].append(call)
    registered = {cls for call in calls for cls in _classes(call.chain)}
    seen: Counter[Any] = Counter()
    result = EventMatch()
    strangers: list[OpEvent] = []
    for event in events:
        candidates = exact.get((event.name, event.chain), [])
        if not candidates:
            named = by_name.get(event.name, [])
            if not named:
                strangers.append(event)
                continue
            # No call of this signature: a module numbered differently (one without ops shifts
            # the profiler's instance numbers), or a call eager runs and the export dropped.
            # Only calls that may be this one, by their modules' classes, are candidates.
            candidates = [
                call for call in named if _may_contain(call.chain, event.chain, registered)
            ]
            if not candidates:
                where = "/".join(event.chain) or "the top level"
                result.unmatched[event.row] = (
                    f"no call of {event.name} in {where} in the exported program: eager ran a "
                    "call the export dropped (a no-op such as `.to()` to the same dtype) or code "
                    "only eager runs"
                )
                continue
            # The event's own module instances, down to a level the export never registered
            # (HF Mamba2's mixer calling an activation module made on the fly): the call of
            # this very module, as certain as an exact signature when it is the only one.
            own = [call for call in candidates if event.chain[: len(call.chain)] == call.chain]
            candidates = nearest_source(event, own or candidates)
            if not own or len(candidates) > 1:
                result.by_name_only[event.row] = event.name
        else:
            candidates = nearest_source(event, candidates)
        # Every step runs the same program: ranks wrap around from one step to the next. The
        # k-th event that competes for these calls is the k-th call.
        counter_key = tuple(call.node for call in candidates)
        call = candidates[seen[counter_key] % len(candidates)]
        seen[counter_key] += 1
        result.nodes_of[event.row] = (call.node,)
        if event.frames and call.frame is not None and call.frame not in event.frames:
            result.source_disagreements.append(event.row)
    accounted = result.matched_nodes()
    for event in strangers:
        inside = tuple(
            call.node
            for call in calls
            if event.chain and call.chain[: len(event.chain)] == event.chain
            and call.node not in accounted
        )  # fmt: skip
        if inside:
            result.nodes_of[event.row] = inside
        else:
            result.unmatched[event.row] = "no call of this op in the exported program"
    return result

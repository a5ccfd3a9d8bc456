"""TensorFlow work XLA compiled (`tf.function(jit_compile=True)`, Keras' `jit_compile="auto"`):
thunk events -> HLO instructions -> TF nodes -> ops of a TF level, from the timed steps.

In the profiled steps an XLA cluster exists only as its executable's thunk events (`hlo_op`,
`hlo_module` stats) under the executor event that launched it. The XSpace carries the cluster's
HloProto, whose instructions name the TF node they were compiled from (`OpMetadata.op_name`), so
a thunk's time goes to the TF ops of the instructions it ran, a fusion as a marked group shared
by the instructions' FLOPs (bytes for pure data movement, else evenly). The launching event is
runtime around the thunks (argument and result buffers, thread hand-offs): it is no op time,
and its time outside the thunks is reported (`extra.xla.launch_overhead_ns`). Every op of the
compiled function ran inside the cluster, so none of them is "never ran".

Design notes: docs/tensorflow.md, "XLA clusters".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from iree.compiler import ir

from irprof.correlate.hlo import (
    HloInstructionInfo,
    HloModuleInfo,
    decode_hlo_proto,
    kernel_weights,
)
from irprof.correlate.ledger import Ledger
from irprof.correlate.payload import payload_owners
from irprof.correlate.step_check import CountedSpan, StepCheck, check_step_times, union_ns
from irprof.correlate.xla_thunks import ThunkEvent, thunk_events
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.trace.model import EventKind, Trace

XLA_LEVEL = "xla"  # StableHLO of a `jit_compile` function, TF node names as locations
XLA_ENTRY = "main"  # the HLO module's ENTRY computation, as the HLO importer names it
# Instructions that neither compute nor move data (a bitcast only relabels a buffer).
# (ops, weights, share basis, why none): how one thunk's time is shared.
_Plan = tuple[list[int], list[float], str, str]
COMPILED = "compiled into the XLA cluster {module}"
NO_THUNK = COMPILED + " as {instructions}, which ran inside other thunks or was folded away"
UNTIMED = (
    "ran, recorded only by the untimed reference steps (host tracer level 3): no time taken "
    "from them (capture with --reference-time to take it)"
)
LAUNCH = "launches the XLA cluster {module}: its thunks' time is on the ops of @{function}"
NO_INSTRUCTION = COMPILED + " (XLA folded it or passed it as a parameter: no instruction)"
UNCALLED = (
    "in @{function}, which nothing in the module calls: it never runs (an HLO computation "
    "that the ops applying it hold as a region of their own)"
)


@dataclass
class XlaJoin:
    """What the XLA clusters of the timed steps added to a ledger."""

    launch_rows: set[int] = field(default_factory=set)  # executor events that ran a cluster
    profiled_ns: int = 0  # thunk time given to the ledger
    launch_overhead_ns: int = 0  # launching events' time outside their thunks (not op time)
    compiled: dict[int, str] = field(default_factory=dict)  # op -> why no time of its own
    folded: set[int] = field(default_factory=set)  # ops XLA left no instruction for
    spans: list[CountedSpan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    modules: dict[str, str] = field(default_factory=dict)  # HLO module -> IR function

    def record(self) -> dict[str, Any]:
        """Figures for `Coverage.extra["xla"]`."""
        return {
            "modules": dict(self.modules),
            "thunk_ns": self.profiled_ns,
            "launch_events": len(self.launch_rows),
            "launch_overhead_ns": self.launch_overhead_ns,
        }


def xla_modules(trace: Trace, in_steps: np.ndarray) -> list[str]:
    """HLO modules with thunk events inside the timed steps, by name."""
    found = {
        str(module)
        for row, module in enumerate(trace.arg_column("hlo_module"))
        if module is not None and in_steps[row]
    }
    return sorted(found)


def _program(trace: Trace, module: str) -> tuple[HloModuleInfo | None, str]:
    """The module's HloProto from the XSpace's metadata plane, or (None, why not)."""
    problems = []
    for program in trace.hlo_programs:
        if program.name != module:
            continue
        try:
            return decode_hlo_proto(program.proto, program.program_id, what=module), ""
        except ValueError as exc:
            problems.append(str(exc))
    return None, "; ".join(problems) or f"no HloProto of XLA module {module} in the trace"


def _synchronous(events: list[ThunkEvent], trace: Trace) -> list[ThunkEvent]:
    """Thunks whose `end:` marker came after other thunks of the module started keep their
    recorded span: the marker is the executor's completion of a chain, and the work between is
    the other thunks' (counted there)."""
    starts = np.sort(np.array([e.ts_ns for e in events], dtype=np.int64))
    kept = []
    for event in events:
        recorded_end = int(trace.end_ns[event.row])
        async_end = event.ts_ns + event.dur_ns
        later = np.searchsorted(starts, recorded_end, side="right")
        if async_end > recorded_end and later < len(starts) and starts[later] <= async_end:
            event = replace(event, dur_ns=min(event.dur_ns, int(trace.dur_ns[event.row])))
        kept.append(event)
    return kept


def _launches(
    trace: Trace, op_rows: np.ndarray, events: Sequence[ThunkEvent]
) -> dict[int, list[ThunkEvent]]:
    """Executor event row -> the thunks it launched. A launching event holds, on its own thread,
    the start of a thunk (the executable begins on the caller's thread), and launched every thunk
    of the module that starts inside its window, on any thread. An op event of another thread
    that merely overlaps a thunk launched nothing."""
    starts, ends = trace.ts_ns[op_rows], trace.end_ns[op_rows]
    tracks = trace.track[op_rows]
    launchers: set[int] = set()
    for event in events:
        track = trace.track[event.row]
        holding = np.nonzero((starts <= event.ts_ns) & (ends >= event.ts_ns) & (tracks == track))[0]
        if len(holding):
            launchers.add(int(holding[np.argmin(ends[holding] - starts[holding])]))
    launched: dict[int, list[ThunkEvent]] = defaultdict(list)
    for index in sorted(launchers):
        begin, end = int(starts[index]), int(ends[index])
        launched[int(op_rows[index])] = [e for e in events if begin <= e.ts_ns <= end]
    return launched


def _function_call_rows(trace: Trace, in_steps: np.ndarray, view: TfOpIndex) -> np.ndarray:
    """Rows in the steps whose event is a call of one of the level's functions: named
    `<node>:<type>` with `<type>` the function's symbol (TF names a function call's event so)."""
    functions = set(view.function_of) - {""}
    ids = [
        index
        for index, text in enumerate(trace.strings)
        if ":" in text and text.rsplit(":", 1)[1] in functions
    ]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    return np.nonzero(in_steps & np.isin(trace.name, ids))[0]


def _called_function(trace: Trace, row: int) -> str:
    """The function a launching event runs: its `tf_op_name`, else its name's `<type>` part."""
    name = str(trace.args(row).get("tf_op_name", ""))
    return name or trace.strings[int(trace.name[row])].rsplit(":", 1)[-1]


def _cluster_function(
    view: TfOpIndex,
    trace: Trace,
    launches: Sequence[int],
    program: HloModuleInfo | None,
    entry: str | None = None,
) -> str | None:
    """The IR function XLA compiled into this module. Candidates: the function a launching
    event runs (a whole `jit_compile` function runs as one event named after it), the callees
    of call ops marked `_XlaMustCompile`, and `entry` (the XLA level's own entry function); the
    one naming most of the program's TF nodes wins."""
    functions = set(view.function_of)
    candidates = [name for row in launches if (name := _called_function(trace, row)) in functions]
    if entry in functions:
        candidates.append(entry)
    for position, callee in view.callee_of.items():
        attributes = view.infos[position].op.attributes
        if "_XlaMustCompile" in attributes and ir.BoolAttr(attributes["_XlaMustCompile"]).value:
            candidates.append(callee)
    if not candidates or program is None:
        return candidates[0] if candidates else None
    nodes = {i.op_name for i in program.instructions.values() if i.op_name}
    hits = {c: sum(1 for node in nodes if view.resolve(node, c)) for c in dict.fromkeys(candidates)}
    best = max(hits, key=lambda c: hits[c])
    return best if hits[best] else None


class _Names(dict[str, list[int]]):
    """TF node name -> op positions, resolved on first use: inside the cluster's function first,
    then anywhere in the level."""

    def __init__(self, view: TfOpIndex, function: str | None) -> None:
        super().__init__()
        self._view = view
        self._function = function

    def __missing__(self, node: str) -> list[int]:
        found = self._view.resolve(node, self._function) if self._function else []
        found = found or self._view.resolve(node)
        self[node] = found
        return found

    def of(self, instruction: HloInstructionInfo) -> list[int]:
        """The ops of the instruction's TF node; at the XLA level, where one node became several
        StableHLO ops, those the instruction's opcode translates to when there are any."""
        found = self[instruction.owner]
        mnemonic = instruction.opcode.replace("-", "_")
        same = [p for p in found if self._view.infos[p].op_name == f"stablehlo.{mnemonic}"]
        return same or found


def _users(program: HloModuleInfo) -> dict[str, list[str]]:
    users: dict[str, list[str]] = defaultdict(list)
    for instruction in program.instructions.values():
        for operand in instruction.operands:
            users[operand].append(instruction.name)
    return users


def _plan(
    program: HloModuleInfo,
    names: _Names,
    hlo_op: str,
    rule: str,
    users: dict[str, list[str]],
    seen: frozenset[str] = frozenset(),
) -> _Plan:
    """(ops, weights, basis, reason) for one thunk's instruction. A kernel none of whose
    instructions names a TF node of this level (a layout copy XLA inserted, a copy of the
    cluster's arguments, a convolution XLA rewrote without metadata) serves the instruction
    that reads its result: it takes that one's plan (the nearest named user, through unnamed
    ones); a kernel nothing reads (a copy of the cluster's result) takes its producer's."""
    ops, weights, basis, reason = _own_plan(program, names, hlo_op, rule)
    if ops:
        return ops, weights, basis, reason
    instruction = program.instructions.get(hlo_op)
    producers = list(instruction.operands) if instruction is not None else []
    for user in users.get(hlo_op, []) or producers:
        if user not in seen:
            placed = _plan(program, names, user, rule, users, seen | {hlo_op})
            if placed[0]:
                return placed
    return ops, weights, basis, reason


def _own_plan(program: HloModuleInfo, names: _Names, hlo_op: str, rule: str) -> _Plan:
    """(ops, weights, basis, reason) from the instructions the kernel itself runs."""
    members = program.kernel_members(hlo_op)
    if not members:
        return [], [], "even", f"no instruction '{hlo_op}' in HLO module {program.name}"
    matched: list[tuple[HloInstructionInfo, list[int]]] = [
        (m, names.of(m)) for m in members if m.owner and names[m.owner]
    ]
    if not matched:
        named = sorted({m.owner for m in members if m.owner})
        if not named:
            return [], [], "even", "XLA-inserted instruction without op metadata (a layout copy)"
        return [], [], "even", f"TF node names not found at this level: {', '.join(named[:3])}"
    weights, basis = [1.0] * len(matched), "even"
    if rule in ("default", "base"):
        weights, basis = kernel_weights([m for m, _ in matched])
    per_op: dict[int, float] = defaultdict(float)
    for weight, (_, positions) in zip(weights, matched, strict=True):
        for position in positions:
            per_op[position] += weight / len(positions)
    ops = list(per_op)
    return ops, [per_op[p] for p in ops], basis, ""


def join_xla(
    trace: Trace,
    in_steps: np.ndarray,
    op_rows: np.ndarray,
    view: TfOpIndex,
    ledger: Ledger,
    rule: str,
    entry: str | None = None,
) -> XlaJoin:
    """Give the timed steps' XLA thunks to the TF ops they ran, in `ledger`. `entry`: the
    function of `view` that is a compiled program itself (at the XLA level)."""
    join = XlaJoin()
    modules = xla_modules(trace, in_steps)
    # A `jit_compile` function called from Python runs as one event `<f>:<f>` that the reader
    # may not take for an op (a `<lambda>` in the name: no display name in the XPlane).
    launchers = (
        np.union1d(op_rows, _function_call_rows(trace, in_steps, view)) if modules else op_rows
    )
    owners = payload_owners(view.infos) if modules else {}
    for module in modules:
        found, _ = thunk_events(trace, module)
        events = _synchronous([e for e in found if in_steps[e.row]], trace)
        launched = _launches(trace, launchers, events)
        join.launch_rows.update(launched)
        for row, thunks in launched.items():
            begin, end = int(trace.ts_ns[row]), int(trace.end_ns[row])
            inside = [(max(t.ts_ns, begin), min(t.ts_ns + t.dur_ns, end)) for t in thunks]
            busy = union_ns([s for s in inside if s[1] > s[0]])
            join.launch_overhead_ns += max(int(trace.dur_ns[row]) - busy, 0)
        program, why_not = _program(trace, module)
        function = _cluster_function(view, trace, sorted(launched), program, entry)
        join.modules[module] = function or ""
        names = _Names(view, function)
        plans: dict[str, _Plan] = {}
        users = _users(program) if program is not None else {}
        for event in events:
            join.profiled_ns += event.dur_ns
            join.spans.append(
                CountedSpan(
                    event.ts_ns,
                    int(trace.end_ns[event.row]),
                    int(trace.track[event.row]),
                    event.dur_ns,
                )
            )
            if program is None:
                ledger.unattributed(event.name, event.dur_ns, why_not)
                continue
            if event.hlo_op not in plans:
                plan = _plan(program, names, event.hlo_op, rule, users)
                plans[event.hlo_op] = _to_payload_owners(plan, owners)
            ops, weights, basis, reason = plans[event.hlo_op]
            if not ops:
                ledger.unattributed(event.name, event.dur_ns, reason)
                continue
            ledger.record(
                event.name, event.ts_ns, event.dur_ns, ops, weights=weights, basis=basis,
                group=f"xla:{module}:{event.hlo_op}", source=f"xla:{event.hlo_op}",
            )  # fmt: skip
        if program is None:
            join.warnings.append(f"XLA module {module}: {why_not}; its thunks stay unattributed")
            continue
        reasons, folded = _compiled_reasons(view, program, names, function, module)
        join.compiled.update(reasons)
        join.folded.update(folded)
        for position, callee in view.callee_of.items():
            if function and callee == function:
                join.compiled[position] = LAUNCH.format(module=module, function=function)
    return join


def _to_payload_owners(plan: _Plan, owners: dict[int, int]) -> _Plan:
    """The plan with a combiner's op (in a reduce's body) replaced by its reduce: XLA CPU runs
    partial reductions as kernels named after the reducer's `add`, and the printed IR shows
    the body as `applies stablehlo.add`, with no room for an attribute of its own."""
    ops, weights, basis, reason = plan
    if not any(op in owners for op in ops):
        return plan
    merged: dict[int, float] = defaultdict(float)
    for op, weight in zip(ops, weights, strict=True):
        merged[owners.get(op, op)] += weight
    return list(merged), list(merged.values()), basis, reason


def _compiled_reasons(
    view: TfOpIndex,
    program: HloModuleInfo,
    names: _Names,
    function: str | None,
    module: str,
) -> tuple[dict[int, str], set[int]]:
    """Why each op of the cluster has no time of its own: it is an instruction that ran inside
    another thunk, or XLA left no instruction for it (those positions returned too: the compiler
    removed them, they do no work). Never "never ran": the cluster ran."""
    instructions: dict[int, list[str]] = defaultdict(list)
    for instruction in program.instructions.values():
        if instruction.op_name:
            for position in names.of(instruction):
                instructions[position].append(f"{instruction.opcode} {instruction.name}")
    reasons = {
        position: NO_THUNK.format(module=module, instructions=", ".join(sorted(found)[:2]))
        for position, found in instructions.items()
    }
    folded: set[int] = set()
    if function:
        for position, owner in enumerate(view.function_of):
            if owner == function and position not in reasons:
                reasons[position] = NO_INSTRUCTION.format(module=module)
                folded.add(position)
    return reasons, folded


def with_structure_reasons(
    reasons: dict[int, str],
    never_ran: set[int],
    ledger: Ledger,
    join: XlaJoin,
    untimed: Ledger,
) -> tuple[dict[int, str], set[int]]:
    """Reasons for ops with no time that ran where no timed event shows them: inside an XLA
    cluster, or only in the untimed reference steps (`untimed`, whose time was not taken). None
    of them is "never ran"."""
    compiled = {p: why for p, why in join.compiled.items() if p not in ledger.accounts}
    referenced = {
        p: UNTIMED for p in untimed.accounts if p not in ledger.accounts and p not in compiled
    }
    # Ops XLA left no instruction for did no work: removed by the compiler, like grappler's.
    removed = (never_ran - set(compiled) - set(referenced)) | (join.folded & set(compiled))
    return {**reasons, **referenced, **compiled}, removed


def uncalled_reasons(view: TfOpIndex, entry: str) -> dict[int, str]:
    """The ops of functions other than `entry` that no op of the module refers to (a symbol
    reference in any attribute: `func.call`'s callee, TF's `f` and `branches`): they never run.

    The HLO importer keeps a reduction's computation as a private function besides the region
    of each `stablehlo.reduce` that applies it; nothing calls the function.
    """
    called = {entry}
    for info in view.infos:
        attributes = info.op.attributes
        for key in attributes:
            called.update(_symbols(attributes[key]))
    return {
        position: UNCALLED.format(function=function)
        for position, function in enumerate(view.function_of)
        if function and function not in called
    }


def _symbols(attribute: ir.Attribute) -> list[str]:
    """The function names a symbol reference (or an array of them) holds."""
    if isinstance(attribute, ir.FlatSymbolRefAttr):
        return [attribute.value]
    if isinstance(attribute, ir.SymbolRefAttr):
        return [attribute.value[0]]
    if isinstance(attribute, ir.ArrayAttr):
        return [name for element in attribute for name in _symbols(element)]
    return []


def borrowed_warning(reference_ns: int) -> str:
    """The terminal line that says time was taken from the untimed reference steps."""
    return (
        f"{reference_ns / 1e6:.3f} ms of op time was taken from the untimed reference steps "
        "(--reference-time): kernels the timed steps did not record, copied into every step"
    )


def timed_step_check(
    trace: Trace, marker: str, op_rows: np.ndarray, join: XlaJoin, untimed_ns: int
) -> StepCheck | None:
    """The step-time check over the timed steps: executor op events, XLA thunks, and time taken
    from the reference steps spread over them."""
    marker_id = trace.string_id(marker)
    steps = trace.rows_of_kind(EventKind.STEP)
    if marker_id is not None:
        steps = steps[trace.name[steps] == marker_id]
    windows = sorted((int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in steps.tolist())
    spans = [
        CountedSpan(int(trace.ts_ns[r]), int(trace.end_ns[r]), int(trace.track[r]), int(d))
        for r, d in zip(op_rows.tolist(), trace.dur_ns[op_rows].tolist(), strict=True)
    ]
    return check_step_times(windows, spans + join.spans, untimed_ns)

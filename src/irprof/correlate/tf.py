"""TensorFlow correlator: XPlane op events -> TF-dialect ops, joined on graph node names.

An executor op event is named `"<node>:<type>"`; the node name is the op's runtime name, which
the IR keeps in its location (`irprof.mlir.keys`). The join, in order of preference:

1. exact node name (ops of non-entry functions are keyed `node@function`, and also found by
   their bare node name inside the function a call op reached);
2. runtime-inlined names: `<call node>/<inner node>`, where `<call node>` is a call op
   (`StatefulPartitionedCall`, `PartitionedCall`) whose callee holds `<inner node>`, recursively;
3. at derived levels, a node CSE merged away (tf-standard keeps one of several identical
   `ReadVariableOp`s) is found in the raw `tf` level and its event goes to the survivor, the op
   reading the same function arguments.

Only events inside the capture's step markers count. `_Arg`/`_Retval` events (argument
copy-in, result copy-out) have no op to go to: arguments are block arguments and the return op
has an unknown location, so they stay unmatched with a reason.

Fused kernels: grappler's remapper and oneDNN name a fused kernel after the LAST node of the
chain (`conv/Relu:_MklNativeFusedConv2D` is Conv2D+BiasAdd+Relu). `FUSION_RULES` recovers the
chain per kernel family: walk producers (operand 0) from the named op back to the kernel's base
op type, or for `*WithBias` backprop kernels add the `BiasAddGrad` that reads the same gradient.
Every op of the chain receives the event in `kernels`, the other members' names in
`fused_with`, and a share of the time by `CorrelationOptions.fused_time_rule`:
"default"/"equal" splits the duration evenly (the remainder goes to the base op), "base" gives it
all to the base compute op (the others get zero-time records). Shares sum to the event, so the
totals never double count.

Unmatched non-trivial ops get a reason from the graph the runtime executed
(`tf_runtime_graph.json`, TensorFlow's own dump): pruned, folded into a constant, or silent.

Eager traces (op-by-op execution) carry only `EagerLocalExecute: <Type>`: events are matched to
ops of that type in IR order within each profiled step, and the coverage carries a warning.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.tf_graph import ModuleView, fused_chain, share_time
from irprof.coverage import Coverage, UnmatchedEvent, is_trivial_op
from irprof.errors import BundleError
from irprof.mlir.keys import split_function_suffix
from irprof.mlir.locations import render
from irprof.mlir.module_coverage import coverage_for
from irprof.opprofile import OpProfile, OpProfileEntry, ProfileData
from irprof.trace.model import EventKind, Trace

TF_LEVELS = ("tf", "tf-standard", "post-grappler")
RAW_LEVEL = "tf"
EAGER_PREFIX = "EagerLocalExecute: "
NEVER_RAN = "never ran: "
PRUNED = NEVER_RAN + "not in the graph the runtime executed (grappler pruned or fused it away)"
FOLDED = NEVER_RAN + "grappler folded it into a constant"
SILENT = "in the graph the runtime executed, yet no event in the profiled steps"
CONSTANT_KERNELS = frozenset({"Const", "HostConst"})
FOLDING_PREFIX = "ConstantFolding/"
PLUMBING_KERNELS = {
    "_Arg": "function argument copy-in (a block argument in the IR, not an op)",
    "_Retval": "function result copy-out (the IR return op has no named location)",
}
MAX_LOCATION_CHARS = 240


@dataclass
class Attribution:
    """Per-op accumulated durations, first start, kernels and fusion partners."""

    durations: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    first_ts: dict[int, int] = field(default_factory=dict)
    kernels: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    fused_with: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    sources: dict[int, str] = field(default_factory=dict)
    attributed_ns: int = 0

    def add(
        self, view: ModuleView, chain: Sequence[int], event: str, ts: int, shares: list[int]
    ) -> None:
        """Record one event over `chain` (base op first) with the given time shares."""
        names = [view.infos[p].keys.name or view.infos[p].op_name for p in chain]
        for position, share in zip(chain, shares, strict=True):
            self.durations[position].append(share)
            self.first_ts[position] = min(ts, self.first_ts.get(position, ts))
            self.kernels[position].append(event)
            self.fused_with[position].extend(
                n for p, n in zip(chain, names, strict=True) if p != position
            )
            self.sources.setdefault(position, f"xplane:{names[-1]}")
        self.attributed_ns += sum(shares)


def _step_mask(trace: Trace, marker: str) -> np.ndarray:
    """Rows inside a step marker window (all rows when the trace has no markers)."""
    marker_id = trace.string_id(marker)
    steps = trace.rows_of_kind(EventKind.STEP)
    if marker_id is not None:
        steps = steps[trace.name[steps] == marker_id]
    if len(steps) == 0:
        return np.ones(len(trace), dtype=bool)
    mask = np.zeros(len(trace), dtype=bool)
    for row in steps.tolist():
        begin, end = int(trace.ts_ns[row]), int(trace.end_ns[row])
        mask |= (trace.ts_ns >= begin) & (trace.end_ns <= end)
    return mask


def _trace_file(bundle: RunBundle) -> Path:
    path = bundle.primary_trace_path
    if not path.name.endswith(".xplane.pb"):
        raise BundleError(f"{bundle.manifest_path}: lists no .xplane.pb trace file")
    return path


def _runtime_graph(bundle: RunBundle) -> tuple[dict[str, str], str] | None:
    """Node name -> op type of the graph the runtime executed, and where that graph came from."""
    name = bundle.manifest().options.get("runtime_graph")
    if not name:
        return None
    path = bundle.member(str(name), what="runtime graph")
    try:
        graph = json.loads(path.read_text(encoding="utf-8"))
        nodes = {str(node): str(spec["op"]) for node, spec in graph["nodes"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BundleError(f"{path}: malformed runtime graph ({exc!r})") from exc
    return nodes, str(graph.get("source", "offline grappler"))


def _attribute_graph_events(
    trace: Trace,
    rows: np.ndarray,
    view: ModuleView,
    reference: Callable[[], ModuleView | None],
    rule: str,
) -> tuple[Attribution, dict[str, list[int]], dict[str, str]]:
    """Join executor op events by node name; returns unmatched event name -> durations, reasons."""
    attribution = Attribution()
    unmatched: dict[str, list[int]] = defaultdict(list)
    reasons: dict[str, str] = {}
    resolved: dict[str, tuple[list[int], str]] = {}
    for row, args in zip(rows.tolist(), trace.args_many(rows), strict=True):
        event = trace.name_of(row)
        duration, ts = int(trace.dur_ns[row]), int(trace.ts_ns[row])
        if event not in resolved:
            resolved[event] = _resolve_event(
                view, reference, args["tf_op_name"], args["tf_op_type"]
            )
        chain, reason = resolved[event]
        if not chain:
            unmatched[event].append(duration)
            reasons[event] = reason
            continue
        attribution.add(view, chain, event, ts, share_time(duration, len(chain), rule))
    return attribution, unmatched, reasons


def _resolve_event(
    view: ModuleView, reference: Callable[[], ModuleView | None], node: str, kernel_type: str
) -> tuple[list[int], str]:
    """The chain of ops one `node:type` event covers, or ([], why not)."""
    if kernel_type == "_Arg":
        # A graph imported with `convert_graph_def` (post-grappler) keeps arguments as
        # Placeholder nodes, named like the argument with `/` for `_` and any case.
        placeholders = view.placeholders.get(node.lower(), [])
        if placeholders:
            return placeholders, ""
    if kernel_type in PLUMBING_KERNELS:
        # Block arguments and the unknown-location return op cannot carry an OpKey that finds
        # them again, so this time stays unattributed (and is reported).
        return [], PLUMBING_KERNELS[kernel_type]
    positions = view.resolve(node)
    if positions:
        return fused_chain(view, positions[0], kernel_type), ""
    survivor = _cse_survivor(view, reference, node)
    if survivor is not None:
        return [survivor], ""
    return [], "no op with this node name at this level (renamed, merged or not in the IR)"


def _cse_survivor(
    view: ModuleView, reference: Callable[[], ModuleView | None], node: str
) -> int | None:
    """The op CSE kept in place of `node`, found through the raw `tf` level.

    `tf-standard-pipeline` merges ops that read the same function arguments (the optimizer's
    repeated `ReadVariableOp` of one learning rate) and keeps one location: the raw level still
    names the merged op, and the op with its signature here is the survivor.
    """
    raw_view = reference()
    if raw_view is None:
        return None
    for raw in raw_view.resolve(node):
        signature = raw_view.argument_signature(raw)
        if signature is None:
            continue
        # Function symbols agree between levels imported from the same concrete function.
        matches = view.by_signature.get(signature, [])
        if len(matches) == 1:
            return matches[0]
    return None


def _attribute_eager_events(
    trace: Trace, rows: np.ndarray, view: ModuleView, step_rows: list[tuple[int, int]]
) -> tuple[Attribution, dict[str, list[int]], dict[str, str]]:
    """Match `EagerLocalExecute: <Type>` events to ops of that type in IR order, per step."""
    by_type: dict[str, list[int]] = defaultdict(list)
    for position in range(len(view.infos)):
        by_type[view.op_type(position)].append(position)
    attribution = Attribution()
    unmatched: dict[str, list[int]] = defaultdict(list)
    reasons: dict[str, str] = {}
    seen: dict[tuple[int, str], int] = defaultdict(int)
    for row in rows.tolist():
        event = trace.name_of(row)
        op_type = event.removeprefix(EAGER_PREFIX)
        ts, duration = int(trace.ts_ns[row]), int(trace.dur_ns[row])
        step = next((i for i, (b, e) in enumerate(step_rows) if b <= ts <= e), -1)
        index = seen[(step, op_type)]
        seen[(step, op_type)] += 1
        candidates = by_type.get(op_type, [])
        if index >= len(candidates):
            unmatched[event].append(duration)
            reasons[event] = f"eager op with no tf.{op_type} op left to match in the IR"
            continue
        attribution.add(view, [candidates[index]], event, ts, [duration])
    return attribution, unmatched, reasons


@dataclass(frozen=True)
class TfCorrelator:
    """Correlator for `irprof capture tf` bundles."""

    framework: str = "tf"
    levels: tuple[str, ...] = TF_LEVELS

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Join the bundle's XPlane trace to the ops of `RUN/ir/<level>.mlir`."""
        return correlate_module(bundle, bundle.ir(level), level, options)


def correlate_module(
    bundle: RunBundle,
    module: ir.Module | ir.Operation,
    level: str,
    options: CorrelationOptions,
) -> CorrelationResult:
    """Join the bundle's XPlane trace to the ops of `module` (`level` IR, maybe transformed)."""
    manifest = bundle.manifest()
    if manifest.framework != "tf":
        raise BundleError(f"{bundle.manifest_path}: framework is {manifest.framework!r}, not tf")
    trace_path = _trace_file(bundle)
    trace = bundle.trace()
    view = ModuleView.of(module)
    in_steps = _step_mask(trace, manifest.option_str("step_marker", "irprof_step"))
    op_rows = np.nonzero(in_steps & (trace.kind == int(EventKind.FRAMEWORK_OP)))[0]
    warnings: list[str] = []
    if len(op_rows):
        attribution, unmatched, reasons = _attribute_graph_events(
            trace, op_rows, view, _raw_level(bundle, level), options.fused_time_rule
        )
    else:
        eager = np.array(
            [n.startswith(EAGER_PREFIX) and "__inference_" not in n for n in trace.strings]
        )
        op_rows = np.nonzero(in_steps & eager[trace.name])[0]
        steps = trace.rows_of_kind(EventKind.STEP).tolist()
        windows = [(int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in steps]
        attribution, unmatched, reasons = _attribute_eager_events(trace, op_rows, view, windows)
        warnings.append(
            "eager trace: events carry op types but no node names; they were matched to ops "
            "of the same type in IR order within each step, which is a guess when a type "
            "repeats"
        )
    profiled_ns = int(trace.dur_ns[op_rows].sum())
    return CorrelationResult(
        opprofile=_opprofile(view, attribution, level, profiled_ns, trace_path, bundle),
        coverage=_coverage(
            bundle, view, attribution, level, profiled_ns, unmatched, reasons, warnings
        ),
    )


def _raw_level(bundle: RunBundle, level: str) -> Callable[[], ModuleView | None]:
    """The raw `tf` level's view, loaded on first use (None at `tf` itself or when absent)."""

    @functools.cache
    def load() -> ModuleView | None:
        if level == RAW_LEVEL or RAW_LEVEL not in bundle.manifest().ir_levels:
            return None
        return ModuleView.of(bundle.ir(RAW_LEVEL))

    return load


def _coverage(
    bundle: RunBundle,
    view: ModuleView,
    attribution: Attribution,
    level: str,
    profiled_ns: int,
    unmatched: dict[str, list[int]],
    reasons: dict[str, str],
    warnings: list[str],
) -> Coverage:
    runtime = _runtime_graph(bundle)
    silent = SILENT
    recorded = bundle.manifest().options.get("recorded_tracer_options", {})
    host_level = recorded.get("host_tracer_level", 3) if isinstance(recorded, dict) else 3
    if isinstance(host_level, int) and host_level < 3:
        silent += " (host tracer level below 3 skips cheap kernels: capture with --host-level 3)"
    # Constant folding replaces some nodes by `ConstantFolding/<node>-<suffix>` constants.
    folded = {
        name.removeprefix(FOLDING_PREFIX).rsplit("-", 2)[0]
        for name in (runtime[0] if runtime else {})
        if name.startswith(FOLDING_PREFIX)
    }
    op_reasons: dict[int, str] = {}
    for position, info in enumerate(view.infos):
        if position in attribution.durations:
            continue
        node = split_function_suffix(info.keys.name or "")[0]
        if position in view.callee_of:
            op_reasons[position] = (
                f"call inlined by the runtime: the ops of @{view.callee_of[position]} "
                "received its events as `<call>/<node>`"
            )
            continue
        if runtime is None:
            continue
        executed_as = runtime[0].get(node)
        if executed_as is None:
            op_reasons[position] = FOLDED if node in folded else PRUNED
        elif executed_as in CONSTANT_KERNELS and info.op_name != "tf.Const":
            op_reasons[position] = FOLDED
        else:
            op_reasons[position] = silent
    events = [
        UnmatchedEvent(name, sum(durs), len(durs), reasons[name])
        for name, durs in unmatched.items()
    ]
    never_ran = {
        position
        for position, reason in op_reasons.items()
        if reason.startswith(NEVER_RAN) and not is_trivial_op(view.infos[position].op_name)
    }
    coverage = coverage_for(
        [(info.op, info.key) for info in view.infos],
        attribution.durations.keys(),
        level=level,
        profiled_ns=profiled_ns,
        attributed_ns=attribution.attributed_ns,
        unmatched_events=events,
        reasons=op_reasons,
        # Ops the executed graph shows grappler pruned or folded do no work at run time.
        not_executed=never_ran,
        warnings=warnings,
    )
    return dataclasses.replace(
        coverage, extra={"runtime_graph_source": runtime[1] if runtime else None}
    )


def _opprofile(
    view: ModuleView,
    attribution: Attribution,
    level: str,
    profiled_ns: int,
    trace_path: Path,
    bundle: RunBundle,
) -> OpProfile:
    entries = []
    for position in sorted(attribution.durations):
        info = view.infos[position]
        location = render(info.loc)
        if len(location) > MAX_LOCATION_CHARS:
            location = location[: MAX_LOCATION_CHARS - 3] + "..."
        data = ProfileData.from_durations(
            attribution.durations[position],
            attribution.first_ts[position],
            profiled_ns,
            kernels=attribution.kernels[position],
            fused_with=attribution.fused_with[position],
            source=attribution.sources[position],
        )
        entries.append(OpProfileEntry(info.key, data, info.op_name, location))
    return OpProfile(
        level=level,
        framework="tf",
        entries=tuple(entries),
        totals={
            "profiled_ns": profiled_ns,
            "attributed_ns": attribution.attributed_ns,
            "steps": bundle.manifest().steps,
        },
        source_trace=str(trace_path.relative_to(bundle.root)),
    )


CORRELATOR = TfCorrelator()

"""TensorFlow correlator: XPlane op events -> TF-dialect ops, joined on graph node names.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/correlate.py`.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.errors import BundleError, CorrelationError
from irprof.frameworks.tf.coverage import tf_op_reasons
from irprof.frameworks.tf.fusion import ExecutedGraph, Membership, feeds_only_pruned
from irprof.frameworks.tf.graph import TfOpIndex, fused_chain
from irprof.frameworks.tf.reference import load_reference_steps
from irprof.frameworks.tf.shapes import RuntimeShapes, shaped_flops
from irprof.frameworks.tf.training import tf_training_record
from irprof.frameworks.tf.xla import (
    UNTIMED,
    XLA_ENTRY,
    XLA_LEVEL,
    borrowed_warning,
    join_xla,
    timed_step_check,
    uncalled_reasons,
    with_structure_reasons,
)
from irprof.mlir.cost_model import estimate_flops, share_weights
from irprof.mlir.locations import render
from irprof.mlir.op_index import OpInfo
from irprof.trace.model import EventKind, Trace

TF_LEVELS = ("tf", "tf-standard", "post-grappler", XLA_LEVEL)
RAW_LEVEL = "tf"
EAGER_PREFIX = "EagerLocalExecute: "
PLUMBING_KERNELS = {
    "_Arg": "function argument copy-in (a block argument in the IR, not an op)",
    "_Retval": "function result copy-out (the IR return op has no named location)",
}
MAX_LOCATION_CHARS = 240
# TF names an op run eagerly after its type (`TensorSliceDataset:TensorSliceDataset`): no graph
# node, so no op of the IR, is it.
EAGER_OUTSIDE = (
    "no op with this node name at this level; named after its type, as TF names an op it runs "
    "eagerly: likely run outside the IR's function, e.g. the input pipeline Keras builds from "
    "NumPy arrays at every call (give it a tf.data dataset)"
)
# tf.data's kernels: datasets, their iterators and the multi-device iterators a distribution
# strategy makes; Keras (re)builds them around the step, in graphs of their own.
INPUT_PIPELINE = (
    "a tf.data input-pipeline op ({type}) run around the step, outside the IR's function: the "
    "dataset and iterators Keras builds at every call (from NumPy arrays: give it a tf.data "
    "dataset) or a distribution strategy makes"
)


def is_input_pipeline(kernel_type: str) -> bool:
    """tf.data's op types: `...Dataset` (and `...DatasetV2`, ...), iterator ops."""
    return kernel_type.rstrip("V0123456789").endswith("Dataset") or "Iterator" in kernel_type


DEAD_AT_LEVEL = (
    "ran (a stateful read the runtime keeps), but every op reading its value was pruned by "
    "grappler, and this level's pipeline removed it as dead code: no op here does its work"
)


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


def _attribute_graph_events(
    trace: Trace,
    rows: np.ndarray,
    view: TfOpIndex,
    reference: Callable[[], TfOpIndex | None],
    membership: Membership | None,
    rule: str,
    shapes: RuntimeShapes | None,
    ledger: Ledger | None = None,
    source: str = "xplane",
) -> Ledger:
    """Join executor op events by node name into a ledger (a new one, or `ledger`)."""
    ledger = ledger if ledger is not None else Ledger()
    resolved: dict[str, tuple[list[int], str]] = {}
    plans: dict[str, tuple[list[float], str]] = {}
    for row, args in zip(rows.tolist(), trace.args_many(rows), strict=True):
        event = trace.name_of(row)
        duration, ts = int(trace.dur_ns[row]), int(trace.ts_ns[row])
        if event not in resolved:
            resolved[event] = _resolve_event(
                view, reference, membership, args["tf_op_name"], args["tf_op_type"]
            )
            plans[event] = _weights(view, resolved[event][0], rule, shapes)
        members, reason = resolved[event]
        if not members:
            ledger.unattributed(event, duration, reason)
            continue
        weights, basis = plans[event]
        names = [view.infos[p].keys.name or view.infos[p].op_name for p in members]
        ledger.record(
            event, ts, duration, members, weights=weights, basis=basis,
            group=f"tf:{args['tf_op_name']}", source=f"{source}:{names[0]}",
        )  # fmt: skip
    return ledger


def _weights(
    view: TfOpIndex, members: list[int], rule: str, shapes: RuntimeShapes | None
) -> tuple[list[float], str]:
    """How a fused kernel's time is split over its members under `fused_time_rule`."""
    if not members:
        return [], "even"
    if rule == "base":
        # The costliest member; with no shapes, the deepest producer (members run named op
        # first, producers after), which is the kernel's base compute op.
        order = {p: i for i, p in enumerate(members)}
        base = max(members, key=lambda p: (estimate_flops(view.infos[p].op) or 0, order[p]))
        return [1.0 if p == base else 0.0 for p in members], "flops"
    if rule == "equal":
        return [1.0] * len(members), "even"
    if rule != "default":
        raise CorrelationError(f"unknown fused_time_rule {rule!r}; known: default, equal, base")
    weights, basis = share_weights([view.infos[p].op for p in members])
    if basis == "even" and len(members) > 1 and shapes is not None:
        # The IR is shapeless here (variable reads, `None` dims): the recorded shapes.
        flops = shaped_flops(view, members, shapes)
        if flops is not None and sum(flops) > 0:
            return [float(f) for f in flops], "flops"
    return weights, basis


def _resolve_event(
    view: TfOpIndex,
    reference: Callable[[], TfOpIndex | None],
    membership: Membership | None,
    node: str,
    kernel_type: str,
) -> tuple[list[int], str]:
    """The ops one `node:type` event covers, or ([], why not)."""
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
    if membership is not None and node in membership.graph.nodes:
        members = membership.members_of(node)
        if members:
            return members, ""
    positions = view.resolve(node)
    if positions:
        # No executed graph to read the fusion from: the named op's producer chain.
        return fused_chain(view, positions[0], kernel_type), ""
    survivor = _cse_survivor(view, reference, node)
    if survivor is not None:
        return [survivor], ""
    owner = view.control_flow_owner(node)
    if owner is not None:
        # A Switch/Merge/pivot the runtime built when it lowered this If/While/Case.
        return [owner], ""
    raw_view = reference()
    if raw_view is not None and raw_view.resolve(node):
        raw = raw_view.resolve(node)
        if membership is not None and feeds_only_pruned(raw_view, raw, membership):
            return [], DEAD_AT_LEVEL
        return [], (
            f"an op of the raw `{RAW_LEVEL}` level that this level's pipeline moved or merged "
            "(no op here reads the same arguments)"
        )
    if membership is not None and node in membership.graph.nodes:
        return [], (
            "no op with this node name at this level, and the executed graph does not show "
            "which op it replaced (no unique absent op computes its value from the same inputs)"
        )
    if is_input_pipeline(kernel_type):
        return [], INPUT_PIPELINE.format(type=kernel_type)
    if node == kernel_type:
        return [], EAGER_OUTSIDE
    return [], "no op with this node name at this level (renamed, merged or not in the IR)"


def _cse_survivor(
    view: TfOpIndex, reference: Callable[[], TfOpIndex | None], node: str
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
    trace: Trace, rows: np.ndarray, view: TfOpIndex, step_rows: list[tuple[int, int]]
) -> Ledger:
    """Match `EagerLocalExecute: <Type>` events to ops of that type in IR order, per step."""
    by_type: dict[str, list[int]] = defaultdict(list)
    for position in range(len(view.infos)):
        by_type[view.op_type(position)].append(position)
    ledger = Ledger()
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
            ledger.unattributed(
                event, duration, f"eager op with no tf.{op_type} op left to match in the IR"
            )
            continue
        position = candidates[index]
        name = view.infos[position].keys.name or view.infos[position].op_name
        ledger.record(event, ts, duration, [position], source=f"xplane:{name}")
    return ledger


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
    view = TfOpIndex.of(module)
    graph = ExecutedGraph.of_bundle(bundle) if level != XLA_LEVEL else None
    membership = Membership.build(view, graph) if graph is not None else None
    in_steps = _step_mask(trace, manifest.option_str("step_marker", "irprof_step"))
    op_rows = np.nonzero(in_steps & (trace.kind == int(EventKind.FRAMEWORK_OP)))[0]
    warnings: list[str] = []
    reference_ns = 0
    untimed = Ledger()  # the reference steps' stand-ins, when their time is not taken
    # XLA clusters: thunks -> HLO -> TF ops; the events that launched them are no op time.
    ledger = Ledger()
    entry = XLA_ENTRY if level == XLA_LEVEL else None
    xla = join_xla(trace, in_steps, op_rows, view, ledger, options.fused_time_rule, entry)
    op_rows = op_rows[~np.isin(op_rows, list(xla.launch_rows))]
    if level == XLA_LEVEL:
        op_rows = op_rows[:0]  # the XLA level holds the clusters' work only
    elif len(op_rows) or xla.launch_rows or xla.profiled_ns:
        marker = manifest.option_str("step_marker", "irprof_step")
        reference = load_reference_steps(bundle, trace, op_rows, marker)
        shape_source = (reference.trace, reference.rows) if reference else (trace, op_rows)
        shapes = (
            RuntimeShapes.collect(view, graph, membership, *shape_source)
            if graph is not None and membership is not None
            else None
        )
        raw = _raw_level(bundle, level)
        _attribute_graph_events(
            trace, op_rows, view, raw, membership, options.fused_time_rule, shapes, ledger
        )
        if reference is not None and len(reference.stand_ins):
            # Kernels the timed steps (host level 2) did not record, from the reference steps:
            # structure only, unless the user asked for their time (`--reference-time`).
            borrow = options.reference_time or manifest.options.get("reference_time") is True
            _attribute_graph_events(
                reference.trace, reference.stand_ins, view, raw, membership,
                options.fused_time_rule, shapes, ledger if borrow else untimed,
                "xplane-reference",
            )  # fmt: skip
            if borrow:
                reference_ns = int(reference.trace.dur_ns[reference.stand_ins].sum())
                warnings.append(borrowed_warning(reference_ns))
    else:
        eager = np.array(
            [n.startswith(EAGER_PREFIX) and "__inference_" not in n for n in trace.strings]
        )
        op_rows = np.nonzero(in_steps & eager[trace.name])[0]
        steps = trace.rows_of_kind(EventKind.STEP).tolist()
        windows = [(int(trace.ts_ns[r]), int(trace.end_ns[r])) for r in steps]
        ledger = _attribute_eager_events(trace, op_rows, view, windows)
        warnings.append(
            "eager trace: events carry op types but no node names; they were matched to ops "
            "of the same type in IR order within each step, which is a guess when a type "
            "repeats"
        )
    profiled_ns = int(trace.dur_ns[op_rows].sum()) + xla.profiled_ns + reference_ns
    warnings += xla.warnings
    reasons, never_ran = tf_op_reasons(bundle, view, ledger, membership)
    reasons, never_ran = with_structure_reasons(reasons, never_ran, ledger, xla, untimed)
    if entry is not None:
        uncalled = uncalled_reasons(view, entry)
        reasons = {**reasons, **uncalled}
        never_ran = never_ran | set(uncalled)
    # Ran, with no time of their own: cheap ops seen only in the untimed reference steps, and
    # XLA instructions that ran inside other thunks.
    untimed_ops = {
        position
        for position, why in reasons.items()
        if position not in never_ran and (why == UNTIMED or position in xla.compiled)
    }
    # What those ops took in the untimed steps: told, never counted (`--reference-time` does).
    untimed_ns = sum(
        sum(untimed.accounts[p].durations) for p in untimed_ops & set(untimed.accounts)
    )
    source = membership.graph.source if membership is not None else None
    return finish_level(
        ledger,
        view.infos,
        ledger.entries(view.infos, profiled_ns, location_of=_location),
        level=level,
        framework="tf",
        profiled_ns=profiled_ns,
        where=f"{trace_path} -> {level}",
        reasons=reasons,
        not_executed=never_ran,
        untimed=untimed_ops,
        warnings=warnings,
        totals={"steps": manifest.steps},
        coverage_extra={
            "runtime_graph_source": source,
            **({"reference_ns": reference_ns} if reference_ns else {}),
            **({"untimed_reference_ns": untimed_ns} if untimed_ns else {}),
            **({"xla": xla.record()} if xla.modules else {}),
        },
        training=tf_training_record(view, ledger),
        source_trace=str(trace_path.relative_to(bundle.root)),
        step_check=timed_step_check(
            trace, manifest.option_str("step_marker", "irprof_step"), op_rows, xla, reference_ns
        ),
    )


def _raw_level(bundle: RunBundle, level: str) -> Callable[[], TfOpIndex | None]:
    """The raw `tf` level's view, loaded on first use (None at `tf` itself or when absent)."""

    @functools.cache
    def load() -> TfOpIndex | None:
        if level == RAW_LEVEL or RAW_LEVEL not in bundle.manifest().ir_levels:
            return None
        return TfOpIndex.of(bundle.ir(RAW_LEVEL))

    return load


def _location(info: OpInfo) -> str:
    location = render(info.loc)
    if len(location) > MAX_LOCATION_CHARS:
        location = location[: MAX_LOCATION_CHARS - 3] + "..."
    return location


CORRELATOR = TfCorrelator()

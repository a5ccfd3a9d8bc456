"""Grappler's arithmetic optimizer rewrites a residual block's batch-norm add and skip `Add` into
`ArithmeticOptimizer/AddOpsRewrite_*` nodes; in a chain of blocks each rewrite feeds the next
block's. Every block's adds must get that block's rewrite kernels (never the last block's), and
none may be "never ran".

Three plain Keras residual blocks (conv, BN, ReLU, conv, BN, add the block input) are captured
once at every TF level. The expected answer is computed here from the executed graph's def-use,
the level's IR and the trace's own events, not from irprof's join; the helpers are shared with
test_zoo_keras.py.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest
from iree.compiler import ir

from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.coverage import Coverage
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf
from irprof.frameworks.tf.correlate import CORRELATOR
from irprof.mlir import module_coverage
from irprof.mlir.op_index import derive_op_infos
from irprof.opprofile import OpProfileEntry
from irprof.trace.model import EventKind

IR_LEVELS = ("tf", "tf-standard", "post-grappler")
BLOCKS = 3
ADD_KERNELS = frozenset({"Add", "AddV2", "AddN"})
KERNEL_PREFIXES = ("_MklNative", "_Mkl", "_")
NEVER_RAN = "never ran"

MODEL = f'''"""{BLOCKS} plain Keras residual blocks: conv, BN, ReLU, conv, BN, add the input."""

import tensorflow as tf


def irprof_model(mode="infer"):
    tf.keras.utils.set_random_seed(5)
    layers = tf.keras.layers
    inputs = tf.keras.Input((16, 16, 8), batch_size=4)
    x = inputs
    for k in range({BLOCKS}):
        y = layers.Conv2D(8, 3, padding="same", use_bias=False, name=f"b{{k}}_conv1")(x)
        y = layers.BatchNormalization(name=f"b{{k}}_bn1")(y)
        y = layers.ReLU(name=f"b{{k}}_relu")(y)
        y = layers.Conv2D(8, 3, padding="same", use_bias=False, name=f"b{{k}}_conv2")(y)
        y = layers.BatchNormalization(name=f"b{{k}}_bn2")(y)
        x = layers.Add(name=f"b{{k}}_add")([x, y])
    pooled = layers.GlobalAveragePooling2D(name="pool")(x)
    model = tf.keras.Model(inputs, layers.Dense(3, name="head")(pooled))

    @tf.function
    def infer(x):
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((4, 16, 16, 8), seed=(5, 6)),)
'''


# Ground truth, computed from the bundle's own files.


def runtime_nodes(bundle: RunBundle) -> dict[str, dict[str, Any]]:
    """The executed graph as recorded: node -> {op, inputs, fused_ops}."""
    name = str(bundle.manifest().options["runtime_graph"])
    nodes: dict[str, dict[str, Any]] = json.loads(bundle.read_member(name, what="graph"))["nodes"]
    return nodes


def data_inputs(spec: dict[str, Any]) -> list[str]:
    """Producer node of each data input, in order."""
    return [str(i).split(":")[0] for i in spec.get("inputs", ()) if not str(i).startswith("^")]


def base_type(kernel: str) -> str:
    for prefix in KERNEL_PREFIXES:
        if kernel.startswith(prefix):
            return kernel[len(prefix) :]
    return kernel


@dataclass
class EntryOps:
    """The entry function's ops at one level: name -> op, and the op -> name."""

    by_name: dict[str, ir.Operation]
    name_of: dict[ir.Operation, str]
    ops: list[ir.Operation]
    function: ir.Operation
    module: Any  # keeps the ops alive


def entry_ops(bundle: RunBundle, level: str) -> EntryOps:
    """Ops of the level's entry function (the one TF marks `tf.entry_function`, else `main`)."""
    module = bundle.ir(level)
    infos = derive_op_infos(module)
    functions = [i.op for i in infos if i.op_name == "func.func"]
    marked = [f for f in functions if "tf.entry_function" in f.attributes]
    main = [f for f in functions if ir.StringAttr(f.attributes["sym_name"]).value == "main"]
    entry = (marked or main)[0]
    inside = [i for i in infos if i.op.parent is not None and i.op.parent == entry]
    names = {i.op: (i.keys.name or "").split("@")[0] for i in inside}
    by_name = {name: op for op, name in names.items() if name}
    return EntryOps(by_name, names, [i.op for i in inside], entry, module)


def producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner if isinstance(owner, ir.Operation) else owner.operation


def users(op: ir.Operation) -> list[ir.Operation]:
    found = []
    for result in op.results:
        for use in result.uses:
            owner = use.owner
            found.append(owner if isinstance(owner, ir.Operation) else owner.operation)
    return found


def timed_events(bundle: RunBundle) -> dict[str, int]:
    """`node:type` event -> its total duration inside the profiled step windows."""
    trace = bundle.trace()
    steps = [
        (int(trace.ts_ns[r]), int(trace.end_ns[r]))
        for r in trace.rows_of_kind(EventKind.STEP).tolist()
        if trace.name_of(r) == bundle.manifest().option_str("step_marker", "irprof_step")
    ]
    totals: dict[str, int] = defaultdict(int)
    for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
        if any(b <= trace.ts_ns[row] and trace.end_ns[row] <= e for b, e in steps):
            totals[trace.name_of(row)] += int(trace.dur_ns[row])
    return dict(totals)


def reference_events(bundle: RunBundle) -> dict[str, int]:
    """`node:type` event -> its total duration in the capture's untimed reference steps (host
    level 3: the cheap kernels the timed steps' level does not record are there)."""
    name = bundle.manifest().option_str("reference_trace", "")
    totals: dict[str, int] = defaultdict(int)
    if name:
        trace = bundle.read_trace_member(name, what="reference trace")
        for row in trace.rows_of_kind(EventKind.FRAMEWORK_OP).tolist():
            totals[trace.name_of(row)] += int(trace.dur_ns[row])
    return dict(totals)


def ran_node_names(bundle: RunBundle) -> set[str]:
    """Nodes with an op event in the trace or in the capture's reference steps (host level 3,
    every kernel the executor ran)."""
    traces = [bundle.trace()]
    reference = bundle.manifest().option_str("reference_trace", "")
    if reference:
        traces.append(bundle.read_trace_member(reference, what="reference trace"))
    names = set()
    for trace in traces:
        for args in trace.args_many(trace.rows_of_kind(EventKind.FRAMEWORK_OP)):
            names.add(str(args.get("tf_op_name", "")))
    return names


@dataclass(frozen=True)
class RewriteGroup:
    """One add tree grappler rewrote: the IR adds it replaced and the events of its nodes."""

    replaced: frozenset[str]
    events: dict[str, int]  # its nodes' `node:type` events -> timed duration


def rewrite_groups(
    bundle: RunBundle, level: str, events: dict[str, int] | None = None
) -> list[RewriteGroup]:
    """The add trees the executed graph holds instead of IR adds, each with the adds it replaced,
    from def-use alone: a tree's root is a rewritten add node some other node reads; in the IR
    that reader (same kernel type, unfused, so its operands line up) reads the root's original
    at the same input; that original and the absent adds feeding only it were replaced."""
    nodes = runtime_nodes(bundle)
    level_ops = entry_ops(bundle, level)
    rewritten = {
        n for n, s in nodes.items() if n not in level_ops.by_name and str(s["op"]) in ADD_KERNELS
    }
    readers: dict[str, list[str]] = defaultdict(list)
    for name, spec in nodes.items():
        for source in data_inputs(spec):
            readers[source].append(name)
    roots = {r for r in rewritten if any(c not in rewritten for c in readers[r])}
    events = timed_events(bundle) if events is None else events
    groups = []
    for root in sorted(roots):
        tree, pending = {root}, [root]
        while pending:
            for source in data_inputs(nodes[pending.pop()]):
                if source in rewritten and source not in roots and source not in tree:
                    tree.add(source)
                    pending.append(source)
        original = _original_of(root, nodes, readers[root], level_ops)
        if original is None:
            continue
        replaced, pending_ops = {original}, [original]
        while pending_ops:
            for operand in pending_ops.pop().operands:
                op = producer(operand)
                name = level_ops.name_of.get(op) if op is not None else None
                if (
                    op is None
                    or not name
                    or name in nodes
                    or op.name.removeprefix("tf.") not in ADD_KERNELS
                    or any(level_ops.name_of.get(u) in nodes for u in users(op))
                ):
                    continue  # ran by itself, not an add, or read by an op that ran: materialised
                replaced.add(op)
                pending_ops.append(op)
        kernels = {event: ns for event, ns in events.items() if event.rsplit(":", 1)[0] in tree}
        groups.append(RewriteGroup(frozenset(level_ops.name_of[op] for op in replaced), kernels))
    return groups


def _original_of(
    root: str, nodes: dict[str, dict[str, Any]], readers: list[str], level_ops: EntryOps
) -> ir.Operation | None:
    """The IR op a plain reader of `root` reads where the executed graph reads `root`."""
    for reader in readers:
        spec = nodes[reader]
        op = level_ops.by_name.get(reader)
        if op is None or spec.get("fused_ops"):
            continue
        if base_type(str(spec["op"])) != op.name.removeprefix("tf."):
            continue
        for index, source in enumerate(data_inputs(spec)):
            if source == root and index < len(op.operands):
                found = producer(op.operands[index])
                if found is not None and level_ops.name_of.get(found) not in nodes:
                    return found
    return None


def live_op_names(bundle: RunBundle, level: str) -> set[str]:
    """Entry-function ops between the model input and its output (def-use both ways): the
    runtime must compute each of their values, so none of them "never ran"."""
    level_ops = entry_ops(bundle, level)
    block = level_ops.function.regions[0].blocks[0]
    forward: set[ir.Operation] = set()
    inputs = [a for a in block.arguments if "resource" not in str(a.type)]
    frontier: list[ir.Operation] = [u.owner for a in inputs for u in a.uses]  # type: ignore[misc]
    frontier += [
        op
        for op in level_ops.ops
        if op.name == "tf.Placeholder" and "resource" not in str(op.results[0].type)
    ]
    while frontier:
        op = frontier.pop()
        if op in forward:
            continue
        forward.add(op)
        frontier += users(op)
    terminator = [op for op in level_ops.ops if op.name == "func.return"]
    sinks = [producer(v) for t in terminator for v in t.operands]
    if not any(sinks):
        sinks = [op for op in forward if not users(op) and op.name != "func.return"]
    backward: set[ir.Operation] = set()
    pending = [op for op in sinks if op is not None]
    while pending:
        op = pending.pop()
        if op in backward:
            continue
        backward.add(op)
        pending += [p for v in op.operands if (p := producer(v)) is not None]
    return {level_ops.name_of[op] for op in forward & backward if level_ops.name_of.get(op)}


LOCATION_NAME = re.compile(r"^fused\['[^']*:', '([^']+)'")


def never_ran_names(coverage: Coverage) -> set[str]:
    """Node names of the ops the coverage lists as never ran."""
    names = set()
    for op in coverage.unmatched_ops:
        match = LOCATION_NAME.match(op.location)
        if op.reason.startswith(NEVER_RAN) and match:
            names.add(match.group(1).split("@")[0])
    return names


def every_unmatched_op(bundle: RunBundle, level: str) -> Coverage:
    """The level's coverage with every op without an event listed (the record lists the first
    `MAX_UNMATCHED`; the test needs them all)."""
    defaults = module_coverage.coverage_for.__kwdefaults__
    assert defaults is not None and defaults["max_listed"] == module_coverage.MAX_UNMATCHED
    with pytest.MonkeyPatch.context() as patch:
        everything = {**defaults, "max_listed": 1 << 30}
        patch.setattr(module_coverage.coverage_for, "__kwdefaults__", everything)
        return CORRELATOR.correlate(bundle, level, CorrelationOptions()).coverage


def entries_by_name(run: Run, level: str) -> dict[str, OpProfileEntry]:
    return {(e.key.name or "").split("@")[0]: e for e in run.profile(level).entries}


def annotated_levels(run: Run) -> list[str]:
    return [level for level in IR_LEVELS if level in run.manifest().ir_levels]


# The 3-block chain.


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The residual chain captured once (oneDNN on, 2 steps, every level) and annotated."""
    folder = tmp_path_factory.mktemp("residual_chain")
    script = folder / "residual_chain.py"
    script.write_text(MODEL)
    options = TfCaptureOptions(steps=2, onednn="on", post_grappler=True)
    run = Run.of(capture_tf(script, folder / "run", options))
    for level in IR_LEVELS:
        run.annotate(level)
    return run


@pytest.mark.parametrize("level", IR_LEVELS)
def test_each_blocks_adds_get_that_blocks_rewrite_kernels(chain: Run, level: str) -> None:
    """GIVEN three residual blocks whose BN add and skip add grappler rewrote (each rewrite
    reading the previous block's) THEN block k's two adds carry exactly block k's rewrite
    events, with their time, and none of them is "never ran"."""
    groups = rewrite_groups(chain, level)
    assert len(groups) == BLOCKS, groups
    entries = entries_by_name(chain, level)
    for group in groups:
        assert len(group.replaced) == 2, group  # the block's batchnorm/add_1 and its skip Add
        assert group.events, group
        for name in group.replaced:
            assert name in entries, f"{name}: no time, though its rewrite ran ({group})"
            assert set(entries[name].data.kernels) == set(group.events), (name, group)
        total = sum(entries[name].data.total_ns for name in group.replaced)
        assert total == sum(group.events.values()), group
    # The known answer of this model: block k's adds are its own BN's and its own skip.
    blocks = sorted(groups, key=lambda g: sorted(g.replaced))
    for k, group in enumerate(blocks):
        assert {name.split("/")[1].split("_")[0] for name in group.replaced} == {f"b{k}"}
        assert all(f"/b{k}_add" in event for event in group.events), group


@pytest.mark.parametrize("level", IR_LEVELS)
def test_no_op_between_input_and_output_never_ran(chain: Run, level: str) -> None:
    """GIVEN the ops the model's output needs from its input (IR def-use) and the nodes the
    trace shows running THEN none of them is listed as never ran."""
    coverage = every_unmatched_op(chain, level)
    never = never_ran_names(coverage)
    assert not never & live_op_names(chain, level)
    assert not never & ran_node_names(chain)
    assert coverage.ops_not_executed == len(
        [op for op in coverage.unmatched_ops if op.reason.startswith(NEVER_RAN)]
    )

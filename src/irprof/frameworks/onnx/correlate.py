"""ONNX correlator: ORT's `<node>_kernel_time` events -> ORT node -> source ONNX nodes -> the
`torch.operator "onnx.*"` ops the importer located by node name.

An ORT node that fused or replaced source nodes (FusedConv, Gemm from MatMul+Add, Gelu,
LayerNormalization, NCHWc layout chains) gives its time to all of them as one ledger group,
split by the members' estimated operations (`frameworks/onnx/work.py`; output bytes when a size
is unknown); `frameworks/onnx/graph.py` derives membership from def-use. A control-flow node
(`If`, `Loop`, `Scan`) runs its subgraph's nodes inside its own event: their events nest in
it and are part of its time, counted once. Each is given to the subgraph ops of its ORT node
(regions of the optimized subgraph, as above), the control-flow op keeping the rest: the
iteration's own work and any nested event that cannot be placed.
See docs/onnx.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.correlate.finish import finish_level
from irprof.correlate.ledger import Ledger
from irprof.errors import BundleError
from irprof.event_dag.nesting import nesting_parents
from irprof.frameworks.onnx.graph import (
    GraphNode,
    OnnxGraphs,
    Region,
    all_graphs,
    all_nodes,
    member_weights,
    parse_graphs,
    removed_nodes,
    runtime_regions,
    source_node_map,
    subgraph_regions,
)
from irprof.frameworks.onnx.paths import GRAPHS_FILE, LEVEL, OPTIMIZED_MODEL
from irprof.frameworks.onnx.torch_export import node_name
from irprof.frameworks.onnx.work import node_work
from irprof.mlir.locations import render
from irprof.mlir.op_index import OpInfo, derive_op_infos
from irprof.mlir.op_kind import operator_name
from irprof.readers.onnxruntime import node_of_event
from irprof.trace.model import EventKind, Trace

RULES = {"default": "flops", "flops": "flops", "bytes": "bytes", "even": "even"}
REMOVED_REASON = "removed by ONNX Runtime"
INITIALIZER_REASON = "an initializer (weights or constants): data, no run-time work"


def node_positions(infos: Sequence[OpInfo], graphs: OnnxGraphs) -> dict[str, int]:
    """Source node name -> position of its op: the operator of the node's op type located by
    the node's name (an initializer may bear the same name as a node)."""
    wanted = {node.name: node.op_type for node in all_nodes(graphs.source)}
    names = frozenset(wanted)
    found: dict[str, int] = {}
    for position, info in enumerate(infos):
        if info.keys.name is None:
            continue
        name = node_name(info.keys.name, names)
        if name not in wanted or name in found:
            continue
        if operator_name(info.op).rpartition(".")[2] == wanted[name]:
            found[name] = position
    return found


@dataclass(frozen=True)
class _Join:
    """What joins ORT node events to ops: each control-flow node's subgraph regions, every
    source node's op position, node and estimated operations."""

    scopes: Mapping[str, Mapping[str, Region]]
    positions: Mapping[str, int]
    nodes: Mapping[str, GraphNode]
    works: Mapping[str, float | None]
    rule: str


def _record_tree(
    ledger: Ledger,
    trace: Trace,
    row: int,
    children: Mapping[int, list[int]],
    join: _Join,
    regions: Mapping[str, Region],
) -> int:
    """Give a node event and the events nested in it to ops: a control-flow node's nested
    events to its subgraphs' ops, the rest of its time to its own op. Returns how many nested
    events were given to subgraph ops."""
    event = trace.name_of(row)
    node = node_of_event(event) or event
    scope = join.scopes.get(node, {})
    dur, itemized = int(trace.dur_ns[row]), 0
    for child in children.get(row, []):
        child_node = node_of_event(trace.name_of(child)) or ""
        region = scope.get(child_node)
        held = int(trace.dur_ns[child])
        if region is None or held > dur or not any(n in join.positions for n in region.members):
            continue  # an ORT node of its own, a node both branches name: the parent's time
        dur -= held
        itemized += 1 + _record_tree(ledger, trace, child, children, join, scope)
    _record_event(ledger, event, int(trace.ts_ns[row]), dur, regions, join)
    return itemized


def _record_event(
    ledger: Ledger,
    event: str,
    ts: int,
    dur: int,
    regions: Mapping[str, Region],
    join: _Join,
) -> None:
    """Give one ORT node event's time (its own, past nested events given elsewhere) to the ops
    of the source nodes its ORT node computes; `join.works`: each source node's estimated
    operations (`frameworks/onnx/work.py`)."""
    positions, rule, works = join.positions, join.rule, join.works
    node = node_of_event(event) or event
    region = regions.get(node)
    if region is None:
        ledger.unattributed(
            event, dur, f"no node '{node}' in ORT's optimized graph ({OPTIMIZED_MODEL})"
        )
        return
    if not region.members:
        ledger.unattributed(
            event,
            dur,
            f"ORT node '{node}' computes no tensor of the source graph (inserted by ORT)",
        )
        return
    members = [name for name in region.members if name in positions]
    if not members:
        ledger.unattributed(
            event, dur, f"source nodes {', '.join(region.members[:3])} have no op in the MLIR"
        )
        return
    source = f"onnxruntime:{node}"
    if len(members) == 1:
        ledger.record(event, ts, dur, [positions[members[0]]], source=source)
        return
    nodes = join.nodes
    work = [works.get(name) for name in members]
    if rule == "flops" and all(w is not None for w in work) and sum(w or 0.0 for w in work) > 0:
        weights, basis = [w or 0.0 for w in work], "flops"
    else:  # a shape not static, or only data movement: by what each member writes
        weights, basis = member_weights([nodes[name] for name in members])
    if rule == "even":
        weights, basis = [1.0] * len(members), "even"
    ledger.record(
        event,
        ts,
        dur,
        [positions[name] for name in members],
        weights=weights,
        basis=basis,
        group=f"ort:{region.label}",
        source=source,
    )


def _unmatched_reasons(
    infos: Sequence[OpInfo],
    graphs: OnnxGraphs,
    regions: Mapping[str, Region],
    annotated: set[int],
    itemized_in: set[str],
) -> tuple[dict[int, str], set[int]]:
    """Why each op got no time, and which ops ORT provably did not run; `itemized_in`: the
    control-flow nodes whose nested events were given to their subgraphs' ops."""
    removed = set(removed_nodes(graphs, regions))
    initializers = {name for graph in all_graphs(graphs.source) for name in graph.initializers}
    every_node = {node.name for node in all_nodes(graphs.source)}
    nodes = {node.name for node in graphs.source.nodes}
    region_of: dict[str, list[str]] = defaultdict(list)
    for ort_node, region in regions.items():
        for member in region.members:
            region_of[member].append(ort_node)
    reasons: dict[int, str] = {}
    not_executed: set[int] = set()
    control_flow = _control_flow_nodes(infos, nodes)
    for position, info in enumerate(infos):
        raw = info.keys.name
        name = None if raw is None else node_name(raw, nodes)
        if position in annotated or not operator_name(info.op):
            continue
        if name in initializers and name not in every_node:
            reasons[position] = INITIALIZER_REASON
            not_executed.add(position)
            continue
        owner = _enclosing(info.op, control_flow)
        if owner in itemized_in:
            reasons[position] = (
                f"in a subgraph of control-flow node '{owner}', with no event of its own "
                "placed inside that node's events (an `If` branch not taken, or a node ORT "
                "folded or fused away)"
            )
            continue
        if owner is not None:
            reasons[position] = (
                f"in a subgraph of control-flow node '{owner}', which runs it inside its own "
                "event: its time is that node's"
            )
            continue
        if name in removed:
            reasons[position] = (
                f"{REMOVED_REASON}: constant-folded or eliminated (no node of the optimized "
                "graph computes it)"
            )
            not_executed.add(position)
        elif name in region_of:
            reasons[position] = (
                f"run by ORT node {', '.join(sorted(region_of[name])[:2])}, which has no "
                "profiled event"
            )
        elif name is not None and name not in nodes:
            reasons[position] = f"'{name}' is not a node of the main graph (a subgraph's?)"
    return reasons, not_executed


def _control_flow_nodes(infos: Sequence[OpInfo], nodes: set[str]) -> dict[int, str]:
    """Ops with regions (an imported `If`, `Loop`, `Scan`) named after a main-graph node, by
    the identity of their operation: op -> node name."""
    found: dict[int, str] = {}
    for info in infos:
        raw = info.keys.name
        name = None if raw is None else node_name(raw, nodes)
        if name in nodes and len(info.op.regions):
            found[hash(info.op.operation)] = name
    return found


def _enclosing(op: ir.Operation | ir.OpView, control_flow: Mapping[int, str]) -> str | None:
    """The main-graph control-flow node whose regions hold `op`, or None."""
    parent = op.operation.parent
    while parent is not None:
        name = control_flow.get(hash(parent))
        if name is not None:
            return name
        parent = parent.parent
    return None


def node_event_rows(trace: Trace) -> tuple[list[int], dict[int, list[int]]]:
    """The node events that no other node event holds (a subgraph's nodes run inside their
    control-flow node's event), and each event's directly nested ones."""
    rows = trace.rows_of_kind(EventKind.FRAMEWORK_OP)
    parent = nesting_parents(trace.track[rows], trace.ts_ns[rows], trace.dur_ns[rows])
    children: dict[int, list[int]] = defaultdict(list)
    for row, held_by in zip(rows.tolist(), parent.tolist(), strict=True):
        if held_by >= 0:
            children[int(rows[held_by])].append(row)
    return rows[parent < 0].tolist(), children


def correlate_run(
    module: ir.Module,
    trace: Trace,
    graphs: OnnxGraphs,
    *,
    rule: str = "flops",
    steps: int = 0,
    source_trace: str = "",
) -> CorrelationResult:
    """Join ORT's node events in `trace` to the ops of the imported ONNX `module`."""
    infos = derive_op_infos(module)
    positions = node_positions(infos, graphs)
    regions = runtime_regions(graphs)
    nodes = source_node_map(graphs)
    works = {
        name: node_work(infos[p].op, nodes[name].op_type, nodes[name].output_bytes)
        for name, p in positions.items()
    }
    join = _Join(subgraph_regions(graphs), positions, nodes, works, rule)
    ledger = Ledger()
    rows, children = node_event_rows(trace)
    nested = sum(len(held) for held in children.values())
    profiled_ns = int(sum(int(trace.dur_ns[row]) for row in rows))
    itemized, itemized_in = 0, set()
    for row in rows:
        placed = _record_tree(ledger, trace, row, children, join, regions)
        if placed:
            itemized += placed
            itemized_in.add(node_of_event(trace.name_of(row)) or trace.name_of(row))
    entries = ledger.entries(
        infos,
        profiled_ns,
        location_of=lambda info: render(info.loc),
        name_of=lambda position: str(infos[position].keys.name or infos[position].op_name),
    )
    reasons, not_executed = _unmatched_reasons(infos, graphs, regions, set(entries), itemized_in)
    fused = {region.label: region for region in regions.values() if len(region.members) > 1}
    return finish_level(
        ledger,
        infos,
        entries,
        level=LEVEL,
        framework="onnx",
        profiled_ns=profiled_ns,
        where=f"{source_trace or 'trace'} -> {LEVEL}",
        reasons=reasons,
        not_executed=not_executed,
        totals={
            "steps": steps,
            "node_events": len(rows),
            "subgraph_node_events": nested,
            "subgraph_node_events_itemized": itemized,
            "fused_time_rule": rule,
            "ort_regions_fused": len(fused),
            "source_nodes_removed": len(removed_nodes(graphs, regions)),
        },
        source_trace=source_trace,
    )


class OnnxCorrelator:
    """Joins ONNX Runtime's node events to the imported ONNX model's ops."""

    framework = "onnx"
    levels: tuple[str, ...] = (LEVEL,)

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Correlate the bundle's ORT profile with `RUN/ir/onnx.mlir`."""
        if level != LEVEL:
            raise BundleError(f"{bundle.root}: the onnx correlator annotates only '{LEVEL}'")
        rule = options.share_basis(RULES)
        manifest = bundle.manifest()
        name = manifest.option_str("runtime_graph", GRAPHS_FILE)
        graphs = parse_graphs(bundle.read_member(name, what="ONNX graphs"), str(bundle.root / name))
        trace_path = bundle.primary_trace_path
        return correlate_run(
            bundle.ir(level),
            bundle.trace(),
            graphs,
            rule=rule,
            steps=manifest.steps,
            source_trace=str(trace_path.relative_to(bundle.root)),
        )


CORRELATOR = OnnxCorrelator()

"""The source ONNX graph and ORT's optimized graph, and which source nodes each ORT node runs.

The capture child writes both graphs' structure to `ir/onnx.graphs.json` (node names, op types,
input and output tensor names, each source node's output bytes at the profiled shapes). ORT's
optimizer keeps the names of the tensors it does not replace, so membership follows from
def-use alone: ORT nodes joined by tensors the source graph never had (a fusion's or a layout
transform's own tensors) form one region, and its source nodes are those that compute the
region's source-named outputs from tensors the optimized graph still holds. See docs/onnx.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from irprof.errors import BundleError
from irprof.frameworks.onnx.anchors import split_region
from irprof.frameworks.onnx.paths import GRAPHS_FORMAT


@dataclass(frozen=True)
class GraphNode:
    """One node: its name, op type (with domain), tensor names in and out."""

    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    output_bytes: int | None = None  # at the profiled input shapes (source graph only)
    attributes: str = ""  # digest of the node's attributes


@dataclass(frozen=True)
class Subgraph:
    """A control-flow node's graph attribute (an `If` branch, a `Loop` or `Scan` body)."""

    owner: str  # the node's name
    attribute: str  # then_branch, else_branch, body
    graph: Graph


@dataclass(frozen=True)
class Graph:
    """A graph's nodes in order, and the tensors it holds without computing them."""

    name: str
    nodes: tuple[GraphNode, ...]
    inputs: tuple[str, ...]
    initializers: tuple[str, ...]
    outputs: tuple[str, ...]
    subgraphs: tuple[Subgraph, ...] = ()  # of this graph's nodes (theirs are in theirs)

    def tensors(self) -> set[str]:
        """Every tensor name the graph holds: inputs, initializers, node inputs and outputs."""
        found = {*self.inputs, *self.initializers, *self.outputs}
        for node in self.nodes:
            found.update(name for name in (*node.inputs, *node.outputs) if name)
        return found


@dataclass(frozen=True)
class OnnxGraphs:
    """The model as given (`source`, the level irprof imports) and as ORT ran it."""

    source: Graph
    optimized: Graph


@dataclass(frozen=True)
class Region:
    """ORT nodes joined by tensors of their own, and the source nodes they compute together."""

    nodes: tuple[str, ...]  # ORT node names, in the optimized graph's order
    members: tuple[str, ...]  # source node names, in the source graph's order

    @property
    def label(self) -> str:
        """The region's id: its ORT nodes."""
        return "+".join(self.nodes)


def _strings(value: Any, place: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{place} must be a list of strings")
    return tuple(value)


def _graph(raw: Any, place: str) -> Graph:
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), list):
        raise ValueError(f"{place} must be an object with a 'nodes' list")
    nodes = []
    for index, node in enumerate(raw["nodes"]):
        where = f"{place}.nodes[{index}]"
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise ValueError(f"{where} must be an object with a string 'name'")
        size = node.get("output_bytes")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise ValueError(f"{where}.output_bytes must be an integer")
        nodes.append(
            GraphNode(
                name=node["name"],
                op_type=str(node.get("op_type", "")),
                domain=str(node.get("domain", "")),
                inputs=_strings(node.get("inputs", []), f"{where}.inputs"),
                outputs=_strings(node.get("outputs", []), f"{where}.outputs"),
                output_bytes=size,
                attributes=str(node.get("attributes", "")),
            )
        )
    subgraphs = raw.get("subgraphs", [])  # absent in bundles captured before they were kept
    if not isinstance(subgraphs, list):
        raise ValueError(f"{place}.subgraphs must be a list")
    return Graph(
        name=str(raw.get("name", "")),
        nodes=tuple(nodes),
        inputs=_strings(raw.get("inputs", []), f"{place}.inputs"),
        initializers=_strings(raw.get("initializers", []), f"{place}.initializers"),
        outputs=_strings(raw.get("outputs", []), f"{place}.outputs"),
        subgraphs=tuple(
            _subgraph(item, f"{place}.subgraphs[{index}]") for index, item in enumerate(subgraphs)
        ),
    )


def _subgraph(raw: Any, place: str) -> Subgraph:
    if not isinstance(raw, dict) or not isinstance(raw.get("owner"), str):
        raise ValueError(f"{place} must be an object with a string 'owner'")
    return Subgraph(raw["owner"], str(raw.get("attribute", "")), _graph(raw.get("graph"), place))


def parse_graphs(data: bytes, where: str) -> OnnxGraphs:
    """Read `ir/onnx.graphs.json`; a BundleError names the file and the bad field."""
    try:
        raw = orjson.loads(data)
        if not isinstance(raw, dict) or raw.get("format") != GRAPHS_FORMAT:
            raise ValueError(f"not an {GRAPHS_FORMAT} document")
        return OnnxGraphs(
            _graph(raw.get("source"), "source"), _graph(raw.get("optimized"), "optimized")
        )
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise BundleError(f"{where}: {exc}; capture again with `irprof capture onnx`") from exc


class _Components:
    """Union-find over ORT node positions."""

    def __init__(self, count: int) -> None:
        self.parent = list(range(count))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, first: int, second: int) -> None:
        self.parent[self.find(first)] = self.find(second)


def _merged_twins(source: Graph, kept_tensors: set[str]) -> set[str]:
    """Source nodes ORT dropped as duplicates (common-subexpression elimination): a kept node,
    one whose outputs the optimized graph holds, computes the same op with the same attributes
    on the same inputs, where inputs made by duplicates count as their first twin's."""
    canonical: dict[str, str] = {}
    groups: dict[tuple[str, str, tuple[str, ...], str], list[GraphNode]] = {}
    for node in source.nodes:
        key = (
            node.domain,
            node.op_type,
            tuple(canonical.get(name, name) for name in node.inputs),
            node.attributes,
        )
        group = groups.setdefault(key, [])
        if group and len(group[0].outputs) == len(node.outputs):
            canonical.update(zip(node.outputs, group[0].outputs, strict=True))
        group.append(node)

    def kept(node: GraphNode) -> bool:
        return any(name in kept_tensors for name in node.outputs if name)

    return {
        node.name
        for group in groups.values()
        if len(group) > 1 and any(kept(node) for node in group)
        for node in group
        if not kept(node)
    }


def _sources_computing(
    outputs: Iterable[str],
    stop: set[str],
    producer: Mapping[str, GraphNode],
    skip: set[str],
) -> set[str]:
    """Source nodes on def-use paths into `outputs` that start at tensors in `stop` (nodes of
    no inputs left out)."""
    members: set[str] = set()
    pending = list(outputs)
    seen: set[str] = set()
    while pending:
        tensor = pending.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        node = producer.get(tensor)
        if node is None or node.name in members or node.name in skip or not any(node.inputs):
            # A node of no inputs that the optimized graph lost (a Constant) was evaluated by
            # ORT when it built the session: folded into the region's attributes, not run. A
            # duplicate's work is its kept twin's (counted there).
            continue
        members.add(node.name)
        pending.extend(name for name in node.inputs if name and name not in stop)
    return members


def runtime_regions(graphs: OnnxGraphs) -> dict[str, Region]:
    """ORT node name -> its region (ORT nodes sharing a name share the union of regions)."""
    source, optimized = graphs.source, graphs.optimized
    source_tensors = source.tensors()
    producer = {name: node for node in source.nodes for name in node.outputs if name}
    nodes = optimized.nodes
    components = _Components(len(nodes))
    made_by: dict[str, int] = {}
    for position, node in enumerate(nodes):
        for name in node.outputs:
            if name:
                made_by[name] = position
    links: dict[int, set[int]] = {}
    for position, node in enumerate(nodes):
        for name in node.inputs:
            # A tensor the source never had joins its ORT producer and consumers.
            if name and name not in source_tensors and name in made_by:
                components.union(made_by[name], position)
                links.setdefault(made_by[name], set()).add(position)
                links.setdefault(position, set()).add(made_by[name])
    grouped: dict[int, list[int]] = {}
    for position in range(len(nodes)):
        grouped.setdefault(components.find(position), []).append(position)
    optimized_tensors = optimized.tensors()
    twins = _merged_twins(source, optimized_tensors)
    order = {node.name: index for index, node in enumerate(source.nodes)}
    source_by_name = {node.name: node for node in source.nodes}
    readers: dict[str, int] = dict.fromkeys(source.outputs, 1)
    for node in source.nodes:
        for name in set(node.inputs):
            readers[name] = readers.get(name, 0) + 1

    def walk(outputs: set[str], stop: set[str]) -> set[str]:
        return _sources_computing(outputs, stop, producer, twins)

    regions: dict[str, Region] = {}
    for positions in grouped.values():
        outputs = {
            name for p in positions for name in nodes[p].outputs if name and name in source_tensors
        }
        # Walk back from what the region computes until a tensor the optimized graph still
        # holds: constant-folded values, the region's inputs, other regions' outputs.
        stop = optimized_tensors - outputs
        members = walk(outputs, stop)
        pieces = None
        if len(positions) > 1:  # one piece per kernel where ORT's names say which is which
            local = {p: index for index, p in enumerate(positions)}
            pieces = split_region(
                [nodes[p] for p in positions],
                {local[p]: {local[q] for q in links.get(p, ())} for p in positions},
                [source_by_name[name] for name in sorted(members, key=order.__getitem__)],
                stop,
                source_tensors,
                readers,
                walk,
            )
        for piece, piece_members in pieces or [(list(range(len(positions))), members)]:
            region = Region(
                nodes=tuple(nodes[positions[index]].name for index in piece),
                members=tuple(sorted(piece_members, key=order.__getitem__)),
            )
            for index in piece:
                name = nodes[positions[index]].name
                earlier = regions.get(name)
                regions[name] = region if earlier is None else _merged(earlier, region, order)
    return regions


def _merged(first: Region, second: Region, order: Mapping[str, int]) -> Region:
    members = sorted({*first.members, *second.members}, key=order.__getitem__)
    return Region(tuple(dict.fromkeys((*first.nodes, *second.nodes))), tuple(members))


def removed_nodes(graphs: OnnxGraphs, regions: Mapping[str, Region]) -> list[str]:
    """Source nodes no ORT node computes: folded into constants or eliminated by ORT."""
    kept = {member for region in regions.values() for member in region.members}
    return [node.name for node in graphs.source.nodes if node.name not in kept]


def source_node_map(graphs: OnnxGraphs) -> dict[str, GraphNode]:
    """Source node name -> node, subgraphs' nodes included (the capture names every node of
    the model uniquely)."""
    return {node.name: node for node in all_nodes(graphs.source)}


def all_graphs(graph: Graph) -> Iterator[Graph]:
    """The graph and its subgraphs, at any depth."""
    yield graph
    for subgraph in graph.subgraphs:
        yield from all_graphs(subgraph.graph)


def all_nodes(graph: Graph) -> Iterator[GraphNode]:
    """The graph's nodes and its subgraphs', at any depth."""
    for each in all_graphs(graph):
        yield from each.nodes


def subgraph_regions(graphs: OnnxGraphs) -> dict[str, dict[str, Region]]:
    """Control-flow node name -> the regions of its subgraphs as ORT ran them (ORT node name
    -> region), each subgraph paired with the optimized model's subgraph of the same node and
    attribute, at any depth. A name in two of one node's subgraphs (both branches of an `If`)
    cannot tell which ran: left out, its time stays the node's."""
    found: dict[str, dict[str, Region]] = {}
    optimized = {(sub.owner, sub.attribute): sub.graph for sub in _all_subgraphs(graphs.optimized)}
    counted: dict[str, dict[str, int]] = {}
    for sub in _all_subgraphs(graphs.source):
        ran = optimized.get((sub.owner, sub.attribute))
        if ran is None:
            continue
        scope = found.setdefault(sub.owner, {})
        seen = counted.setdefault(sub.owner, {})
        for name in {node.name for node in ran.nodes}:
            seen[name] = seen.get(name, 0) + 1
        scope.update(runtime_regions(OnnxGraphs(sub.graph, ran)))
    for owner, seen in counted.items():
        for name, times in seen.items():
            if times > 1:
                del found[owner][name]
    return found


def _all_subgraphs(graph: Graph) -> Iterator[Subgraph]:
    for subgraph in graph.subgraphs:
        yield subgraph
        yield from _all_subgraphs(subgraph.graph)


def member_weights(members: Sequence[GraphNode]) -> tuple[list[float], str]:
    """Weights of a region's members and their basis: output bytes when every member has a
    known, non-zero size, else an even split."""
    sizes = [member.output_bytes for member in members]
    if sizes and all(size is not None and size > 0 for size in sizes):
        return [float(size or 0) for size in sizes], "bytes"
    return [1.0] * len(members), "even"

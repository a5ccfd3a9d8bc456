"""Give nodes that functionalization re-created by view replay back to the call they belong to.

Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/view_replay.py`.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from torch.fx import Graph, Node

REGENERATED = "is_functional_regenerated"  # node.meta key torch sets on replayed nodes
ADOPTED_META = ("stack_trace", "nn_module_stack")


def node_tag(node: Node, tag_key: str) -> str | None:
    """The call name the capture stored in `meta["custom"]`, if any."""
    custom = node.meta.get("custom") or {}
    tag = custom.get(tag_key)
    return tag if isinstance(tag, str) else None


def is_view_call(node: Node) -> bool:
    """An ATen call whose schema says its output aliases its first argument, read-only."""
    return node.op == "call_function" and bool(getattr(node.target, "is_view", False))


def is_inplace_call(node: Node) -> bool:
    """An ATen call that writes its first argument and returns it (`relu_`, `add_`)."""
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None or not schema.arguments or not schema.returns:
        return False
    written = schema.arguments[0].alias_info
    returned = schema.returns[0].alias_info
    return bool(written and written.is_write and returned and returned.is_write)


def alias_roots(graph: Graph) -> dict[str, str]:
    """Node name -> the node whose tensor it is (in-place calls resolve to what they mutate)."""
    roots: dict[str, str] = {}
    for node in graph.nodes:
        source = node.args[0] if node.args else None
        if is_inplace_call(node) and isinstance(source, Node):
            roots[node.name] = roots.get(source.name, source.name)
        else:
            roots[node.name] = node.name
    return roots


def _shape_key(node: Node) -> str | None:
    """Printed shape and dtype of the node's fake value (None when it has none)."""
    value = node.meta.get("val")
    shape = getattr(value, "shape", None)
    return None if shape is None else f"{tuple(shape)}:{getattr(value, 'dtype', '')}"


def _plain(value: Any, names: Mapping[Node, str]) -> Any:
    """Arguments with nodes replaced by the call names they stand for (comparable across graphs)."""
    if isinstance(value, Node):
        return names.get(value, value.name)
    if isinstance(value, list | tuple):
        return tuple(_plain(item, names) for item in value)
    return value


def best_twin(
    replayed: Node, candidates: Iterable[Node], origin: Mapping[Node, str]
) -> Node | None:
    """The exported view call `replayed` most likely re-creates, by shape, target, arguments."""
    shape = _shape_key(replayed)
    arguments = _plain(replayed.args[1:], origin)
    ranked = []
    for order, candidate in enumerate(candidates):
        candidate_shape = _shape_key(candidate)
        if shape is not None and candidate_shape is not None and shape != candidate_shape:
            continue
        same_target = candidate.target == replayed.target
        same_arguments = same_target and _plain(candidate.args[1:], {}) == arguments
        ranked.append((not same_arguments, not same_target, order, candidate))
    return min(ranked, key=lambda item: item[:3])[3] if ranked else None


def _adopt(replayed: Node, twin: Node, tag_key: str) -> None:
    """Give `replayed` the twin's call name, stack trace and module stack."""
    replayed.meta["custom"] = {
        **(replayed.meta.get("custom") or {}),
        tag_key: node_tag(twin, tag_key) or twin.name,
    }
    for key in ADOPTED_META:
        if key in twin.meta:
            replayed.meta[key] = copy.copy(twin.meta[key])
        else:  # the consumer's frames or modules would be a false claim
            replayed.meta.pop(key, None)


def repair_view_replay(exported: Graph, decomposed: Graph, tag_key: str) -> int:
    """Retag the replayed view nodes of `decomposed` after the `exported` calls they re-create.

    `exported` is the graph whose call nodes carry `meta["custom"][tag_key]`; returns the number
    of nodes retagged.
    """
    exported_names = {node.name for node in exported.nodes}
    roots = alias_roots(exported)
    survivors = {
        node_tag(node, tag_key)
        for node in decomposed.nodes
        if node.op == "call_function" and not node.meta.get(REGENERATED)
    }
    orphans: dict[str, list[Node]] = defaultdict(list)  # alias root -> dead view calls of it
    for node in exported.nodes:
        source = node.args[0] if node.args else None
        if is_view_call(node) and isinstance(source, Node) and node.name not in survivors:
            orphans[roots[source.name]].append(node)
    origin: dict[Node, str] = {}  # decomposed node -> exported call (or placeholder) it belongs to
    repaired = 0
    for node in decomposed.nodes:
        origin[node] = node_tag(node, tag_key) or node.name
        source = node.args[0] if node.args else None
        if not (node.meta.get(REGENERATED) and isinstance(source, Node)):
            continue
        source_call = origin.get(source)
        if source_call is None or source_call not in exported_names:
            continue
        pool = orphans[roots[source_call]]
        twin = best_twin(node, pool, origin)
        if twin is None:
            continue
        pool.remove(twin)
        _adopt(node, twin, tag_key)
        origin[node] = twin.name
        repaired += 1
    return repaired

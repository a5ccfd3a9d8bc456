"""Where the time goes as a tree: level -> name scopes (Keras layers, JAX name stacks, torch
module paths; the function, when there are several, for rows without a scope) -> the measured
rows under them.

Design notes: docs/views.md, "Module notes", `analyses/scope_tree.py`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from irprof.analyses.hotspots import HotspotRow, hotspots
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp, scope_separator
from irprof.analyses.roofline import row_members

UNATTRIBUTED = "(unattributed)"


@dataclass(frozen=True)
class ScopeNode:
    """A node of the tree: the root, a function, a scope, or a measured row (a leaf)."""

    name: str  # this component: a scope part, `@function`, or the row's runtime name
    path: str  # the scope path from the root ("" for the root)
    kind: str  # root | function | scope | op | group | unattributed
    total_ns: int  # everything under the node
    ops: int  # IR ops under the node
    estimated_ns: int = 0  # time under the node that is an estimated share of a group
    op_index: int = -1  # the hottest op below (links a node to the IR); -1 for none
    op_name: str = ""  # a leaf's op kind(s)
    location: str = ""  # a leaf's location
    children: tuple[ScopeNode, ...] = ()  # hottest first

    def to_json(self) -> dict[str, Any]:
        """Plain nested JSON."""
        return {
            "name": self.name,
            "path": self.path,
            "kind": self.kind,
            "total_ns": self.total_ns,
            "ops": self.ops,
            "estimated_ns": self.estimated_ns,
            "op_index": self.op_index,
            "op_name": self.op_name,
            "location": self.location,
            "children": [child.to_json() for child in self.children],
        }


@dataclass(frozen=True)
class ScopeTree:
    """The tree of one annotated level and the profiled time it accounts for."""

    level: str
    root: ScopeNode
    profiled_ns: int

    def walk(self) -> Iterator[tuple[ScopeNode, int]]:
        """Every node with its depth, parents before children, hottest first."""
        stack: list[tuple[ScopeNode, int]] = [(self.root, 0)]
        while stack:
            node, depth = stack.pop()
            yield node, depth
            stack.extend((child, depth + 1) for child in reversed(node.children))

    def to_json(self) -> dict[str, Any]:
        """The report's form."""
        return {"level": self.level, "profiled_ns": self.profiled_ns, "root": self.root.to_json()}


@dataclass
class _Building:
    name: str
    path: str
    kind: str
    children: dict[str, _Building] = field(default_factory=dict)
    leaves: list[ScopeNode] = field(default_factory=list)

    def child(self, name: str, path: str, kind: str) -> _Building:
        if name not in self.children:
            self.children[name] = _Building(name, path, kind)
        return self.children[name]

    def freeze(self) -> ScopeNode:
        children = [child.freeze() for child in self.children.values()] + self.leaves
        children.sort(key=lambda node: (-node.total_ns, node.name))
        hottest = max(children, key=lambda node: node.total_ns, default=None)
        return ScopeNode(
            name=self.name,
            path=self.path,
            kind=self.kind,
            total_ns=sum(node.total_ns for node in children),
            ops=sum(node.ops for node in children),
            estimated_ns=sum(node.estimated_ns for node in children),
            op_index=hottest.op_index if hottest is not None else -1,
            children=tuple(children),
        )


def _common_scope(scopes: Sequence[str]) -> list[str]:
    """The components all `scopes` share, from the outermost."""
    split = [s.split(scope_separator(s)) if s else [] for s in scopes]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return common


def _leaf(row: HotspotRow, members: list[ProfiledOp]) -> tuple[list[str], str, ScopeNode]:
    """The row's scope components, its function and its node."""
    scope = _common_scope([op.scope for op in members])
    functions = {op.function for op in members}
    function = functions.pop() if len(functions) == 1 else ""
    # A row named after its scope repeats it: keep the op's own part as the leaf's name
    # (torch's `module | target | aten op` names put the module first).
    name = row.key
    prefix = scope_separator(members[0].scope).join(scope) if scope else ""
    if "|" in name:
        name = name.split("|", 1)[1].strip()
    elif prefix and name.startswith(prefix + scope_separator(prefix)):
        name = name[len(prefix) + 1 :]
    node = ScopeNode(
        name=name,
        path=row.key,
        kind="group" if row.group and row.ops > 1 else "op",
        total_ns=row.total_ns,
        ops=row.ops,
        estimated_ns=row.estimated_ns,
        op_index=row.op_index,
        op_name=row.op_name,
        location=row.location,
    )
    return scope, function, node


def scope_tree(profiled: ProfiledModule, *, level: str) -> ScopeTree:
    """The scope tree of an annotated level (see the module docstring)."""
    table = hotspots(profiled.ops, by="op", profiled_ns=profiled.profiled_ns)
    leaves = [_leaf(row, row_members(row, "op", profiled.ops)) for row in table.rows]
    several_functions = len({function for _, function, _ in leaves}) > 1
    root = _Building(level, "", "root")
    for scope, function, node in leaves:
        parent = root
        # Scopes already name the calls that reach an op (`jit(mlp)/jit(dense)`); a function
        # level only places ops that have no scope (IREE dispatch functions, say).
        if several_functions and function and not scope:
            parent = parent.child(f"@{function}", f"@{function}", "function")
        separator = "/" if not scope else scope_separator(node.path)
        for depth, part in enumerate(scope):
            parent = parent.child(part, separator.join(scope[: depth + 1]), "scope")
        parent.leaves.append(node)
    unattributed = max(0, profiled.profiled_ns - table.total_ns)
    if unattributed:
        root.leaves.append(ScopeNode(UNATTRIBUTED, UNATTRIBUTED, "unattributed", unattributed, 0))
    return ScopeTree(level=level, root=root.freeze(), profiled_ns=profiled.profiled_ns)


def headline(tree: ScopeTree, limit: int = 6, dominant: float = 0.9) -> tuple[ScopeNode, ...]:
    """What a reader wants first: the hottest nodes under the first node that splits the time
    (a chain of scopes each holding over `dominant` of its parent's time is passed through)."""
    node = tree.root
    while (
        node.children
        and node.children[0].children
        and node.children[0].total_ns > dominant * node.total_ns
    ):
        node = node.children[0]
    return node.children[:limit]

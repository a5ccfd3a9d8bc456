"""The scope tree (level -> scopes -> measured rows) and its icicle: time adds up at every node
to the profiled time, groups sit in the scope all their members share, and the SVG draws each
cell at its share of the width with its names escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.scope_tree import UNATTRIBUTED, ScopeNode, ScopeTree, headline, scope_tree
from irprof.bundle import RunBundle
from irprof.renderers.icicle_svg import RENDERER, WIDTH, icicle_cells
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    HOSTILE,
    fixture_hostile_bundle,
    fixture_jax_bundle,
    fixture_synthetic_bundle,
)

SVG = "{http://www.w3.org/2000/svg}"


def tree_of(bundle: RunBundle, level: str) -> ScopeTree:
    return scope_tree(load_annotated_level(bundle, level).profiled, level=level)


def check_sums(node: ScopeNode) -> None:
    if node.children:
        assert node.total_ns == sum(child.total_ns for child in node.children), node.path
        assert [c.total_ns for c in node.children] == sorted(
            (c.total_ns for c in node.children), reverse=True
        )
        for child in node.children:
            check_sums(child)


def test_layers_of_the_synthetic_model(synthetic_bundle: RunBundle) -> None:
    tree = tree_of(synthetic_bundle, "tf")
    check_sums(tree.root)
    # All profiled time, the 250 us no op received included, is in the tree.
    assert tree.root.total_ns == tree.profiled_ns == 8_750_000 + 250_000
    model, unattributed = tree.root.children
    assert (model.path, model.kind) == ("sequential", "scope")
    assert (unattributed.name, unattributed.total_ns) == (UNATTRIBUTED, 250_000)
    layers = {child.name: child for child in model.children}
    assert layers["conv1"].total_ns == 5_000_000 + 400_000 + 300_000
    assert [leaf.name for leaf in layers["conv1"].children] == ["Conv2D", "BiasAdd", "Relu"]
    # The summary reads past the one model scope to its layers, hottest first.
    assert [node.name for node in headline(tree)][:2] == ["conv1", "dense1"]


def test_jax_fusions_sit_in_the_scope_their_members_share(jax_bundle: RunBundle) -> None:
    tree = tree_of(jax_bundle, "stablehlo")
    check_sums(tree.root)
    assert tree.root.total_ns == tree.profiled_ns
    nodes = {node.path: node for node, _ in tree.walk()}
    # Bias add in `mlp` fused with jax.nn.relu's max (a private function reached as
    # jit(mlp)/jit(relu)): one measured row under the scope both share.
    fusion = nodes["jit(mlp)/add +3 ops"]
    assert fusion.kind == "group" and fusion.ops == 4
    assert fusion in nodes["jit(mlp)"].children
    dense = nodes["jit(mlp)/jit(dense)"]
    # Two dense layers' matmuls, one name: each row shows the kernel only it ran.
    names = {c.name for c in dense.children}
    assert dense.kind == "scope" and len(dense.children) == len(names) == 2
    assert all(re.fullmatch(r"dot_general \[\S+\]", name) for name in names), names


def test_icicle_cells_have_their_share_of_the_width(jax_bundle: RunBundle) -> None:
    tree = tree_of(jax_bundle, "stablehlo")
    cells = icicle_cells(tree)
    root = ET.fromstring(RENDERER.render(tree))
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g") if "cell" in (g.get("class") or "")}
    assert len(groups) == len(cells) > 5
    by_node = {id(cell.node): cell for cell in cells}
    for cell in cells:
        rect = groups[f"node-{cell.id}"].find(f"{SVG}rect")
        assert rect is not None
        share = cell.node.total_ns / tree.root.total_ns
        assert float(rect.get("width") or 0) == pytest.approx(max(share * WIDTH, 0.5), abs=0.02)
        for child in cell.node.children:
            placed = by_node.get(id(child))
            if placed is not None:  # a child sits inside its parent's span, one row down
                assert cell.x0 - 1e-9 <= placed.x0 <= placed.x1 <= cell.x1 + 1e-9
                assert placed.depth == cell.depth + 1


def test_icicle_escapes_names(hostile_bundle: RunBundle) -> None:
    svg = RENDERER.render(tree_of(hostile_bundle, "tf"))
    root = ET.fromstring(svg)
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(HOSTILE in title for title in titles)
    assert b"<script" not in svg

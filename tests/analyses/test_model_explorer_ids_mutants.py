"""Model Explorer's node ids on a small module written here, numbered by the rule the module's
docstring gives (from Model Explorer's MLIR adapter): one graph per function, `NoOp` skipped,
ids from 0 over the entry block's ops in order with the terminator, the ops directly inside an
op's regions numbered right after it, deeper ops and other blocks without a node; the keys are
walk indices over the whole module, the module op itself not counted.

Written for `analyses/model_explorer_ids.py`, whose own test needs Model Explorer and captures;
`load_node_data_export` is checked on the small annotated bundle of `tests/analyses/test_support`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.model_explorer_ids import (
    ExplorerNode,
    explorer_node_ids,
    load_node_data_export,
)
from irprof.errors import UsageError
from tests.analyses.test_support import make_bundle

MODULE = """
module {
  "x.global"() : () -> ()
  func.func @main() {
    "x.a"() : () -> ()
    "x.region"() ({
      "x.b"() : () -> ()
      "x.region"() ({
        "x.deep"() : () -> ()
      }) : () -> ()
    }, {
      "x.d"() : () -> ()
    }) : () -> ()
    "x.e"() : () -> ()
    return
  }
  func.func @NoOp() {
    "x.a"() : () -> ()
    return
  }
  func.func private @declared()
  func.func @two_blocks() {
    "x.a"() : () -> ()
    cf.br ^bb1
  ^bb1:
    "x.f"() : () -> ()
    return
  }
}
"""

# Walk order (pre-order, the module op not counted) and the node each op gets:
EXPECTED = {
    # 0 x.global: outside any function, no node; 1 func @main: the graph, no node
    2: ("main", "0"),  # x.a
    3: ("main", "1"),  # x.region
    4: ("main", "2"),  # x.b: directly in x.region's first region
    5: ("main", "3"),  # the inner x.region, also directly inside
    # 6 x.deep: two regions down, no node
    7: ("main", "4"),  # x.d: directly in x.region's second region
    8: ("main", "5"),  # x.e
    9: ("main", "6"),  # return: the terminator is a node
    # 10 func @NoOp, 11 x.a, 12 return: skipped; 13 func @declared: no body
    # 14 func @two_blocks
    15: ("two_blocks", "0"),  # x.a
    16: ("two_blocks", "1"),  # cf.br
    # 17 x.f and 18 return: not in the entry block
}


@pytest.fixture(scope="module")
def module() -> Iterator[ir.Module]:
    context = ir.Context()
    context.allow_unregistered_dialects = True
    with context, ir.Location.unknown():
        yield ir.Module.parse(MODULE)


def test_node_ids_by_the_adapters_rule(module: ir.Module) -> None:
    found = explorer_node_ids(module)
    expected = {index: ExplorerNode(graph, node) for index, (graph, node) in EXPECTED.items()}
    assert found == expected
    # the indices are those of the module's pre-order walk, the module op left out
    names: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    assert names[1:] == [
        "x.global", "func.func", "x.a", "x.region", "x.b", "x.region", "x.deep", "x.d", "x.e",
        "func.return", "func.func", "x.a", "func.return", "func.func", "func.func", "x.a",
        "cf.br", "x.f", "func.return",
    ]  # fmt: skip


def test_a_module_without_functions_has_no_nodes() -> None:
    context = ir.Context()
    context.allow_unregistered_dialects = True
    with context, ir.Location.unknown():
        module = ir.Module.parse('"x.global"() : () -> ()')
        assert explorer_node_ids(module) == {}


def test_node_data_export_of_a_bundles_level(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    export = load_node_data_export(bundle)  # the first (here the only) annotated level
    loaded = load_annotated_level(bundle, "tf")
    assert export.level == "tf"
    assert [op.op_name for op in export.profiled.ops] == [op.op_name for op in loaded.profiled.ops]
    assert export.nodes == explorer_node_ids(loaded.module)
    # one function: its ops numbered 0, 1, ... in walk order
    assert {node.graph_id for node in export.nodes.values()} == {"main"}
    assert [node.node_id for node in export.nodes.values()] == [
        str(n) for n in range(len(export.nodes))
    ]
    assert len(export.nodes) > 5
    assert load_node_data_export(bundle, "tf").nodes == export.nodes
    with pytest.raises(UsageError, match="level 'stablehlo' is not annotated"):
        load_node_data_export(bundle, "stablehlo")  # the level asked for, not the first

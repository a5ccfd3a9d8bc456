"""How `auto` grouping opens the hottest scopes (`_open_hottest_groups`) and how a function's
many arguments become one input node, on scope trees small enough to follow by hand (written
from the survivors of the mutation run of `analyses/op_graph.py`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from irprof.analyses.op_graph import (
    OpGraph,
    OpGraphOptions,
    _open_hottest_groups,
    _TopOp,
    build_op_graph,
)
from irprof.analyses.profiled_ops import ProfiledOp, profiled_ops_of
from irprof.errors import UsageError
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.opprofile import ProfileData


def _record(index: int, scope: str) -> ProfiledOp:
    return ProfiledOp(
        index=index, op_name="t.op", function="f", runtime_name="", scope=scope, source="",
        chain=(), location="", profile=None, trivial=False,
    )  # fmt: skip


def _tops(*ops: tuple[str, int]) -> tuple[list[_TopOp], dict[int, str]]:
    """One top op per (scope, time); scopes of the scoped ones ("" for none)."""
    tops = [
        _TopOp(_record(i, scope), nested_ns=ns, nested_measured=True)
        for i, (scope, ns) in enumerate(ops)
    ]
    return tops, {i: scope for i, (scope, _) in enumerate(ops) if scope}


def test_the_hottest_groups_open_while_the_graph_fits() -> None:
    """Six ops, one unscoped: start from `a` and `b` (3 nodes). `a` (95) opens into `a/x` and
    `a/y` (4 nodes), `a/x` (90) into its two ops' scopes (5 nodes: the limit); `b` would make 6,
    so it stays one group."""
    tops, scopes = _tops(("a/x/p", 50), ("a/x/q", 40), ("a/y", 5), ("b/z", 3), ("b/w", 1), ("", 7))
    assert _open_hottest_groups(tops, scopes, 5) == {
        0: "a/x/p",
        1: "a/x/q",
        2: "a/y",
        3: "b",
        4: "b",
    }


def test_a_group_with_too_many_children_opens_its_hottest_ones() -> None:
    """`a` has three children and room for one more node: its hottest child opens, the other
    two stay in `a`."""
    tops, scopes = _tops(("a/x", 10), ("a/y", 20), ("a/z", 5))
    assert _open_hottest_groups(tops, scopes, 2) == {0: "a", 1: "a/y", 2: "a"}


def test_groups_open_one_level_at_a_time() -> None:
    """`a` opens into `a/x` and `a/y` (2 nodes, the limit), not straight into its four
    leaves; neither can open further."""
    tops, scopes = _tops(("a/x/p", 10), ("a/x/q", 9), ("a/y/r", 2), ("a/y/s", 1))
    assert _open_hottest_groups(tops, scopes, 2) == {0: "a/x", 1: "a/x", 2: "a/y", 3: "a/y"}


def test_a_group_without_room_leaves_the_others_to_open() -> None:
    """`a` (hottest) has two children and no room; `b` still opens down its single line of
    scopes."""
    tops, scopes = _tops(("a/p", 10), ("a/q", 10), ("b/x/1", 1))
    assert _open_hottest_groups(tops, scopes, 2) == {0: "a", 1: "a", 2: "b/x/1"}


@pytest.mark.timeout(30)
def test_onnx_scopes_with_a_leading_separator_open_like_any_other() -> None:
    """ONNX node names start with `/` (`/m/encoder/layers.0/attn/MatMul`): their first
    component is `/m`, not the empty text before the separator. Every scope's depth-1 prefix was
    "" and opening "" gave "" back: `irprof report` of an exported HF Swin never ended. `/m`
    opens, then `/m/enc`; `layers.0`'s two children would not fit in 3 nodes."""
    tops, scopes = _tops(
        ("/m/enc/layers.0/attn", 50), ("/m/enc/layers.0/mlp", 30), ("/m/enc/layers.1/attn", 10),
        ("/m/head", 5),
    )  # fmt: skip
    assert _open_hottest_groups(tops, scopes, 3) == {
        0: "/m/enc/layers.0",
        1: "/m/enc/layers.0",
        2: "/m/enc/layers.1/attn",  # a single line of scopes opens all the way
        3: "/m/head",
    }


@pytest.mark.timeout(30)
def test_a_group_that_opens_into_itself_is_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a scope's prefix ever not go deeper (the old reading of a leading separator did
    not), the group is settled as it is instead of being opened again and again."""
    import irprof.analyses.op_graph as op_graph

    def first_components(scope: str, depth: int) -> str:
        return "/".join(scope.split("/")[:depth])  # "" for every "/..." scope

    monkeypatch.setattr(op_graph, "scope_prefix", first_components)
    tops, scopes = _tops(("/m/a", 5), ("/m/b", 4))
    assert _open_hottest_groups(tops, scopes, 3) == {0: "", 1: ""}


TYPES = ("f32", "f32", "f16", "i32", "i64", "i8", "i16", "index")


def test_many_arguments_are_one_input_node_naming_the_six_commonest_types() -> None:
    arguments = ", ".join(f"%a{i}: {kind}" for i, kind in enumerate(TYPES))
    text = f"""
module {{
  func.func @f({arguments}) -> f32 {{
    %0 = arith.addf %a0, %a1 : f32
    return %0 : f32
  }}
}}
"""
    module = parse_module(text, make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(max_nodes=7))
    (node,) = [node for node in graph.nodes if node.kind == "input"]
    assert (node.id, node.label, node.title) == ("args", "%arg0..%arg7", "8 function arguments")
    assert (node.location, node.scope, node.ops) == ("", "", 0)
    assert (node.total_ns, node.share) == (None, None)
    # Counts first, ties in argument order; the seventh type (index) is left out.
    assert node.detail == "f32 x2, f16 x1, i32 x1, i64 x1, i8 x1, i16 x1"


def test_the_outermost_scopes_start_as_groups_even_when_too_many() -> None:
    """Three outermost scopes and room for two nodes: each stays its own group (none is
    merged with another); `a`, the hottest, cannot open without a third node."""
    tops, scopes = _tops(("a/1", 3), ("b/1", 2), ("c/1", 1))
    assert _open_hottest_groups(tops, scopes, 2) == {0: "a", 1: "b", 2: "c"}


SMALL = """
module {
  func.func private @decl(f32) -> f32
  func.func private @sink(f32)
  func.func @main(%a: f32, %b: f32) -> f32 {
    %0 = arith.addf %a, %b : f32
    func.call @sink(%0) : (f32) -> ()
    cf.br ^bb2
  ^bb1:
    %1 = arith.mulf %2, %2 : f32
    return %1 : f32
  ^bb2:
    %2 = arith.subf %0, %a : f32
    cf.br ^bb1
  }
}
"""
# Walk indices: 0 @decl, 1 @sink, 2 @main, 3 addf, 4 call, 5 br, 6 mulf, 7 return, 8 subf, 9 br.


def test_op_nodes_inputs_and_the_return_of_a_function_with_blocks() -> None:
    module = parse_module(SMALL, make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(function="main"))
    inputs = [node for node in graph.nodes if node.kind == "input"]
    assert [(n.id, n.location, n.scope, n.ops) for n in inputs] == [
        ("arg0", "", "", 0),
        ("arg1", "", "", 0),
    ]
    ops = [(n.id, n.kind, n.label, n.op_index) for n in graph.nodes if n.kind != "input"]
    assert ops == [
        ("n0", "op", "arith.addf", 3),
        ("n1", "op", "func.call", 4),  # no results, but not the return
        ("n2", "op", "cf.br", 5),
        ("n3", "op", "arith.mulf", 6),
        ("n4", "output", "return", 7),
        ("n5", "op", "arith.subf", 8),
        ("n6", "op", "cf.br", 9),
    ]
    # The mulf reads the subf of a later block: walked after it, so no edge (not `nNone`).
    edges = {(edge.src, edge.dst, edge.label) for edge in graph.edges}
    assert edges == {
        ("arg0", "n0", "f32"),
        ("arg1", "n0", "f32"),
        ("n0", "n1", "f32"),
        ("n3", "n4", "f32"),
        ("n0", "n5", "f32"),
        ("arg0", "n5", "f32"),
    }


def test_a_declaration_draws_as_an_empty_graph() -> None:
    module = parse_module(SMALL, make_context())
    graph = build_op_graph(module, profiled_ops_of(module), OpGraphOptions(function="decl"))
    assert (graph.function, graph.nodes, graph.edges, graph.op_count) == ("decl", (), (), 0)


KINDS = ("addf", "subf", "mulf", "divf", "maximumf", "minimumf", "remf", "addf")


def _scoped_module() -> str:
    lines = ["module {", "  func.func @main(%a: f32) -> f32 {"]
    for i, kind in enumerate(KINDS):  # eight ops of net/blk/enc, seven kinds
        lines.append(f'    %e{i} = arith.{kind} %a, %a : f32 loc("net/blk/enc/op{i}")')
    lines.append('    %d0 = arith.negf %a : f32 loc("net/blk/dec/neg")')
    lines.append('    %d1 = arith.addf %d0, %e0 : f32 loc("net/blk/dec/add")')
    lines += ["    return %d1 : f32", "  }", "}"]
    return "\n".join(lines) + "\n"


def _scoped_graph(options: OpGraphOptions) -> OpGraph:
    module = parse_module(_scoped_module(), make_context())
    profiled = profiled_ops_of(module)
    # The encoder's ops are measured (op i: (i + 1) us, a share of (i + 1) %), the rest not.
    ops = tuple(
        replace(op, profile=_profile(op.index)) if 1 <= op.index <= 8 else op for op in profiled.ops
    )
    return build_op_graph(module, replace(profiled, ops=ops), options)


def _profile(index: int) -> ProfileData:
    ns = index * 1_000
    return ProfileData(
        count=1, total_ns=ns, mean_ns=ns, min_ns=ns, max_ns=ns, first_ts_ns=0,
        fraction=index / 100,
    )  # fmt: skip


def test_always_groups_each_full_scope_into_one_node() -> None:
    graph = _scoped_graph(OpGraphOptions(grouping="always", max_nodes=1))
    groups = {node.title: node for node in graph.nodes if node.kind == "group"}
    assert set(groups) == {"net/blk/enc", "net/blk/dec"}
    assert graph.grouped_scopes == ("net/blk/enc", "net/blk/dec")
    enc, dec = groups["net/blk/enc"], groups["net/blk/dec"]
    assert (enc.label, enc.scope, enc.location, enc.ops) == ("enc", "net/blk/enc", "", 8)
    assert enc.total_ns == sum(range(1, 9)) * 1_000
    assert enc.share == pytest.approx(sum(range(1, 9)) / 100)
    assert enc.detail == (
        "arith.addf x2, arith.subf x1, arith.mulf x1, arith.divf x1, arith.maximumf x1, "
        "arith.minimumf x1"
    )
    assert (dec.label, dec.ops, dec.total_ns, dec.share) == ("dec", 2, None, None)
    assert dec.detail == "arith.negf x1, arith.addf x1"
    (output,) = [node for node in graph.nodes if node.kind == "output"]
    assert (output.total_ns, output.share, output.ops) == (None, None, 1)


def test_auto_groups_nothing_while_the_ops_fit_exactly() -> None:
    graph = _scoped_graph(OpGraphOptions(grouping="auto", max_nodes=11))  # 11 top ops
    assert graph.op_count == 11
    assert not [node for node in graph.nodes if node.kind == "group"]
    measured = [node for node in graph.nodes if node.kind == "op"][:8]
    assert [node.share for node in measured] == [pytest.approx(i / 100) for i in range(1, 9)]


def _two_function_graph(text: str, times: dict[str, int] | None = None) -> OpGraph:
    """The default function's graph; ops named in `times` (by their NameLoc) measured."""
    module = parse_module(text, make_context())
    profiled = profiled_ops_of(module)
    times = times or {}
    ops = tuple(
        replace(op, profile=_profile(times[op.runtime_name])) if op.runtime_name in times else op
        for op in profiled.ops
    )
    return build_op_graph(module, replace(profiled, ops=ops))


TWO = """
module {
  func.func @zzz(%a: f32) -> f32 {
    %0 = arith.addf %a, %a : f32 loc("z0")
    %1 = arith.addf %0, %0 : f32 loc("z1")
    return %1 : f32
  }
  func.func @main(%a: f32) -> f32 {
    %0 = arith.addf %a, %a : f32 loc("m0")
    return %0 : f32
  }
  func.func @aaa(%a: f32) -> f32 {
    %0 = arith.addf %a, %a : f32 loc("a0")
    return %0 : f32
  }
}
"""


def test_the_default_function_has_the_most_time_then_the_most_ops_then_is_main() -> None:
    # No time: the largest function (@zzz: 3 ops).
    assert _two_function_graph(TWO).function == "zzz"
    # Time decides over size: @aaa's one measured op (5 us) over @zzz's two (1 + 3 us).
    times = {"z0": 1, "z1": 3, "a0": 5}
    assert _two_function_graph(TWO, times).function == "aaa"
    # Same time and size as @zzz: `main`, though neither first nor last.
    tie = TWO.replace('loc("m0")', 'loc("m0")\n    %1 = arith.addf %a, %a : f32 loc("m1")')
    assert _two_function_graph(tie).function == "main"


def test_a_module_without_functions_is_refused() -> None:
    module = parse_module("module {\n}\n", make_context())
    with pytest.raises(UsageError) as refused:
        build_op_graph(module, profiled_ops_of(module, path="m.mlir"))
    assert str(refused.value) == "m.mlir: no function (func.func / util.func) to draw"

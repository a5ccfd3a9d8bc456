"""The scope tree on ops built in code: where each row sits (scopes, `@function` nodes, torch
module paths), the names of its leaves, the sums and hottest op of every node, the time no op
received, the headline's walk past dominant scopes and the JSON form.

Written from the mutants of `analyses/scope_tree.py`. Every total is added up in the test from
the op times it gives.
"""

from __future__ import annotations

from dataclasses import replace

from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.scope_tree import UNATTRIBUTED, ScopeNode, ScopeTree, headline, scope_tree
from irprof.opprofile import ProfileData


def op(
    index: int,
    name: str,
    ns: int,
    *,
    scope: str = "",
    function: str = "main",
    kind: str = "x.op",
    group: str = "",
    group_size: int = 0,
) -> ProfiledOp:
    data = ProfileData.from_durations([ns], 0, 10_000, kernels=[f"{name}:k"], source="t")
    if group:
        data = replace(data, group=group, group_total_ns=ns, group_size=group_size)
    return ProfiledOp(
        index=index,
        op_name=kind,
        function=function,
        runtime_name=name,
        scope=scope,
        source=f"m.py:{index + 1}:1",
        chain=(),
        location=f"loc{index}",
        profile=data,
        trivial=False,
    )


def tree(ops: list[ProfiledOp], profiled_ns: int = 0, level: str = "lvl") -> ScopeTree:
    summary = {"profiled_ns": profiled_ns} if profiled_ns else {}
    return scope_tree(ProfiledModule("m.mlir", tuple(ops), summary), level=level)


def by_path(scope_tree_: ScopeTree) -> dict[str, tuple[ScopeNode, int]]:
    return {node.path: (node, depth) for node, depth in scope_tree_.walk()}


def test_nested_scopes_sum_their_rows_and_point_at_the_hottest_op() -> None:
    ops = [
        op(0, "net/dense/MatMul", 300, scope="net/dense", kind="tf.MatMul"),
        op(1, "net/dense/Relu", 100, scope="net/dense", kind="tf.Relu"),
        op(2, "net/add", 50, scope="net", kind="tf.AddV2"),
        op(3, "net/out/Softmax", 120, scope="net/out", kind="tf.Softmax"),
    ]
    built = tree(ops)
    nodes = by_path(built)
    root, root_depth = nodes[""]
    assert (root.name, root.kind, root_depth) == ("lvl", "root", 0)
    assert built.level == "lvl" and built.profiled_ns == 300 + 100 + 50 + 120
    assert (root.total_ns, root.ops) == (570, 4)
    net, net_depth = nodes["net"]
    assert (net.name, net.kind, net_depth, net.total_ns, net.ops) == ("net", "scope", 1, 570, 4)
    dense, dense_depth = nodes["net/dense"]
    assert (dense.name, dense.kind, dense_depth) == ("dense", "scope", 2)
    assert (dense.total_ns, dense.ops, dense.op_index) == (400, 2, 0)
    out, _ = nodes["net/out"]
    assert (out.total_ns, out.op_index) == (120, 3)
    # the hottest child is the scope, so the parents link to its hottest op (0, not 3)
    assert net.op_index == root.op_index == 0
    # children hottest first; scope nodes carry no op kind or location of their own
    assert [child.name for child in net.children] == ["dense", "out", "add"]
    assert (dense.op_name, dense.location) == ("", "")
    # a leaf keeps its own part of the name, its row's kind, location and walk index
    matmul, matmul_depth = nodes["net/dense/MatMul"]
    assert (matmul.name, matmul.kind, matmul_depth) == ("MatMul", "op", 3)
    assert (matmul.total_ns, matmul.ops, matmul.op_index) == (300, 1, 0)
    assert (matmul.op_name, matmul.location, matmul.children) == ("tf.MatMul", "m.py:1:1", ())
    add, _ = nodes["net/add"]
    assert (add.name, add.op_index) == ("add", 2)
    # parents before children, each node once, depth first
    order = [node.path for node, _ in built.walk()]
    assert order == [
        "", "net", "net/dense", "net/dense/MatMul", "net/dense/Relu", "net/out",
        "net/out/Softmax", "net/add",
    ]  # fmt: skip


def test_equal_times_are_ordered_by_name() -> None:
    ops = [op(0, "b", 10), op(1, "a", 10), op(2, "c", 11)]
    root = tree(ops).root
    assert [child.name for child in root.children] == ["c", "a", "b"]
    assert root.op_index == 2


def test_a_name_that_does_not_start_with_its_scope_is_kept_whole() -> None:
    ops = [op(0, "other/MatMul", 7, scope="net/dense"), op(1, "net/denseX", 5, scope="net")]
    nodes = by_path(tree(ops))
    assert nodes["other/MatMul"][0].name == "other/MatMul"
    assert nodes["other/MatMul"][1] == 3  # under net/dense all the same
    # "net/denseX" starts with "net" + "/": the prefix and its separator are cut
    assert nodes["net/denseX"][0].name == "denseX"


def test_torch_module_paths_split_on_dots_and_names_keep_the_op_part() -> None:
    ops = [
        op(0, "encoder.fc1 | linear | aten.linear", 40, scope="encoder.fc1"),
        op(1, "encoder.fc2 | relu | aten.relu", 10, scope="encoder.fc2"),
    ]
    nodes = by_path(tree(ops))
    encoder, depth = nodes["encoder"]
    assert (encoder.name, encoder.kind, depth, encoder.total_ns) == ("encoder", "scope", 1, 50)
    fc1, depth = nodes["encoder.fc1"]
    assert (fc1.name, depth, fc1.total_ns) == ("fc1", 2, 40)
    leaf, depth = nodes["encoder.fc1 | linear | aten.linear"]
    assert (leaf.name, depth) == ("linear | aten.linear", 3)


def test_rows_without_a_scope_sit_under_their_function_only_when_there_are_several() -> None:
    one_function = [op(0, "k0", 5, function="f"), op(1, "k1", 3, function="f")]
    assert [child.path for child in tree(one_function).root.children] == ["k0", "k1"]
    several = [
        op(0, "k0", 5, function="f"),
        op(1, "k1", 3, function="g"),
        op(2, "k2", 4, function="g"),
        op(3, "net/add", 2, scope="net", function="g"),
    ]
    nodes = by_path(tree(several))
    f, depth = nodes["@f"]
    assert (f.name, f.kind, depth, f.total_ns, f.ops) == ("@f", "function", 1, 5, 1)
    g, _ = nodes["@g"]
    assert (g.total_ns, g.ops, g.op_index) == (3 + 4, 2, 2)
    assert [child.name for child in g.children] == ["k2", "k1"]
    assert nodes["k1"][1] == 2
    # a row with a scope is placed by its scope, not its function
    assert nodes["net"][1] == 1 and "@g" not in {p for p in nodes if p.startswith("net")}
    assert [child.path for child in nodes["net"][0].children] == ["net/add"]


def test_a_group_of_ops_sits_in_the_scope_its_members_share() -> None:
    ops = [
        op(0, "net/a/mul", 30, scope="net/a", group="g", group_size=3),
        op(1, "net/b/add", 10, scope="net/b", group="g", group_size=3),
        op(2, "net/a/exp", 5, scope="net/a"),
    ]
    nodes = by_path(tree(ops))
    net, _ = nodes["net"]
    groups = [child for child in net.children if child.kind == "group"]
    assert len(groups) == 1
    group = groups[0]
    assert (group.total_ns, group.ops, group.op_index) == (40, 2, 0)
    # two of the group's three members are here: their time is an estimated share
    assert group.estimated_ns == 40
    assert (net.estimated_ns, nodes[""][0].estimated_ns) == (40, 40)
    assert nodes["net/a"][0].estimated_ns == 0


def test_a_one_member_group_row_is_an_op_leaf() -> None:
    ops = [op(0, "net/mul", 30, scope="net", group="g", group_size=2)]
    (leaf,) = tree(ops).root.children[0].children
    assert (leaf.kind, leaf.ops, leaf.total_ns, leaf.estimated_ns) == ("op", 1, 30, 30)


def test_time_no_op_received_is_a_root_leaf_and_none_when_covered() -> None:
    ops = [op(0, "a", 60), op(1, "b", 30)]
    with_gap = tree(ops, profiled_ns=100)
    gap = [c for c in with_gap.root.children if c.kind == "unattributed"]
    assert [(c.name, c.path, c.total_ns, c.ops, c.op_index) for c in gap] == [
        (UNATTRIBUTED, UNATTRIBUTED, 100 - 90, 0, -1)
    ]
    assert with_gap.root.total_ns == with_gap.profiled_ns == 100
    assert with_gap.root.ops == 2
    exact = tree(ops, profiled_ns=90)
    assert [c.kind for c in exact.root.children] == ["op", "op"]
    # a summary below the rows' sum adds nothing (never a negative leaf)
    short = tree(ops, profiled_ns=89)
    assert short.root.total_ns == 90 and short.profiled_ns == 89
    assert all(c.kind == "op" for c in short.root.children)


def test_an_empty_module_is_a_bare_root() -> None:
    empty = tree([], level="tf")
    assert empty.root == ScopeNode("tf", "", "root", 0, 0, 0, -1, "", "", ())
    assert list(empty.walk()) == [(empty.root, 0)]
    assert headline(empty) == ()


def chain(shares: list[int], rest: int) -> ScopeTree:
    """Scopes s0/s1/... where s<i> holds shares[i] ns in a leaf of its own plus all deeper
    scopes; `rest` ns in a leaf beside s0."""
    ops = []
    scope = ""
    for depth, ns in enumerate(shares):
        scope = f"{scope}/s{depth}" if scope else f"s{depth}"
        ops.append(op(depth, f"{scope}/leaf", ns, scope=scope))
    ops.append(op(len(shares), "beside", rest))
    return tree(ops)


def test_the_headline_passes_scopes_holding_over_the_dominant_share() -> None:
    # s0 holds 91 of 100 (> 90%): passed; s1 holds 81 of s0's 91 (89%): the split is in s0
    passed = chain([10, 1, 80], rest=9)
    assert [node.path for node in headline(passed)] == ["s0/s1", "s0/leaf"]
    # exactly 90% is not "over": the root is where the time splits
    at_share = chain([10, 80], rest=10)
    assert [node.path for node in headline(at_share)] == ["s0", "beside"]
    assert [node.path for node in headline(at_share, dominant=0.89)] == ["s0/s1", "s0/leaf"]
    # a dominant leaf has nothing under it to read: its parent's children are the headline
    leaf_only = tree([op(0, "big", 99), op(1, "small", 1)])
    assert [node.path for node in headline(leaf_only)] == ["big", "small"]


def test_the_headline_keeps_the_hottest_limit_nodes() -> None:
    ops = [op(index, f"k{index}", 100 - index) for index in range(9)]
    built = tree(ops)
    assert [node.path for node in headline(built)] == [f"k{index}" for index in range(6)]
    assert [node.path for node in headline(built, limit=2)] == ["k0", "k1"]


def test_json_form_holds_every_field_and_the_children() -> None:
    built = tree([op(0, "net/MatMul", 30, scope="net", kind="tf.MatMul")], profiled_ns=50)
    leaf = {
        "name": "MatMul",
        "path": "net/MatMul",
        "kind": "op",
        "total_ns": 30,
        "ops": 1,
        "estimated_ns": 0,
        "op_index": 0,
        "op_name": "tf.MatMul",
        "location": "m.py:1:1",
        "children": [],
    }
    net = {**leaf, "name": "net", "path": "net", "kind": "scope", "op_name": "", "location": ""}
    net["children"] = [leaf]
    gap = {
        **leaf,
        "name": UNATTRIBUTED,
        "path": UNATTRIBUTED,
        "kind": "unattributed",
        "total_ns": 20,
        "ops": 0,
        "op_index": -1,
        "op_name": "",
        "location": "",
    }
    root = {
        **net,
        "name": "lvl",
        "path": "",
        "kind": "root",
        "total_ns": 50,
        "children": [net, gap],
    }
    assert built.to_json() == {"level": "lvl", "profiled_ns": 50, "root": root}


def test_a_group_across_functions_without_a_scope_sits_at_the_root() -> None:
    # a kernel running ops of two functions: no one function to place it under
    ops = [
        op(0, "k_a", 30, function="f", group="g", group_size=2),
        op(1, "k_b", 10, function="g", group="g", group_size=2),
        op(2, "k_c", 5, function="f"),
    ]
    root = tree(ops).root
    assert [(child.kind, child.total_ns) for child in root.children] == [
        ("group", 40),
        ("function", 5),
    ]
    assert root.children[1].path == "@f"


def test_a_name_with_a_slash_but_no_scope_is_kept_whole() -> None:
    leaf = tree([op(0, "XXXX/k", 5)]).root.children[0]
    assert (leaf.name, leaf.path) == ("XXXX/k", "XXXX/k")

"""Boundary cases of frameworks/tf/fusion.py that its mutation run found untested.

Each test builds a small MLIR module and executed graph by hand (as test_fusion_membership.py
does) and states the expected membership from the def-use chains written in the test.
"""

from __future__ import annotations

import pytest
from iree.compiler import ir

from irprof.frameworks.tf.fusion import (
    MAX_MEMBERS,
    ExecutedGraph,
    ExecutedNode,
    Membership,
    feeds_only_pruned,
)
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.context import make_context

NEEDS_FRAMEWORK = False  # shipped fixtures and MLIR only: tests/frameworks/conftest.py

T = "tensor<4xf32>"
REWRITE = "s/ArithmeticOptimizer/AddOpsRewrite_add_1"


def op(result: str, kind: str, *operands: str, name: str | None) -> str:
    """One generic `tf.<kind>` op named `name` (None: no name), every value a tensor<4xf32>."""
    values = ", ".join(f"%{o}" for o in operands)
    types = ", ".join([T] * len(operands))
    loc = f'"{name}"' if name is not None else "unknown"
    return f'%{result} = "tf.{kind}"({values}) : ({types}) -> {T} loc({loc})'


def const(result: str, name: str) -> str:
    return f'%{result} = "tf.Const"() {{value = dense<2.0> : {T}}} : () -> {T} loc("{name}")'


def module(lines: list[str], result: str, inputs: str | None) -> str:
    """`@f(%x, %y, %z)` running `lines` and returning `%result`; `inputs` names the arguments'
    `_Arg` nodes (`tf.entry_function`), None: unnamed."""
    body = "\n  ".join(lines)
    attributes = (
        f' attributes {{tf.entry_function = {{inputs = "{inputs}", outputs = "out"}}}}'
        if inputs is not None
        else ""
    )
    return (
        f"func.func @f(%x: {T}, %y: {T}, %z: {T}) -> {T}{attributes} {{\n  {body}\n"
        f"  return %{result} : {T}\n}}"
    )


def node(name: str, kind: str, *inputs: str, fused: tuple[str, ...] = ()) -> ExecutedNode:
    return ExecutedNode(name, kind, fused, tuple(inputs))


def build(
    lines: list[str],
    result: str,
    nodes: list[ExecutedNode],
    folded: tuple[str, ...] = (),
    inputs: str | None = None,
) -> tuple[Membership, TfOpIndex]:
    """Membership of `nodes` (in this order) over the module of `lines`."""
    graph = ExecutedGraph({n.name: n for n in nodes}, "test", folded=set(folded))
    for item in nodes:
        for producer in item.inputs:
            graph.consumers[producer].append(item.name)
    view = TfOpIndex.of(ir.Module.parse(module(lines, result, inputs), make_context()))
    return Membership.build(view, graph), view


def names(view: TfOpIndex, positions: list[int]) -> list[str | None]:
    return [view.infos[p].keys.name for p in positions]


def at(view: TfOpIndex, name: str) -> int:
    (position,) = view.by_name[name]
    return position


CHAIN = [
    op("a", "AddV2", "x", "y", name="s/add"),
    op("b", "AddV2", "a", "z", name="s/add_1"),
    op("c", "Relu", "b", name="s/relu"),
]


# feeds_only_pruned: a value only ops that did not run read.

PRUNED = [
    op("a", "Neg", "x", name="r/first"),  # read by r/dead only
    op("b", "Relu", "a", name="r/dead"),
    op("c", "Neg", "y", name="r/kept"),  # read by r/live, which ran
    op("d", "Mul", "c", "b", name="r/live"),
    op("e", "Neg", "z", name="r/unused"),  # read by nothing
    op("g", "Neg", "z", name="r/to_folded"),  # read by r/folded, constant-folded
    op("h", "Relu", "g", name="r/folded"),
    op("i", "Neg", "x", name="r/to_anonymous"),  # read by an op without a name
    op("j", "Relu", "i", name=None),
    op("k", "Neg", "y", name="r/returned"),  # read by the terminator only
    op("m", "AddV2", "d", "h", name="r/sum"),
    op("n", "AddV2", "m", "j", name="r/sum_1"),
]


def pruned(positions_of: list[str]) -> bool:
    found, view = build(
        PRUNED,
        "k",
        [node("r/live", "Mul", "r/kept"), node("r/sum", "AddV2", "r/live")],
        folded=("r/folded",),
    )
    return feeds_only_pruned(view, [at(view, n) for n in positions_of], found)


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        (["r/first"], True),  # its only reader is absent from the executed graph
        (["r/kept"], False),  # its reader ran
        (["r/first", "r/kept"], False),  # one reader of the two ran
        (["r/unused"], False),  # no reader: nothing says it was pruned
        (["r/to_folded"], False),  # its reader was folded into a constant: it ran before
        (["r/to_anonymous"], False),  # a reader without a name cannot be looked up
        (["r/returned"], False),  # the terminator reads it: it may have run
    ],
)
def test_feeds_only_pruned(ops: list[str], expected: bool) -> None:
    assert pruned(ops) is expected


def test_a_value_of_another_function_is_never_called_pruned() -> None:
    """Node names inside a called function are not the executed graph's: cannot tell."""
    text = (
        f"func.func @f(%x: {T}) -> {T} {{\n  {op('a', 'Neg', 'x', name='r/first')}\n"
        f"  return %a : {T}\n}}\n"
        f"func.func @g(%x: {T}) -> {T} {{\n  {op('a', 'Neg', 'x', name='r/inner')}\n"
        f"  {op('b', 'Relu', 'a', name='r/inner_dead')}\n  return %b : {T}\n}}"
    )
    view = TfOpIndex.of(ir.Module.parse(text, make_context()))
    found = Membership.build(view, ExecutedGraph({}, "test"))
    assert feeds_only_pruned(view, [at(view, "r/inner")], found) is False


# Nodes that are no rewrites.


@pytest.mark.parametrize("kind", ["_Arg", "_Retval"])
def test_an_argument_or_result_node_claims_no_op_with_the_same_leaves(kind: str) -> None:
    """s/gen reads nothing, as an argument node reads nothing: were the node taken for a
    rewrite, its (empty) leaves would match s/gen's and it would claim it."""
    lines = [op("a", "RandomStandardNormal", name="s/gen"), op("c", "Relu", "a", name="s/relu")]
    found, _ = build(lines, "c", [node("s/input", kind), node("s/relu", "Relu", "s/input")])
    assert found.members_of("s/input") == []
    assert found.absorbed_by == {}


# Leaves through named arguments, constants and folded ops.


def test_a_rewrite_of_named_arguments_finds_the_op_of_the_same_arguments() -> None:
    """The entry function names its arguments' `_Arg` nodes: both sides name them alike."""
    found, view = build(
        CHAIN,
        "c",
        [
            node("in_x", "_Arg"),
            node("in_y", "_Arg"),
            node("in_z", "_Arg"),
            node(REWRITE, "AddN", "in_x", "in_y", "in_z"),
            node("s/relu", "Relu", REWRITE),
        ],
        inputs="in_x,in_y,in_z",
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_named_arguments_are_matched_by_name_not_by_count() -> None:
    """The rewrite sums in_x, in_y and in_z; s/add_1 sums x, y and x (in_x, in_y, in_x): as
    many values, not the same ones."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("b", "AddV2", "a", "x", name="s/add_1"),
        op("c", "Relu", "b", name="s/relu"),
    ]
    found, _ = build(
        lines,
        "c",
        [
            node("in_x", "_Arg"),
            node("in_y", "_Arg"),
            node("in_z", "_Arg"),
            node(REWRITE, "AddN", "in_x", "in_y", "in_z"),
            node("s/relu", "Relu", REWRITE),
        ],
        inputs="in_x,in_y,in_z",
    )
    assert found.members_of(REWRITE) == []


def test_constants_drop_out_of_both_sides_wherever_they_come() -> None:
    """A Const node between the rewrite's inputs, a tf.Const and a folded op before the IR
    sum's other operands: all drop out, the leaves are x, y and z on both sides."""
    lines = [
        const("k", "s/k"),
        op("f", "Neg", "x", name="s/scale"),
        op("a", "AddV2", "k", "x", name="s/add"),
        op("m", "AddV2", "f", "a", name="s/mid"),
        op("n", "AddV2", "m", "y", name="s/mid_1"),
        op("b", "AddV2", "n", "z", name="s/add_1"),
        op("c", "Relu", "b", name="s/relu"),
    ]
    found, view = build(
        lines,
        "c",
        [
            node("s/k", "Const"),
            node("w", "Const"),
            node(REWRITE, "AddN", "w", "x", "y", "z"),
            node("s/relu", "Relu", REWRITE),
        ],
        folded=("s/scale",),
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/mid_1", "s/mid", "s/add"]


def test_a_rewrite_over_a_node_with_another_kernel_keeps_the_nodes_own_result() -> None:
    """Leaves are values that ran: the folded s/scale is a constant, not a leaf; an op that ran
    as a node (t/mul) is one."""
    lines = [
        op("d", "Mul", "x", "y", name="t/mul"),
        op("a", "AddV2", "d", "z", name="s/add"),
        op("c", "Relu", "a", name="s/relu"),
    ]
    found, view = build(
        lines,
        "c",
        [
            node("t/mul", "Mul", "x", "y"),
            node(REWRITE, "AddN", "t/mul", "z"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add"]


# Cycles in the executed graph end the walks.


def test_rewrites_feeding_each_other_claim_nothing() -> None:
    found, _ = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", "x", "s/ArithmeticOptimizer/other"),
            node("s/ArithmeticOptimizer/other", "AddN", REWRITE),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert found.members_of(REWRITE) == []
    assert found.members_of("s/ArithmeticOptimizer/other") == []


def test_a_cycle_among_a_rewrites_consumers_ends_the_reader_search() -> None:
    """REWRITE feeds s/relu and `c`; `c` and `d` feed each other (no leaves of their own): the
    search through them ends, and s/relu still says what REWRITE replaced."""
    c, d = "s/ArithmeticOptimizer/c", "s/ArithmeticOptimizer/d"
    found, view = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node(c, "AddN", REWRITE, d),
            node(d, "AddN", c),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


# Which readers and which of their operands the root search starts from.


def test_every_consumer_of_a_rewrite_counts() -> None:
    """s/relu reads the rewrite where the IR reads s/add_1; t/neg's IR op reads an argument:
    the second consumer adds nothing, and does not drop what the first found."""
    lines = [*CHAIN, op("d", "Neg", "x", name="t/neg"), op("e", "AddV2", "c", "d", name="t/out")]
    found, view = build(
        lines,
        "e",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("s/relu", "Relu", REWRITE),
            node("t/neg", "Neg", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_rewrite_read_through_another_rewrite_without_an_op() -> None:
    """REWRITE's only consumer is `other`, a rewrite no IR op computes (it adds t/mul's value
    as well): the IR op reading `other` (t/use) says where REWRITE's value went."""
    other = "t/ArithmeticOptimizer/other"
    lines = [
        *CHAIN[:2],
        op("d", "Mul", "x", "y", name="t/mul"),
        op("u", "Relu", "b", name="t/use"),
        op("o", "AddV2", "u", "d", name="t/out"),
    ]
    found, view = build(
        lines,
        "o",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("t/mul", "Mul", "x", "y"),
            node(other, "AddN", REWRITE, "t/mul"),
            node("t/use", "Relu", other),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]
    assert found.members_of(other) == []


def test_the_root_is_searched_behind_the_operand_the_rewrite_feeds() -> None:
    """s/out's kernel is its op's: it reads the rewrite as operand 0, so only s/add (behind
    operand 0) is searched, not t/add (behind operand 1), which sums the same arguments."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("b", "AddV2", "x", "y", name="t/add"),
        op("o", "Mul", "a", "b", name="s/out"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, view = build(
        lines, "o", [node(rewrite, "AddN", "x", "y"), node("s/out", "Mul", rewrite, "t/add")]
    )
    assert names(view, found.members_of(rewrite)) == ["s/add"]


def test_a_fused_reader_with_two_matching_operands_is_ambiguous() -> None:
    """s/out's kernel fuses: every operand is searched, and two absent ops sum x and y."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("b", "AddV2", "x", "y", name="t/add"),
        op("o", "Mul", "a", "b", name="s/out"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, _ = build(
        lines, "o", [node(rewrite, "AddN", "x", "y"), node("s/out", "_MklFusedMul", rewrite)]
    )
    assert found.members_of(rewrite) == []


def test_the_root_search_passes_an_operand_that_ran() -> None:
    """s/out's fused kernel reads t/mul (which ran) first and s/add second: the search skips
    the first and finds the second."""
    lines = [
        op("d", "Mul", "x", "y", name="t/mul"),
        op("a", "AddV2", "x", "y", name="s/add"),
        op("o", "Mul", "d", "a", name="s/out"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, view = build(
        lines,
        "o",
        [
            node("t/mul", "Mul", "x", "y"),
            node(rewrite, "AddN", "x", "y"),
            node("s/out", "_MklFusedMul", "t/mul", rewrite),
        ],
    )
    assert names(view, found.members_of(rewrite)) == ["s/add"]


def test_the_root_search_looks_through_an_absent_op_of_other_leaves() -> None:
    """t/m multiplies s/add_1 by t/mul (which ran): not the rewrite's value, but its producer
    s/add_1 is."""
    lines = [
        *CHAIN[:2],
        op("d", "Mul", "x", "y", name="t/mul"),
        op("m", "Mul", "b", "d", name="t/m"),
        op("o", "Relu", "m", name="t/out"),
    ]
    found, view = build(
        lines,
        "o",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("t/mul", "Mul", "x", "y"),
            node("t/out", "_MklFusedRelu", REWRITE, "t/mul"),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_match_with_two_inputs_is_not_taken_down_to_one_of_them() -> None:
    """s/m = s/add + x has the leaves of s/add (x and y): it has two inputs, so it is the op
    computing the value, not a Relu-like wrapper of s/add."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("m", "AddV2", "a", "x", name="s/m"),
        op("c", "Relu", "m", name="s/relu"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_m"
    found, view = build(
        lines, "c", [node(rewrite, "AddN", "x", "y"), node("s/relu", "Relu", rewrite)]
    )
    assert names(view, found.members_of(rewrite)) == ["s/m", "s/add"]


# Claim order and shared rewrite trees.


def test_each_rewrite_claims_its_own_root_whatever_the_graph_order() -> None:
    """The tree's root comes before its leaf in the graph: the leaf still claims s/add (the
    value it computes), the root only s/add_1."""
    leaf = "s/ArithmeticOptimizer/AddOpsRewrite_Leaf_0_add_1"
    found, view = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", leaf, "z"),
            node(leaf, "AddN", "x", "y"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1"]
    assert names(view, found.members_of(leaf)) == ["s/add"]


def test_a_leaf_shares_only_the_ops_of_consumers_that_claimed_some() -> None:
    """The leaf (p + r, no IR op) feeds REWRITE and `idle`, a rewrite claiming nothing: it
    shares REWRITE's ops, `idle` being no second candidate."""
    leaf = "s/ArithmeticOptimizer/AddOpsRewrite_Leaf_0_add_1"
    idle = "s/ArithmeticOptimizer/idle"
    lines = [
        op("p", "Neg", "x", name="p/neg"),
        op("q", "Neg", "y", name="q/neg"),
        op("r", "Neg", "z", name="r/neg"),
        op("a", "AddV2", "p", "q", name="s/add"),
        op("b", "AddV2", "a", "r", name="s/add_1"),
        op("c", "Relu", "b", name="s/relu"),
    ]
    found, view = build(
        lines,
        "c",
        [
            node("p/neg", "Neg", "x"),
            node("q/neg", "Neg", "y"),
            node("r/neg", "Neg", "z"),
            node(leaf, "AddN", "p/neg", "r/neg"),
            node(idle, "AddN", leaf),
            node(REWRITE, "AddN", leaf, "q/neg"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert found.members_of(idle) == []
    assert names(view, found.members_of(leaf)) == ["s/add_1", "s/add"]


def test_the_reader_search_goes_on_past_a_consumer_already_seen() -> None:
    """REWRITE's value reaches an IR reader only through `c` and `d`, rewrites feeding each
    other; `d` feeds `c` (already searched) first, then t/use, which reads s/add_1 in the IR."""
    c, d = "s/ArithmeticOptimizer/c", "s/ArithmeticOptimizer/d"
    lines = [*CHAIN[:2], op("u", "Neg", "b", name="t/use")]
    found, view = build(
        lines,
        "u",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node(c, "AddN", REWRITE, d),
            node(d, "AddN", c),
            node("t/use", "Neg", d),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


SPLIT_NODE = [
    op("m", "Mul", "x", "y", name="t/n"),
    op("o", "AddV2", "m", "x", name="t/n"),  # t/n's AddV2 kernel: this op, not the Mul
]


def test_a_split_consumer_reads_the_rewrite_through_its_op_of_the_kernels_type() -> None:
    """t/n ran as an AddV2 reading the rewrite as its first input: its AddV2 op's first operand
    leads to s/add, whereas its Mul reads only arguments."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("m", "Mul", "x", "y", name="t/n"),
        op("o", "AddV2", "a", "m", name="t/n"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, view = build(
        lines, "o", [node(rewrite, "AddN", "x", "y"), node("t/n", "AddV2", rewrite, "x")]
    )
    assert names(view, found.members_of(rewrite)) == ["s/add"]


def test_a_split_producer_stands_for_its_op_of_the_kernels_type() -> None:
    """The rewrite sums t/n (an AddV2 kernel) and z, as s/add sums t/n's AddV2 op and z."""
    lines = [
        *SPLIT_NODE,
        op("a", "AddV2", "o", "z", name="s/add"),
        op("c", "Relu", "a", name="s/relu"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, view = build(
        lines,
        "c",
        [
            node("t/n", "AddV2", "x", "y"),
            node(rewrite, "AddN", "t/n", "z"),
            node("s/relu", "Relu", rewrite),
        ],
    )
    assert names(view, found.members_of(rewrite)) == ["s/add"]


def test_a_rewrite_consumer_without_readers_does_not_drop_the_others() -> None:
    """REWRITE feeds s/relu, then `idle` (a rewrite nothing reads): s/relu still decides."""
    found, view = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("s/relu", "Relu", REWRITE),
            node("s/ArithmeticOptimizer/idle", "AddN", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_leaf_is_searched_behind_the_op_its_root_rewrite_replaced() -> None:
    """The leaf feeds REWRITE, which replaced s/add_1: the leaf's op is searched behind
    s/add_1 (s/add), not behind every operand of REWRITE's fused consumer, where t/add sums
    the same arguments."""
    leaf = "s/ArithmeticOptimizer/AddOpsRewrite_Leaf_0_add_1"
    lines = [
        *CHAIN[:2],
        op("t", "AddV2", "x", "y", name="t/add"),
        op("o", "Mul", "b", "t", name="t/out"),
    ]
    found, view = build(
        lines,
        "o",
        [
            node(leaf, "AddN", "x", "y"),
            node(REWRITE, "AddN", leaf, "z"),
            node("t/out", "_MklFusedMul", REWRITE),
        ],
    )
    assert names(view, found.members_of(leaf)) == ["s/add"]
    assert names(view, found.members_of(REWRITE)) == ["s/add_1"]


@pytest.mark.parametrize(("depth", "found"), [(MAX_MEMBERS - 1, True), (MAX_MEMBERS, False)])
def test_a_search_through_ops_of_other_leaves_gives_up_after_max_members(
    depth: int, found: bool
) -> None:
    """Every op between the reader and s/add also multiplies by t/w (which ran), so none has
    the rewrite's leaves and the search visits each: s/add is found at depth 255, not 256."""
    lines = [op("w", "Mul", "x", "y", name="t/w"), op("p0", "AddV2", "x", "y", name="s/add")]
    lines += [op(f"p{i}", "Mul", f"p{i - 1}", "w", name=f"t/mul_{i}") for i in range(1, depth)]
    lines.append(op("o", "Relu", f"p{depth - 1}", name="c/use"))
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    membership, view = build(
        lines,
        "o",
        [
            node("t/w", "Mul", "x", "y"),
            node(rewrite, "AddN", "x", "y"),
            node("c/use", "Relu", rewrite),
        ],
    )
    expected = ["s/add"] if found else []
    assert names(view, membership.members_of(rewrite)) == expected


def test_a_reader_input_the_op_lacks_searches_every_operand() -> None:
    """s/relu ran with the rewrite as its second input, but its IR op has one operand: there is
    no second operand to search behind, so every operand is."""
    found, view = build(
        CHAIN,
        "c",
        [node(REWRITE, "AddN", "x", "y", "z"), node("s/relu", "Relu", "x", REWRITE)],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_the_root_search_skips_a_folded_op_with_the_same_leaves() -> None:
    """s/scale (-x) was folded into a constant: it ran as nothing, so though it computes from
    x alone as the rewrite (x + a constant) does, s/add is the one candidate."""
    lines = [
        const("k", "s/k"),
        op("f", "Neg", "x", name="s/scale"),
        op("a", "AddV2", "x", "k", name="s/add"),
        op("o", "Mul", "f", "a", name="t/out"),
    ]
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    found, view = build(
        lines,
        "o",
        [
            node("w", "Const"),
            node(rewrite, "AddN", "x", "w"),
            node("t/out", "_MklFusedMul", rewrite),
        ],
        folded=("s/scale",),
    )
    assert names(view, found.members_of(rewrite)) == ["s/add"]


def test_a_rewrite_grows_over_its_ops_before_a_fused_family_rule_takes_one() -> None:
    """REWRITE replaced s/add, whose input g/bias_grad feeds nothing else: the rewrite ran it.
    The backprop filter's family rule would take that BiasAddGrad as a sibling, but rewrites
    are resolved first, whatever the graph's or the names' order."""
    lines = [
        op("g", "Mul", "x", "y", name="g/grad"),
        const("k", "g/sizes"),
        op("f", "Conv2DBackpropFilter", "z", "k", "g", name="g/filter_grad"),
        op("b", "BiasAddGrad", "g", name="g/bias_grad"),
        op("a", "AddV2", "b", "x", name="s/add"),
        op("o", "AddV2", "f", "a", name="g/out"),
    ]
    found, view = build(
        lines,
        "o",
        [
            node("g/grad", "Mul", "x", "y"),
            node("g/filter_grad", "_MklConv2DBackpropFilterWithBias", "z", "g/sizes", "g/grad"),
            node(REWRITE, "AddN", "g/grad", "x"),
            node("g/out", "AddV2", "g/filter_grad", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add", "g/bias_grad"]
    assert names(view, found.members_of("g/filter_grad")) == ["g/filter_grad"]

"""Which IR ops each executed TF node ran (`Membership`), rule by rule, on hand-made graphs.

test_tf_fusion.py checks fused-group attribution on a real capture and one rewrite; these pin
each rule of the walk: which ops count as present (own nodes, folded constants), which op a
node name stands for when several ops share it, when a node runs more than its op, how far a
fused node grows, what a grappler rewrite claims (and in which order rewrites and fused nodes
claim), the fused-kernel family rules, the walk's bounds, and how the recorded graph is read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.frameworks.tf.fusion import MAX_MEMBERS, ExecutedGraph, ExecutedNode, Membership
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.context import make_context

NEEDS_FRAMEWORK = False  # shipped fixtures and MLIR only: tests/frameworks/conftest.py

T = "tensor<4xf32>"
RESIDUAL = Path(__file__).parents[2] / "fixtures" / "tf" / "residual"


def op(result: str, kind: str, *operands: str, name: str) -> str:
    """One generic `tf.<kind>` op named `name`, every value a tensor<4xf32>."""
    values = ", ".join(f"%{o}" for o in operands)
    types = ", ".join([T] * len(operands))
    return f'%{result} = "tf.{kind}"({values}) : ({types}) -> {T} loc("{name}")'


def const(result: str, name: str) -> str:
    return f'%{result} = "tf.Const"() {{value = dense<2.0> : {T}}} : () -> {T} loc("{name}")'


def module(lines: list[str], result: str) -> str:
    """`@f(%x, %y, %z)` running `lines` and returning `%result`."""
    body = "\n  ".join(lines)
    return (
        f"func.func @f(%x: {T}, %y: {T}, %z: {T}) -> {T} {{\n  {body}\n  return %{result} : {T}\n}}"
    )


# s/add -> s/add_1 -> s/relu, the chain most tests run over.
CHAIN = [
    op("a", "AddV2", "x", "y", name="s/add"),
    op("b", "AddV2", "a", "z", name="s/add_1"),
    op("c", "Relu", "b", name="s/relu"),
]


def node(name: str, kind: str, *inputs: str, fused: tuple[str, ...] = ()) -> ExecutedNode:
    return ExecutedNode(name, kind, fused, tuple(inputs))


def build(
    lines: list[str], result: str, nodes: list[ExecutedNode], folded: tuple[str, ...] = ()
) -> tuple[Membership, TfOpIndex]:
    """Membership of `nodes` (in this order) over the module of `lines`."""
    graph = ExecutedGraph({n.name: n for n in nodes}, "test", folded=set(folded))
    for item in nodes:
        for producer in item.inputs:
            graph.consumers[producer].append(item.name)
    view = TfOpIndex.of(ir.Module.parse(module(lines, result), make_context()))
    return Membership.build(view, graph), view


def names(view: TfOpIndex, positions: list[int]) -> list[str | None]:
    return [view.infos[p].keys.name for p in positions]


def at(view: TfOpIndex, name: str) -> int:
    """Position of the only op named `name`."""
    (position,) = view.by_name[name]
    return position


# Present ops: the ones nodes name, and the ones constant folding replaced.


def test_present_ops_are_the_nodes_ops_and_the_folded_ones() -> None:
    """An op is present when a node names it or when constant folding replaced its node (the
    IR name's `@function` suffix aside); a fused consumer does not absorb a folded op."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/scale"),
        op("b", "Neg", "z", name="s/bias@body"),
        op("c", "Mul", "a", "b", name="s/out"),
        op("d", "Relu", "c", name="s/relu"),
    ]
    found, view = build(
        lines,
        "d",
        [node("s/relu", "Relu", "s/out", fused=("Mul",))],
        folded=("s/scale", "s/bias"),
    )
    assert found.present == {at(view, "s/relu"), at(view, "s/scale"), at(view, "s/bias@body")}
    assert names(view, found.members_of("s/relu")) == ["s/relu", "s/out"]
    assert found.absorbed_by == {at(view, "s/out"): "s/relu"}


def test_absorbed_ops_name_their_fused_node_and_present_ones_are_not_listed() -> None:
    """Every absent op a fused node ran maps to that node; the node's own op and an op that
    ran as its own node are not in `absorbed_by`."""
    lines = [
        *CHAIN,
        op("d", "Mul", "x", "y", name="t/mul"),
        op("e", "AddV2", "c", "d", name="t/out"),
    ]
    found, view = build(
        lines,
        "e",
        [
            node("t/out", "_FusedThing", "x", "y", "z", "t/mul", fused=("Relu",)),
            node("t/mul", "Mul", "x", "y"),
        ],
    )
    assert names(view, found.members_of("t/out")) == ["t/out", "s/relu", "s/add_1", "s/add"]
    assert found.absorbed_by == {
        at(view, "s/relu"): "t/out",
        at(view, "s/add_1"): "t/out",
        at(view, "s/add"): "t/out",
    }


# Names outside the executed graph.


def test_a_name_only_the_ir_knows_stands_for_its_op_alone() -> None:
    """Asked about an IR op's name that is no node of the graph, the membership answers with
    that op only: nothing says what else ran with it."""
    found, view = build(CHAIN, "c", [node("s/relu", "Relu", "s/add_1")])
    assert found.members_of("s/add_1") == [at(view, "s/add_1")]


def test_a_name_neither_graph_nor_ir_knows_ran_nothing() -> None:
    found, _ = build(CHAIN, "c", [node("s/relu", "Relu", "s/add_1")])
    assert found.members_of("s/nowhere") == []


@pytest.mark.parametrize("kind", ["_Arg", "_Retval", "Const", "HostConst"])
def test_arguments_results_and_constants_without_an_op_claim_nothing(kind: str) -> None:
    """A node with no IR op that is a function argument, result or constant replaced no op,
    even when it sits in the scope of absent ops its consumer reads."""
    found, _ = build(CHAIN, "c", [node("s/input", kind), node("s/relu", "Relu", "s/input")])
    assert found.members_of("s/input") == []
    assert found.absorbed_by == {}


# The op a node name stands for.

SPLIT = [
    const("k", "s/div"),
    op("m", "Mul", "x", "k", name="s/div"),  # tf-standard's RealDiv by a constant
    op("n", "Mul", "m", "y", name="s/n"),
    op("o", "AddV2", "n", "z", name="s/n"),
]


def test_a_split_node_stands_for_its_first_op_that_is_not_a_constant() -> None:
    """`s/div` ran as a RealDiv the IR holds as a Const and a Mul: it stands for the Mul, and
    the constant is not absorbed."""
    found, view = build(SPLIT, "o", [node("s/div", "RealDiv", "x")])
    assert found.members_of("s/div") == [view.by_name["s/div"][1]]
    assert found.absorbed_by == {}


def test_a_split_node_stands_for_its_op_of_the_kernels_type() -> None:
    """Of two ops sharing a name, the one of the kernel's type (prefixes aside) is the node's
    op, wherever it comes; without a kernel to go by, the first computing op is."""
    found, view = build(SPLIT, "o", [node("s/n", "_MklAddV2", "s/div", "z")])
    mul, add = view.by_name["s/n"]
    assert found.members_of("s/n") == [add]
    found, view = build(SPLIT, "o", [])
    assert found.members_of("s/n") == [mul]


# When a node runs more than its op.


@pytest.mark.parametrize(
    ("kind", "fused", "members"),
    [
        ("Relu", (), ["s/relu"]),
        ("_MklRelu", (), ["s/relu"]),  # a oneDNN kernel of the op's own type
        ("Relu", ("AddV2",), ["s/relu", "s/add_1", "s/add"]),  # fuses other ops
        ("_MklFusedAddRelu", (), ["s/relu", "s/add_1", "s/add"]),  # another type
        ("Const", (), ["s/relu"]),  # folded to a constant
        ("HostConst", (), ["s/relu"]),
        ("NoOp", (), ["s/relu"]),  # a lowered If/While's anchor
    ],
)
def test_a_node_runs_more_than_its_op_when_its_kernel_differs_or_fuses(
    kind: str, fused: tuple[str, ...], members: list[str]
) -> None:
    found, view = build(CHAIN, "c", [node("s/relu", kind, "x", "y", "z", fused=fused)])
    assert names(view, found.members_of("s/relu")) == members


# How far a fused node grows.


def test_a_fused_node_does_not_absorb_a_value_another_op_reads() -> None:
    """s/add also feeds t/neg, so its value was materialised: s/relu's kernel stops at s/add_1."""
    lines = [*CHAIN, op("d", "Neg", "a", name="t/neg"), op("e", "AddV2", "c", "d", name="t/out")]
    found, view = build(
        lines,
        "e",
        [node("s/relu", "Relu", "x", "y", "z", fused=("AddV2",)), node("t/neg", "Neg", "x")],
    )
    assert names(view, found.members_of("s/relu")) == ["s/relu", "s/add_1"]
    assert at(view, "s/add") not in found.absorbed_by


def test_a_fused_node_grows_to_a_fixpoint() -> None:
    """s/p feeds both s/out and s/q: it joins once s/q has joined, on a later pass."""
    lines = [
        op("p", "AddV2", "x", "y", name="s/p"),
        op("q", "Neg", "p", name="s/q"),
        op("o", "Mul", "p", "q", name="s/out"),
    ]
    found, view = build(lines, "o", [node("s/out", "Mul", "x", "y", fused=("Neg", "AddV2"))])
    assert names(view, found.members_of("s/out")) == ["s/out", "s/q", "s/p"]


def test_a_fused_node_looks_past_an_argument_operand() -> None:
    """The first operand is a function argument; the second is still absorbed."""
    lines = [op("a", "Neg", "y", name="s/neg"), op("o", "Mul", "x", "a", name="s/out")]
    found, view = build(lines, "o", [node("s/out", "Mul", "x", "y", fused=("Neg",))])
    assert names(view, found.members_of("s/out")) == ["s/out", "s/neg"]


def test_a_fused_walk_stops_at_max_members() -> None:
    """A chain longer than MAX_MEMBERS (256) absent ops: the walk keeps the first 256."""
    length = MAX_MEMBERS + 20
    lines = [op("p0", "Neg", "x", name=f"s/neg_{length}")]
    lines += [op(f"p{i}", "Neg", f"p{i - 1}", name=f"s/neg_{length - i}") for i in range(1, length)]
    lines.append(op("o", "Relu", f"p{length - 1}", name="s/out"))
    found, view = build(lines, "o", [node("s/out", "Relu", "x", fused=("Neg",))])
    members = names(view, found.members_of("s/out"))
    assert members == ["s/out"] + [f"s/neg_{i}" for i in range(1, MAX_MEMBERS)]


# Fused-kernel family rules.

BACKPROP = [
    op("g", "Mul", "x", "y", name="g/grad"),
    const("k", "g/sizes"),
    op("f", "Conv2DBackpropFilter", "z", "k", "g", name="g/filter_grad"),
    op("b", "BiasAddGrad", "g", name="g/bias_grad"),
    op("o", "AddV2", "f", "b", name="g/out"),
]


def test_a_backprop_filter_with_bias_also_ran_the_bias_gradient() -> None:
    """`_MklConv2DBackpropFilterWithBias` sums the bias gradient from the same output gradient:
    the sibling BiasAddGrad is its member though it is no producer of the named op."""
    nodes = [
        node("g/grad", "Mul", "x", "y"),
        node("g/filter_grad", "_MklConv2DBackpropFilterWithBias", "z", "g/sizes", "g/grad"),
        node("g/out", "AddV2", "g/filter_grad", "g/bias_grad"),
    ]
    found, view = build(BACKPROP, "o", nodes)
    assert names(view, found.members_of("g/filter_grad")) == ["g/filter_grad", "g/bias_grad"]
    assert found.absorbed_by == {at(view, "g/bias_grad"): "g/filter_grad"}


def test_a_bias_gradient_that_ran_by_itself_is_no_sibling_member() -> None:
    nodes = [
        node("g/grad", "Mul", "x", "y"),
        node("g/filter_grad", "_MklConv2DBackpropFilterWithBias", "z", "g/sizes", "g/grad"),
        node("g/bias_grad", "BiasAddGrad", "g/grad"),
    ]
    found, view = build(BACKPROP, "o", nodes)
    assert names(view, found.members_of("g/filter_grad")) == ["g/filter_grad"]


def test_a_fused_conv_lists_its_chain_once() -> None:
    """The FusedConv2D rule finds Conv2D, BiasAdd, Relu: all already grown, none twice."""
    lines = [
        op("c", "Conv2D", "x", "y", name="m/conv"),
        op("b", "BiasAdd", "c", "z", name="m/bias"),
        op("r", "Relu", "b", name="m/relu"),
    ]
    found, view = build(
        lines,
        "r",
        [node("m/relu", "_MklNativeFusedConv2D", "x", "y", "z", fused=("BiasAdd", "Relu"))],
    )
    assert names(view, found.members_of("m/relu")) == ["m/relu", "m/bias", "m/conv"]


# Grappler rewrites.

REWRITE = "s/ArithmeticOptimizer/AddOpsRewrite_add_1"


def test_rewrites_claim_their_ops_before_a_fused_consumer_grows() -> None:
    """The fused head/relu reads the rewrite node, not the adds it replaced: they go to the
    rewrite even though head/relu comes first, in the graph and in name order."""
    lines = [*CHAIN[:2], op("c", "Relu", "b", name="head/relu")]
    found, view = build(
        lines,
        "c",
        [node("head/relu", "_MklFusedAddRelu", REWRITE), node(REWRITE, "AddN", "x", "y", "z")],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]
    assert names(view, found.members_of("head/relu")) == ["head/relu"]
    assert found.absorbed_by == {at(view, "s/add_1"): REWRITE, at(view, "s/add"): REWRITE}


def test_a_rewrite_nothing_reads_claims_nothing() -> None:
    found, _ = build(CHAIN, "c", [node(REWRITE, "AddN", "x", "y", "z")])
    assert found.members_of(REWRITE) == []


def test_a_leaf_rewrite_shares_the_ops_of_the_rewrite_it_feeds() -> None:
    """The leaves of an AddOpsRewrite tree feed the tree's root rewrite: a leaf summing values
    no IR op adds together (p + r, where the IR adds p + q first) replaced the same adds."""
    leaf = "s/ArithmeticOptimizer/AddOpsRewrite_Leaf_0_add_1"
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
            node(REWRITE, "AddN", leaf, "q/neg"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(leaf)) == ["s/add_1", "s/add"]
    assert found.members_of(REWRITE) == found.members_of(leaf)


def test_a_leaf_rewrite_computing_an_original_add_takes_that_add() -> None:
    """A leaf summing exactly what s/add sums computed s/add's value; the root took s/add_1."""
    leaf = "s/ArithmeticOptimizer/AddOpsRewrite_Leaf_0_add_1"
    found, view = build(
        CHAIN,
        "c",
        [
            node(leaf, "AddN", "x", "y"),
            node(REWRITE, "AddN", leaf, "z"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(leaf)) == ["s/add"]
    assert names(view, found.members_of(REWRITE)) == ["s/add_1"]


def test_a_rewrite_also_returned_is_resolved_from_its_other_consumer() -> None:
    """A `_Retval` consumer without an op says nothing; the next consumer still does."""
    found, view = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("retval_0", "_Retval", REWRITE),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_rewrite_root_is_found_past_an_argument_operand() -> None:
    lines = [*CHAIN[:2], op("c", "Mul", "x", "b", name="s/scale")]
    found, view = build(
        lines, "c", [node(REWRITE, "AddN", "x", "y", "z"), node("s/scale", "Mul", "x", REWRITE)]
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_rewrite_does_not_reach_past_an_op_that_ran_as_a_node() -> None:
    """s/relu reads the rewrite, but in the IR it reads s/add_1, which ran by itself: the
    search stops there and does not take s/add behind it."""
    found, _ = build(
        CHAIN,
        "c",
        [
            node(REWRITE, "AddN", "x", "y", "z"),
            node("s/add_1", "AddV2", "x", "y"),
            node("s/relu", "Relu", REWRITE),
        ],
    )
    assert found.members_of(REWRITE) == []


def test_a_rewrite_root_is_found_through_ops_a_fused_consumer_ran() -> None:
    """t/out's kernel ran t/relu (outside the rewrite's scope) too: the search looks through
    it to s/add_1; the fused node keeps t/relu and not the rewrite's adds."""
    lines = [
        *CHAIN[:2],
        op("m", "Relu", "b", name="t/relu"),
        op("o", "Mul", "m", "x", name="t/out"),
    ]
    found, view = build(
        lines,
        "o",
        [node("t/out", "_MklFusedMul", REWRITE, "x"), node(REWRITE, "AddN", "x", "y", "z")],
    )
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]
    assert names(view, found.members_of("t/out")) == ["t/out", "t/relu"]


def test_two_consumers_reaching_one_root_agree() -> None:
    """s/relu and s/neg both read s/add_1: one root, not an ambiguity."""
    lines = [*CHAIN, op("d", "Neg", "b", name="s/neg"), op("e", "AddV2", "c", "d", name="s/out")]
    nodes = [
        node(REWRITE, "AddN", "x", "y", "z"),
        node("s/relu", "Relu", REWRITE),
        node("s/neg", "Neg", REWRITE),
        node("s/out", "AddV2", "s/relu", "s/neg"),
    ]
    found, view = build(lines, "e", nodes)
    assert names(view, found.members_of(REWRITE)) == ["s/add_1", "s/add"]


def test_a_consumer_reading_two_absent_ops_is_ambiguous() -> None:
    """s/out reads two absent adds of the rewrite's scope: better no claim than a guess."""
    lines = [
        op("a", "AddV2", "x", "y", name="s/add"),
        op("b", "AddV2", "y", "z", name="s/add_1"),
        op("o", "Mul", "a", "b", name="s/out"),
    ]
    found, _ = build(
        lines, "o", [node(REWRITE, "AddN", "x", "y", "z"), node("s/out", "Mul", REWRITE)]
    )
    assert found.members_of(REWRITE) == []


COMPOSITION = "g/exp/unary_ops_composition"


def gelu_gradient(extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """A Keras GELU gradient's chain: Square (ran), Neg and Exp (composed), and a product the
    IR computes as `g/mul_1 = (y * z) * exp` where grappler's `g/mul` reads the composition."""
    return [
        op("s", "Square", "x", name="g/sq"),
        op("n", "Neg", "s", name="g/neg"),
        op("e", "Exp", "n", name="g/exp"),
        *extra,
        op("m", "Mul", "y", "z", name="g/mul"),
        op("o", "Mul", "m", "e", name="g/mul_1"),
    ]


def composed(fused: tuple[str, ...], extra: list[str] = ()) -> list[str | None]:  # type: ignore[assignment]
    lines = gelu_gradient(extra)
    membership, view = build(
        lines,
        "o",
        [
            node("g/sq", "Square", "x"),
            node(COMPOSITION, "_UnaryOpsComposition", "g/sq", fused=fused),
            node("g/mul", "Mul", COMPOSITION, "y"),
            node("g/mul_1", "Mul", "g/mul", "z"),
        ],
    )
    return names(view, membership.members_of(COMPOSITION))


def test_a_composition_no_reader_leads_to_takes_the_one_chain_computing_from_its_input() -> None:
    """The executed `g/mul` reads the composition; the IR's `g/mul` reads y and z: the ops are
    the absent chain computing from the composition's input, top first."""
    assert composed(("Neg", "Exp")) == ["g/exp", "g/neg"]
    # Without the ops it composes (a capture that did not record `op_names`), or for any other
    # rewrite, nothing but the readers tells which ops a node replaced.
    assert composed(()) == []


def test_a_composition_whose_op_names_differ_from_the_chain_claims_nothing() -> None:
    assert composed(("Exp", "Neg")) == []
    assert composed(("Neg",)) == []  # the chain's top is an Exp: not a lone Neg
    assert composed(("Square", "Neg", "Exp")) == []  # the Square ran as its own node


def test_only_a_chain_of_the_composed_types_is_taken_and_two_are_ambiguous() -> None:
    """An absent Erf also computes from the Square alone: not a Neg, Exp chain, so the claim
    stands; a second Neg, Exp chain from the same Square makes it ambiguous: no claim."""
    erf = [op("r", "Erf", "s", name="g/erf"), op("q", "Mul", "r", "x", name="g/erf_use")]
    assert composed(("Neg", "Exp"), erf) == ["g/exp", "g/neg"]
    twin = [
        op("n2", "Neg", "s", name="h/neg"),
        op("e2", "Exp", "n2", name="h/exp"),
        op("q", "Mul", "e2", "x", name="h/use"),
    ]
    assert composed(("Neg", "Exp"), twin) == []


def test_a_composition_of_constants_only_claims_nothing() -> None:
    """Its input is a constant, so its leaves are empty: every absent op computing from
    constants alone has them too, and a chain of the right types proves nothing."""
    lines = [
        const("k", "g/k"),
        op("n", "Neg", "k", name="g/neg"),
        op("e", "Exp", "n", name="g/exp"),
        op("m", "Mul", "y", "z", name="g/mul"),
        op("o", "Mul", "m", "e", name="g/mul_1"),
    ]
    membership, _ = build(
        lines,
        "o",
        [
            node("g/k", "Const"),
            node(COMPOSITION, "_UnaryOpsComposition", "g/k", fused=("Neg", "Exp")),
            node("g/mul", "Mul", COMPOSITION, "y"),
            node("g/mul_1", "Mul", "g/mul", "z"),
        ],
    )
    assert membership.members_of(COMPOSITION) == []


@pytest.mark.parametrize(("depth", "found"), [(MAX_MEMBERS - 1, True), (MAX_MEMBERS, False)])
def test_a_rewrite_root_search_gives_up_after_max_members(depth: int, found: bool) -> None:
    """The root lies `depth` ops behind the consumer, through absent ops of another scope:
    found at 255, not at 256."""
    lines = [op("p0", "AddV2", "x", "y", name="s/add")]
    lines += [op(f"p{i}", "Neg", f"p{i - 1}", name=f"t/neg_{i}") for i in range(1, depth)]
    lines.append(op("o", "Relu", f"p{depth - 1}", name="c/use"))
    rewrite = "s/ArithmeticOptimizer/AddOpsRewrite_add"
    membership, view = build(
        lines, "o", [node(rewrite, "AddN", "x", "y"), node("c/use", "Relu", rewrite)]
    )
    expected = ["s/add"] if found else []
    assert names(view, membership.members_of(rewrite)) == expected


# The recorded graph, read from a bundle.


def _bundle(tmp_path: Path, graph: object | None) -> RunBundle:
    """A copy of a real TF bundle whose runtime graph `graph.json` holds `graph` (None: the
    manifest names it but the file is missing)."""
    folder = tmp_path / "run"
    shutil.copytree(RESIDUAL, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / manifest["options"]["runtime_graph"]).unlink()
    manifest["options"]["runtime_graph"] = "graph.json"
    if graph is not None:
        (folder / "graph.json").write_text(json.dumps(graph))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return RunBundle(folder)


def test_a_folded_node_name_keeps_its_hyphens(tmp_path: Path) -> None:
    """`ConstantFolding/<node>-<suffix>-<n>` folded `<node>`, hyphens in `<node>` included."""
    graph = {"nodes": {"ConstantFolding/m/a-b-folded-1": {"op": "Const"}}}
    read = ExecutedGraph.of_bundle(_bundle(tmp_path, graph))
    assert read is not None and read.folded == {"m/a-b"}


def test_a_control_input_loses_only_its_caret(tmp_path: Path) -> None:
    graph = {"nodes": {"Xla/a": {"op": "Const"}, "b": {"op": "Neg", "inputs": ["^Xla/a"]}}}
    read = ExecutedGraph.of_bundle(_bundle(tmp_path, graph))
    assert read is not None
    assert read.nodes["b"].inputs == ("Xla/a",) and dict(read.consumers) == {"Xla/a": ["b"]}


def test_a_missing_runtime_graph_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"graph\.json: runtime graph named by manifest"):
        ExecutedGraph.of_bundle(_bundle(tmp_path, None))

"""A region of several ORT kernels is split into one piece per kernel where ORT's names anchor
each kernel on one source node, and left whole where they do not (graphs built here; the
expected pieces worked out by hand from each graph)."""

from __future__ import annotations

from irprof.frameworks.onnx.anchors import anchor_names, anchor_of
from irprof.frameworks.onnx.graph import Graph, GraphNode, OnnxGraphs, runtime_regions


def node(name: str, op: str, inputs: list[str], outputs: list[str]) -> GraphNode:
    return GraphNode(name, op, "", tuple(inputs), tuple(outputs))


def graphs(source: list[GraphNode], optimized: list[GraphNode]) -> OnnxGraphs:
    weights = ("w1", "w2", "w3", "w4")
    packed = ("p1", "p2", "p3", "p4")
    return OnnxGraphs(
        Graph("source", tuple(source), ("x",), weights, ("y",)),
        Graph("optimized", tuple(optimized), ("x",), packed, ("y",)),
    )


def pieces(model: OnnxGraphs) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    return {(region.nodes, region.members) for region in runtime_regions(model).values()}


TWO_CONVS = [
    node("conv1", "Conv", ["x", "w1"], ["c1"]),
    node("relu1", "Relu", ["c1"], ["r1"]),
    node("conv2", "Conv", ["r1", "w2"], ["c2"]),
    node("relu2", "Relu", ["c2"], ["y"]),
]


def test_an_nchwc_chain_gives_each_convolution_its_own_kernel() -> None:
    # The NCHWc transformer names a kernel after the output it replaces, plus "_nchwc".
    model = graphs(
        TWO_CONVS,
        [
            node("ReorderInput", "ReorderInput", ["x"], ["t0"]),
            node("r1_nchwc", "Conv", ["t0", "p1"], ["t1"]),
            node("y_nchwc", "Conv", ["t1", "p2"], ["t2"]),
            node("ReorderOutput", "ReorderOutput", ["t2"], ["y"]),
        ],
    )
    assert pieces(model) == {
        (("ReorderInput", "r1_nchwc"), ("conv1", "relu1")),
        (("y_nchwc", "ReorderOutput"), ("conv2", "relu2")),
    }


def test_a_layout_node_between_two_kernels_keeps_the_region_whole() -> None:
    model = graphs(
        TWO_CONVS,
        [
            node("r1_nchwc", "Conv", ["x", "p1"], ["t1"]),
            node("Transpose", "Transpose", ["t1"], ["t2"]),  # reaches both anchored kernels
            node("y_nchwc", "Conv", ["t2", "p2"], ["y"]),
        ],
    )
    assert pieces(model) == {
        (("r1_nchwc", "Transpose", "y_nchwc"), ("conv1", "relu1", "conv2", "relu2"))
    }


def test_a_residual_add_two_kernels_reach_goes_to_the_convolution_it_was_fused_into() -> None:
    # a feeds convB and addB; b only addB (ORT fuses addB into convB's kernel as its Sum input);
    # s feeds convC and addC; addC's u feeds convD. The walks back from c and from y both pass
    # addB; b's only reader is addB, so it is convB's. addC, reached from y alone, stays there.
    source = [
        node("convA", "Conv", ["x", "w1"], ["a"]),
        node("convB", "Conv", ["a", "w2"], ["b"]),
        node("addB", "Add", ["a", "b"], ["s"]),
        node("convC", "Conv", ["s", "w3"], ["c"]),
        node("addC", "Add", ["s", "c"], ["u"]),
        node("convD", "Conv", ["u", "w4"], ["y"]),
    ]
    optimized = [
        node("a_nchwc", "Conv", ["x", "p1"], ["t1"]),
        node("b_nchwc", "Conv", ["t1", "p2", "", "t1"], ["t2"]),
        node("c_nchwc", "Conv", ["t2", "p3", "", "t2"], ["t3"]),
        node("y_nchwc", "Conv", ["t3", "p4"], ["y"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("a_nchwc",), ("convA",)),
        (("b_nchwc",), ("convB", "addB")),
        (("c_nchwc",), ("convC",)),
        (("y_nchwc",), ("addC", "convD")),
    }


def test_a_residual_add_of_two_convolutions_and_its_relu_go_to_the_kernel_reading_the_other() -> (
    None
):
    # A downsampling residual block: b = convB(a) and d = down(a) are added, then a Relu; ORT
    # fuses both into convB's kernel, which reads down's kernel output as its Sum input. The
    # walks from c and from y both pass add and relu; both follow b and d, and b's kernel
    # reads d's. add2, reached from y alone, stays with y.
    source = [
        node("convA", "Conv", ["x", "w1"], ["a"]),
        node("convB", "Conv", ["a", "w2"], ["b"]),
        node("down", "Conv", ["a", "w3"], ["d"]),
        node("add", "Add", ["b", "d"], ["s"]),
        node("relu", "Relu", ["s"], ["r"]),
        node("convC", "Conv", ["r", "w4"], ["c"]),
        node("add2", "Add", ["r", "c"], ["u"]),
        node("convD", "Conv", ["u", "w1"], ["y"]),
    ]
    optimized = [
        node("a_nchwc", "Conv", ["x", "p1"], ["t1"]),
        node("d_nchwc", "Conv", ["t1", "p3"], ["t2"]),
        node("b_nchwc", "Conv", ["t1", "p2", "", "t2"], ["t3"]),
        node("c_nchwc", "Conv", ["t3", "p4", "", "t3"], ["t4"]),
        node("y_nchwc", "Conv", ["t4", "p1"], ["y"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("a_nchwc",), ("convA",)),
        (("d_nchwc",), ("down",)),
        (("b_nchwc",), ("convB", "add", "relu")),
        (("c_nchwc",), ("convC",)),
        (("y_nchwc",), ("add2", "convD")),
    }


def test_a_last_residual_add_before_a_pooling_kernel_is_the_convolutions_not_the_poolings() -> None:
    # Only the pooling's walk reaches add and relu; they join b and d, and b's kernel reads d's.
    source = [
        node("convA", "Conv", ["x", "w1"], ["a"]),
        node("convB", "Conv", ["a", "w2"], ["b"]),
        node("down", "Conv", ["a", "w3"], ["d"]),
        node("add", "Add", ["b", "d"], ["s"]),
        node("relu", "Relu", ["s"], ["r"]),
        node("pool", "GlobalAveragePool", ["r"], ["y"]),
    ]
    optimized = [
        node("a_nchwc", "Conv", ["x", "p1"], ["t1"]),
        node("d_nchwc", "Conv", ["t1", "p3"], ["t2"]),
        node("b_nchwc", "Conv", ["t1", "p2", "", "t2"], ["t3"]),
        node("y_nchwc", "GlobalAveragePool", ["t3"], ["t4"]),
        node("ReorderOutput", "ReorderOutput", ["t4"], ["y"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("a_nchwc",), ("convA",)),
        (("d_nchwc",), ("down",)),
        (("b_nchwc",), ("convB", "add", "relu")),
        (("y_nchwc", "ReorderOutput"), ("pool",)),
    }


def test_a_join_of_kernels_neither_of_which_reads_the_other_stays_where_the_walk_put_it() -> None:
    # b and d both feed add only, but no kernel has the other's output as an extra input: ORT
    # did not fuse the add into either, so the later kernel's walk keeps it.
    source = [
        node("convB", "Conv", ["x", "w2"], ["b"]),
        node("down", "Conv", ["x", "w3"], ["d"]),
        node("add", "Add", ["b", "d"], ["s"]),
        node("convC", "Conv", ["s", "w4"], ["y"]),
    ]
    optimized = [
        node("b_nchwc", "Conv", ["x", "p2"], ["t1"]),
        node("d_nchwc", "Conv", ["x", "p3"], ["t2"]),
        node("y_nchwc", "Conv", ["t1", "p4", "", "t2"], ["y"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("b_nchwc",), ("convB",)),
        (("d_nchwc",), ("down",)),
        (("y_nchwc",), ("add", "convC")),
    }


def test_nchwc_reorders_between_two_kernels_join_the_convolution_they_convert_for() -> None:
    # An activation kernel, a convolution in NCHWc, an activation kernel: the ReorderInput
    # lays its input out for the convolution, the ReorderOutput lays its result back out.
    source = [
        node("act", "Mul", ["x", "x"], ["a"]),
        node("conv", "Conv", ["a", "w1"], ["c"]),
        node("act2", "Mul", ["c", "c"], ["y"]),
    ]
    optimized = [
        node("act", "Mul", ["x", "x"], ["t0"]),
        node("ReorderInput", "ReorderInput", ["t0"], ["t1"]),
        node("c_nchwc", "Conv", ["t1", "p1"], ["t2"]),
        node("ReorderOutput", "ReorderOutput", ["t2"], ["t3"]),
        node("act2", "Mul", ["t3", "t3"], ["y"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("act",), ("act",)),
        (("ReorderInput", "c_nchwc", "ReorderOutput"), ("conv",)),
        (("act2",), ("act2",)),
    }


def test_a_removed_transpose_two_kernels_read_goes_to_the_first_of_them() -> None:
    # tf2onnx's layout Transpose, which ORT optimized away: add and mul both read it, and the
    # convolution's output has another reader, so no kernel follows into it. It has no work.
    source = [
        node("conv", "Conv", ["x", "w1"], ["c"]),
        node("tr", "Transpose", ["c"], ["t"]),
        node("add", "Add", ["t", "w2"], ["s"]),
        node("mul", "Mul", ["t", "s"], ["y"]),
        node("side", "Relu", ["c"], ["z"]),
    ]
    optimized = [
        node("conv", "Conv", ["x", "w1"], ["k1"]),
        node("add", "Add", ["k1", "w2"], ["k2"]),
        node("mul", "Mul", ["k1", "k2"], ["y"]),
        node("side", "Relu", ["k1"], ["z"]),
    ]
    assert pieces(graphs(source, optimized)) == {
        (("conv",), ("conv",)),
        (("add",), ("tr", "add")),
        (("mul",), ("mul",)),
        (("side",), ("side",)),
    }


def test_a_node_reached_twice_with_no_sole_producer_keeps_the_region_whole() -> None:
    # add reads a and b, each also read elsewhere: no kernel it could have been fused into.
    source = [
        node("convA", "Conv", ["x", "w1"], ["a"]),
        node("convB", "Conv", ["x", "w2"], ["b"]),
        node("add", "Add", ["a", "b"], ["s"]),
        node("convC", "Conv", ["s", "w3"], ["c"]),
        node("convD", "Conv", ["s", "w4"], ["d"]),
        node("out", "Concat", ["c", "d", "a", "b"], ["y"]),
    ]
    optimized = [
        node("a_nchwc", "Conv", ["x", "p1"], ["t1"]),
        node("b_nchwc", "Conv", ["x", "p2"], ["t2"]),
        node("sum", "Sum", ["t1", "t2"], ["t3"]),
        node("c_nchwc", "Conv", ["t3", "p3"], ["t4"]),
        node("d_nchwc", "Conv", ["t3", "p4"], ["t5"]),
        node("out", "Concat", ["t4", "t5", "t1", "t2"], ["y"]),
    ]
    (whole,) = pieces(graphs(source, optimized))
    assert set(whole[1]) == {node.name for node in source}


def test_the_longest_name_a_kernel_extends_is_its_anchor() -> None:
    members = [node("conv", "Conv", ["x"], ["conv_out"]), node("conv_1", "Conv", ["x"], ["o"])]
    named = anchor_names(members)
    assert anchor_of("conv_1_token_3", named) == "conv_1"
    assert anchor_of("conv_token_3", named) == "conv"
    assert anchor_of("conv_out_nchwc", named) == "conv"  # an output's name
    assert (
        anchor_of("/m/conv_1/MatMulAddFusion", anchor_names([node("/m/conv_1", "MatMul", [], [])]))
        == "/m/conv_1"
    )
    assert anchor_of("convolution", named) is None  # "conv" is not followed by a separator
    assert anchor_of("Transpose", named) is None


def test_a_name_two_members_carry_anchors_nothing() -> None:
    # "a" is one node's name and another node's output
    named = anchor_names([node("a", "Relu", ["x"], ["r"]), node("b", "Relu", ["x"], ["a"])])
    assert named["a"] is None and anchor_of("a_token_1", named) is None
    assert anchor_of("r_nchwc", named) == "a"

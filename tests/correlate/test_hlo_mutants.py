"""Decoding XLA programs built here: the instructions a kernel runs (fusions, nested calls, a
while's condition), FLOPs per opcode from shapes, stack-frame chains (bounds, cycles), the
HloProto fields read (operands, called computations, metadata) and the HLO text fallback.

Written from the mutants of `correlate/hlo.py`. FLOPs are counted here from the shapes written
(2*M*N*K for a dot, 2 * outputs * window for a convolution, input elements for a reduce).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from irprof.correlate.hlo import (
    HloInstructionInfo,
    HloModuleInfo,
    decode_hlo_proto,
    instruction_flops,
    kernel_weights,
    parse_hlo_text,
)
from irprof.correlate.hlo_proto import hlo_pb2


def info(
    name: str,
    opcode: str = "add",
    op_name: str = "",
    *,
    computation: str = "main",
    called: tuple[str, ...] = (),
    chain: tuple[str, ...] = (),
) -> HloInstructionInfo:
    return HloInstructionInfo(name, opcode, op_name, chain, 1.0, 4, computation, called)


def program(*instructions: HloInstructionInfo) -> HloModuleInfo:
    computations: dict[str, list[str]] = {}
    for instruction in instructions:
        computations.setdefault(instruction.computation, []).append(instruction.name)
    return HloModuleInfo(
        "m",
        7,
        {i.name: i for i in instructions},
        {name: tuple(members) for name, members in computations.items()},
    )


def names(members: tuple[HloInstructionInfo, ...]) -> list[str]:
    return [member.name for member in members]


def test_owner_and_source() -> None:
    assert info("c", "constant", "jit(f)/mul").owner == ""
    assert info("a", "add", "jit(f)/mul").owner == "jit(f)/mul"
    assert info("a", chain=("f.py:1:2", "f.py:9:1")).source == "f.py:1:2"
    assert info("a").source is None


def test_a_plain_instruction_is_its_own_kernel_and_an_unknown_one_none() -> None:
    module = program(info("add.1", "add", "x"), info("dot.2", "dot", "y"))
    assert names(module.kernel_members("add.1")) == ["add.1"]
    assert module.kernel_members("nope") == ()


def test_a_fusion_runs_every_instruction_of_its_computations_once() -> None:
    module = program(
        info("fusion.1", "fusion", "", called=("fused",)),
        info("mul.2", "multiply", "jit(f)/mul", computation="fused"),
        info("call.3", "call", "", computation="fused", called=("inner", "inner")),
        info("exp.4", "exponential", "jit(f)/exp", computation="inner"),
        info("red.5", "reduce", "jit(f)/sum", computation="fused", called=("adder",)),
        info("sum.6", "add", "jit(f)/sum", computation="adder"),
        info("orphan.7", "add", "jit(f)/other", computation="elsewhere"),
    )
    members = names(module.kernel_members("fusion.1"))
    # the fusion itself is left out (its members carry names); each computation read once
    assert sorted(members) == ["call.3", "exp.4", "mul.2", "red.5", "sum.6"]
    assert members[:3] == ["mul.2", "call.3", "red.5"]  # the fused computation in order first
    assert names(module.kernel_members("call.3")) == ["exp.4"]


def test_a_fusion_without_names_keeps_itself_first() -> None:
    module = program(
        info("fusion.1", "fusion", "jit(f)/fused", called=("fused", "missing")),
        info("c.2", "constant", "jit(f)/zero", computation="fused"),  # a CSE'd constant's name
        info("add.3", "add", "", computation="fused"),
    )
    assert names(module.kernel_members("fusion.1")) == ["fusion.1", "c.2", "add.3"]
    empty = program(info("fusion.9", "fusion", "", called=("missing",)))
    assert names(empty.kernel_members("fusion.9")) == ["fusion.9"]


def test_a_while_runs_its_condition_not_its_body() -> None:
    module = program(
        info("while.1", "while", "jit(f)/while", called=("body", "cond")),
        info("b.2", "multiply", "jit(f)/mul", computation="body"),
        info("lt.3", "compare", "jit(f)/lt", computation="cond"),
        info("c.4", "constant", "jit(f)/k", computation="cond"),
    )
    assert names(module.kernel_members("while.1")) == ["while.1", "lt.3", "c.4"]
    bare = program(info("while.9", "while", "w"))  # no called computations recorded
    assert names(bare.kernel_members("while.9")) == ["while.9"]


@pytest.mark.parametrize("opcode", ["parameter", "copy", "transpose", "fusion", "call", "tuple"])
def test_data_movement_and_calls_have_no_flops(opcode: str) -> None:
    assert instruction_flops(opcode, 100, [(10, 10)]) == 0.0


def test_dot_flops_contract_the_lhs_dimensions() -> None:
    # [2, 3, 5] x [5, 3, 7] contracting dims 1 and 2 of the lhs: K = 3 * 5, 14 outputs
    found = instruction_flops("dot", 2 * 7, [(2, 3, 5), (5, 3, 7)], [1, 2])
    assert found == 2 * (2 * 7) * (3 * 5)
    assert isinstance(found, float)
    # a dimension past the lhs's rank is ignored; no contracting dims: K = 1
    assert instruction_flops("dot", 6, [(2, 3)], [1, 2]) == 2 * 6 * 3
    assert instruction_flops("dot", 6, [(2, 3)], []) == 2 * 6
    # without operand shapes: one FLOP per output
    assert instruction_flops("dot", 6, []) == 6.0


def test_convolution_flops_count_the_window_per_output() -> None:
    # a 3x3 kernel of 4 input and 8 output features, dim 3 the output feature
    outputs = 2 * 5 * 5 * 8
    kernel = (3, 3, 4, 8)
    assert instruction_flops("convolution", outputs, [(2, 7, 7, 4), kernel], (), 3) == (
        2 * outputs * (3 * 3 * 4)
    )
    # the output feature dimension first
    assert instruction_flops("convolution", outputs, [(1,), (8, 3, 3, 4)], (), 0) == (
        2 * outputs * (3 * 3 * 4)
    )
    # without the dimension, one past the kernel's rank, a zero-sized feature or one operand:
    # one FLOP per output
    image: tuple[int, ...] = (2, 7, 7, 4)
    cases: list[tuple[list[tuple[int, ...]], int | None]] = [
        ([image, kernel], None),
        ([image, kernel], 4),
        ([image, (3, 3, 4, 0)], 3),
        ([image], 3),
    ]
    for operands, feature in cases:
        assert instruction_flops("convolution", outputs, operands, (), feature) == outputs


def test_reductions_count_their_input_and_other_ops_their_output() -> None:
    assert instruction_flops("reduce", 4, [(4, 8), ()]) == 32.0
    assert instruction_flops("reduce-window", 4, [(2, 3, 5)]) == 30.0
    assert instruction_flops("reduce", 4, []) == 4.0
    assert instruction_flops("exponential", 12, [(3, 4)]) == 12.0


def shape(*dims: int) -> hlo_pb2.ShapeProto:
    return hlo_pb2.ShapeProto(element_type=11, dimensions=list(dims))


def instruction(
    name: str, opcode: str, id_: int, result: hlo_pb2.ShapeProto, **fields: Any
) -> hlo_pb2.HloInstructionProto:
    return hlo_pb2.HloInstructionProto(name=name, opcode=opcode, id=id_, shape=result, **fields)


def module_proto() -> hlo_pb2.HloModuleProto:
    """main: x (4x8), w (8x3), dot (4x3) with a two-frame chain, a tuple of both and a fusion
    calling `fused` (and a computation id that does not exist); fused: a tanh named by file and
    line only; a frame index with a bad file id and a cycle."""
    index = hlo_pb2.StackFrameIndexProto(
        file_names=["a.py", "b.py"],
        file_locations=[
            hlo_pb2.StackFrameIndexProto.FileLocation(file_name_id=1, line=5, column=9),
            hlo_pb2.StackFrameIndexProto.FileLocation(file_name_id=2, line=9, column=4),
            hlo_pb2.StackFrameIndexProto.FileLocation(file_name_id=3, line=1, column=1),
        ],
        stack_frames=[
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=2, parent_frame_id=0),
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=1, parent_frame_id=1),
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=3, parent_frame_id=4),
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=9, parent_frame_id=3),
        ],
    )
    dot_numbers = hlo_pb2.DotDimensionNumbers(lhs_contracting_dimensions=[1])
    main = hlo_pb2.HloComputationProto(
        name="main",
        id=1,
        instructions=[
            instruction("x", "parameter", 1, shape(4, 8)),
            instruction("w", "parameter", 2, shape(8, 3)),
            instruction(
                "dot.3", "dot", 3, shape(4, 3), operand_ids=[1, 2, 99],
                dot_dimension_numbers=dot_numbers,
                metadata=hlo_pb2.OpMetadata(op_name="jit(g)/dot_general", stack_frame_id=2),
            ),
            instruction(
                "tuple.4", "tuple", 4,
                hlo_pb2.ShapeProto(tuple_shapes=[shape(4, 3), shape(2, 2)]), operand_ids=[3, 3],
            ),
            instruction("fusion.5", "fusion", 5, shape(4, 8), called_computation_ids=[2, 77]),
            instruction(
                "cycle.6", "negate", 6, shape(2),
                metadata=hlo_pb2.OpMetadata(op_name="jit(g)/neg", stack_frame_id=3),
            ),
            instruction(
                "past.7", "negate", 7, shape(2),
                metadata=hlo_pb2.OpMetadata(stack_frame_id=5, source_file="c.py", source_line=3,
                                            source_column=2),
            ),
        ],
    )  # fmt: skip
    fused = hlo_pb2.HloComputationProto(
        name="fused",
        id=2,
        instructions=[
            instruction(
                "tanh.8", "tanh", 8, shape(4, 8),
                metadata=hlo_pb2.OpMetadata(op_name="jit(g)/tanh", source_file="c.py",
                                            source_line=12, source_column=7),
            ),
            instruction(
                "conv.9", "convolution", 9, shape(1, 2, 2, 6), operand_ids=[10, 11],
                convolution_dimension_numbers=hlo_pb2.ConvolutionDimensionNumbers(
                    kernel_output_feature_dimension=0
                ),
            ),
            instruction("in.10", "parameter", 10, shape(1, 4, 4, 3)),
            instruction("k.11", "parameter", 11, shape(6, 3, 3, 3)),
            instruction("conv.12", "convolution", 12, shape(5), operand_ids=[10, 11]),
        ],
    )  # fmt: skip
    return hlo_pb2.HloModuleProto(name="jit_g", computations=[main, fused], stack_frame_index=index)


def test_a_module_proto_is_decoded_field_by_field() -> None:
    decoded = decode_hlo_proto(hlo_pb2.HloProto(hlo_module=module_proto()).SerializeToString(), 4)
    assert (decoded.name, decoded.program_id) == ("jit_g", 4)
    assert decoded.computations == {
        "main": ("x", "w", "dot.3", "tuple.4", "fusion.5", "cycle.6", "past.7"),
        "fused": ("tanh.8", "conv.9", "in.10", "k.11", "conv.12"),
    }
    dot = decoded.instructions["dot.3"]
    assert dot == HloInstructionInfo(
        name="dot.3",
        opcode="dot",
        op_name="jit(g)/dot_general",
        chain=("a.py:5:9", "b.py:9:4"),
        flops=2 * (4 * 3) * 8,
        elements=4 * 3,
        computation="main",
        called=(),
        operands=("x", "w"),  # id 99 is no instruction of main
    )
    tuple_ = decoded.instructions["tuple.4"]
    assert (tuple_.elements, tuple_.flops, tuple_.operands) == (4 * 3 + 2 * 2, 0.0, ("dot.3",) * 2)
    fusion = decoded.instructions["fusion.5"]
    assert (fusion.called, fusion.flops, fusion.op_name, fusion.chain) == (("fused",), 0.0, "", ())
    # a frame whose location names no file, then a cycle: read once each, "?" for the file
    assert decoded.instructions["cycle.6"].chain == ("?:1:1",)
    # a frame id past the table: the metadata's file and line instead
    assert decoded.instructions["past.7"].chain == ("c.py:3:2",)
    tanh = decoded.instructions["tanh.8"]
    assert (tanh.chain, tanh.flops, tanh.computation) == (("c.py:12:7",), 32.0, "fused")
    # kernel (6 out features first, 3x3x3 window) over 1x2x2x6 outputs
    assert decoded.instructions["conv.9"].flops == 2 * (1 * 2 * 2 * 6) * (3 * 3 * 3)
    # no convolution dimension numbers: one FLOP per output
    assert decoded.instructions["conv.12"].flops == 5.0
    assert decoded.instructions["x"].chain == () and decoded.instructions["x"].op_name == ""


def test_a_bare_module_proto_decodes_alike_and_garbage_is_refused() -> None:
    bare = module_proto()
    wrapped = decode_hlo_proto(hlo_pb2.HloProto(hlo_module=bare).SerializeToString())
    alone = decode_hlo_proto(bare.SerializeToString())
    assert alone == wrapped and alone.program_id == -1
    with pytest.raises(ValueError) as caught:
        decode_hlo_proto(b"\xff\xff\xff not a proto", what="trace/x.pb")
    assert str(caught.value) == (
        "trace/x.pb: not a serialized HloProto or HloModuleProto with computations"
    )
    empty = hlo_pb2.HloModuleProto(name="nothing").SerializeToString()
    with pytest.raises(ValueError, match=r"^HloProto: not a serialized"):
        decode_hlo_proto(empty)
    with pytest.raises(ValueError, match=r"^HloProto: not a serialized"):
        decode_hlo_proto(hlo_pb2.HloProto().SerializeToString())


HLO_TEXT = """HloModule jit_h, entry_computation_layout={(f32[4,8]{1,0})->f32[4,4]{1,0}}

FileNames
1 "h.py"
2 "lib.py"

FunctionNames
1 "h"

FileLocations
1 {file_name_id=1 function_name_id=1 line=5 end_line=5 column=9 end_column=20}
2 {file_name_id=2 function_name_id=1 line=9 end_line=9 column=4 end_column=8}
3 {function_name_id=1}

StackFrames
1 {file_location_id=2 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=2}
3 {file_location_id=3}

%cond (p.0: (s32[], f32[4,8])) -> pred[] {
  %p.0 = (s32[], f32[4,8]{1,0}) parameter(0)
  ROOT %lt.1 = pred[] compare(s32[] %i, s32[] %i), direction=LT
}

%body (p.1: (s32[], f32[4,8])) -> (s32[], f32[4,8]) {
  ROOT %p.1 = (s32[], f32[4,8]{1,0}) parameter(0)
}

%fused_computation (q.0: f32[1,6,6,3], k.0: f32[3,3,3,2]) -> f32[1,4,4,2] {
  %q.0 = f32[1,6,6,3]{3,2,1,0} parameter(0)
  %k.0 = f32[3,3,3,2]{3,2,1,0} parameter(1)
  ROOT %conv.1 = f32[1,4,4,2]{3,2,1,0} convolution(f32[1,6,6,3]{3,2,1,0} %q.0, \
f32[3,3,3,2]{3,2,1,0} %k.0), window={size=3x3}, dim_labels=b01f_01io->b01f
}

ENTRY %main.1 (x.1: f32[4,8]) -> f32[4,4] {
  %x.1 = f32[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %t = f32[8,4]{0,1} transpose(f32[4,8]{1,0} %x.1), dimensions={1,0}
  %dot.3 = f32[4,4]{1,0} dot(f32[4,8]{1,0} %x.1, f32[8,4]{0,1} %t), \
lhs_contracting_dims={1}, rhs_contracting_dims={0}, \
metadata={op_name="jit(h)/dot_general" stack_frame_id=2}
  %w.4 = (s32[], f32[4,8]{1,0}) while((s32[], f32[4,8]{1,0}) %x.1), \
condition=%cond, body=%body, metadata={op_name="jit(h)/while" stack_frame_id=3}
  %r.5 = f32[4]{0} reduce(f32[4,8]{1,0} %x.1, f32[] %zero), \
dimensions={1}, to_apply=%cond, metadata={op_name="jit(h)/say \\"hi\\"/it\\'s"}
  %f.6 = f32[1,4,4,2]{3,2,1,0} fusion(f32[4,8]{1,0} %x.1), kind=kConv, calls=%fused_computation
  ROOT %n.7 = f32[4,4]{1,0} negate(f32[4,4]{1,0} %dot.3), \
metadata={op_name="jit(h)/neg" stack_frame_id=1}
}
"""


def test_hlo_text_is_read_with_its_tables_shapes_and_calls() -> None:
    parsed = parse_hlo_text(HLO_TEXT, 9)
    assert (parsed.name, parsed.program_id) == ("jit_h", 9)
    assert parsed.computations == {
        "cond": ("p.0", "lt.1"),
        "body": ("p.1",),
        "fused_computation": ("q.0", "k.0", "conv.1"),
        "main.1": ("x.1", "t", "dot.3", "w.4", "r.5", "f.6", "n.7"),
    }
    dot = parsed.instructions["dot.3"]
    assert dot == HloInstructionInfo(
        name="dot.3",
        opcode="dot",
        op_name="jit(h)/dot_general",
        # the text's parent ids are one above the proto's: frame 2's parent is frame 1
        chain=("h.py:5:9", "lib.py:9:4"),
        flops=2 * (4 * 4) * 8,
        elements=16,
        computation="main.1",
        called=(),
        operands=("x.1", "t"),
    )
    assert parsed.instructions["n.7"].chain == ("lib.py:9:4",)
    # a location row without a file or line: "?" and zeros
    assert parsed.instructions["w.4"].chain == ("?:0:0",)
    while_ = parsed.instructions["w.4"]
    # printed condition first, listed (body, condition); no rule of its own: its outputs
    assert (while_.called, while_.elements, while_.flops) == (("body", "cond"), 1 + 32, 33.0)
    reduce = parsed.instructions["r.5"]
    assert reduce.op_name == 'jit(h)/say "hi"/it\'s'
    assert (reduce.called, reduce.flops, reduce.chain) == (("cond",), 32.0, ())
    assert reduce.operands == ("x.1", "zero")  # %zero has no shape here: no FLOPs from it
    fusion = parsed.instructions["f.6"]
    assert (fusion.called, fusion.flops, fusion.elements) == (("fused_computation",), 0.0, 32)
    conv = parsed.instructions["conv.1"]
    # 1x4x4x2 outputs, each over a 3x3x3 window (the kernel without its `o` dimension)
    assert conv.flops == 2 * (1 * 4 * 4 * 2) * (3 * 3 * 3)
    assert parsed.instructions["lt.1"].elements == 1 and parsed.instructions["lt.1"].flops == 1.0
    assert parsed.instructions["x.1"].op_name == "x"
    assert parsed.instructions["t"].op_name == "" and parsed.instructions["t"].flops == 0.0
    assert names(parsed.kernel_members("w.4")) == ["w.4", "p.0", "lt.1"]
    # no member carries a name: the fusion itself comes first
    assert names(parsed.kernel_members("f.6")) == ["f.6", "q.0", "k.0", "conv.1"]


def test_text_without_a_header_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        parse_hlo_text("module @m {}\n")
    assert str(caught.value) == "not HLO text: no 'HloModule <name>' header"


def test_a_while_with_other_than_two_calls_keeps_their_order() -> None:
    text = """HloModule m

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w = s32[] while(s32[] %x), body=%b
}
"""
    assert parse_hlo_text(text).instructions["w"].called == ("b",)


def test_dims_of_scalars_and_tuples() -> None:
    text = """HloModule m

ENTRY %main (x: f32[2,3]) -> f32[] {
  %x = f32[2,3]{1,0} parameter(0)
  %s = f32[] constant(1)
  %tup = (f32[2,3]{1,0}, f32[], s32[5]) tuple(f32[2,3]{1,0} %x, f32[] %s, s32[5] %x)
  ROOT %r = f32[2]{0} reduce(f32[2,3]{1,0} %x, f32[] %s), dimensions={1}
}
"""
    parsed = parse_hlo_text(text)
    assert parsed.instructions["s"].elements == 1 == math.prod(())
    assert parsed.instructions["tup"].elements == 6 + 1 + 5
    assert parsed.instructions["r"].flops == 6.0


def test_a_while_without_its_condition_and_repeated_computations() -> None:
    module = program(
        info("while.1", "while", "w", called=("body", "gone")),
        info("while.2", "while", "w", called=("cond",)),
        info("lt.3", "compare", "c", computation="cond"),
        # `b` is reached twice before `a`: read once, and `a` still read
        info("fusion.4", "fusion", "", called=("a", "b", "b")),
        info("x.5", "add", "x", computation="a"),
        info("y.6", "add", "y", computation="b"),
    )
    assert names(module.kernel_members("while.1")) == ["while.1"]
    assert names(module.kernel_members("while.2")) == ["while.2", "lt.3"]
    assert sorted(names(module.kernel_members("fusion.4"))) == ["x.5", "y.6"]


def test_a_convolution_with_one_output_feature() -> None:
    # a 3x3 kernel of 2 input features and 1 output feature: 18 inputs per output
    outputs = 4 * 4
    assert instruction_flops("convolution", outputs, [(1, 6, 6, 2), (3, 3, 2, 1)], (), 3) == (
        2 * outputs * (3 * 3 * 2)
    )


FRAMES_TEXT = """HloModule m

FileNames
1 "Xla.py"

FileLocations
1 {file_name_id=1 line=4 column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {parent_frame_id=2}

ENTRY %main (x: f32[2,3,5]) -> f32[2] {
  %x = f32[2,3,5]{2,1,0} parameter(0)
  %y = f32[3,5,7]{2,1,0} parameter(1)
  ROOT %d = f32[2,7]{1,0} dot(f32[2,3,5]{2,1,0} %x, f32[3,5,7]{2,1,0} %y), \
lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}, metadata={op_name="d" stack_frame_id=2}
}
"""


def test_text_frames_without_a_location_and_dots_contracting_two_dimensions() -> None:
    parsed = parse_hlo_text(FRAMES_TEXT)
    dot = parsed.instructions["d"]
    # frame 2 has no location of its own: only its parent's (frame 1), the file name whole
    assert dot.chain == ("Xla.py:4:2",)
    assert dot.flops == 2 * (2 * 7) * (3 * 5)


# `kernel_weights`: every opcode of the two sets, one at a time, and the FLOPs' lower bound.
MOVING = (
    "transpose",
    "copy",
    "slice",
    "dynamic-slice",
    "dynamic-update-slice",
    "concatenate",
    "pad",
    "reverse",
    "gather",
    "scatter",
)
FREE = ("parameter", "constant", "bitcast", "tuple", "get-tuple-element")


def weighed(opcode: str, flops: float, elements: int) -> HloInstructionInfo:
    return HloInstructionInfo(f"{opcode}.1", opcode, "", (), flops, elements, "fused", ())


@pytest.mark.parametrize("opcode", MOVING)
def test_kernel_weights_moving_opcode_outweighs_flops(opcode: str) -> None:
    # 3 FLOPs beside 4 moved elements: the elements each writes (3 and 4)
    members = [weighed("add", 3, 3), weighed(opcode, 0, 4)]
    assert kernel_weights(members) == ([3.0, 4.0], "bytes")


@pytest.mark.parametrize("opcode", ["broadcast", "reshape", "iota", "add"])
def test_kernel_weights_index_mapping_is_not_moved(opcode: str) -> None:
    members = [weighed("add", 3, 3), weighed(opcode, 0, 4)]
    assert kernel_weights(members) == ([3.0, 0.0], "flops")


@pytest.mark.parametrize("opcode", FREE)
def test_kernel_weights_free_opcode_writes_nothing(opcode: str) -> None:
    # no FLOPs: a copy's 5 elements against a free instruction's 7, which count nothing
    members = [weighed("copy", 0, 5), weighed(opcode, 0, 7)]
    assert kernel_weights(members) == ([5.0, 0.0], "bytes")


def test_kernel_weights_one_flop_one_element_is_flops() -> None:
    # 1 FLOP total, nothing moved: FLOPs (a bound of 1 instead of 0 would fall to elements)
    members = [weighed("negate", 1, 1), weighed("broadcast", 0, 9)]
    assert kernel_weights(members) == ([1.0, 0.0], "flops")
    # 1 FLOP, 1 moved element: still FLOPs (as many moved as computed)
    members = [weighed("negate", 1, 1), weighed("slice", 0, 1)]
    assert kernel_weights(members) == ([1.0, 0.0], "flops")


def test_kernel_weights_one_element_written_is_bytes() -> None:
    # no FLOPs, one element written: by elements, not even
    members = [weighed("copy", 0, 1), weighed("parameter", 0, 9), weighed("pad", 0, 0)]
    assert kernel_weights(members) == ([1.0, 0.0, 0.0], "bytes")

"""Decoding XLA programs: HloProto (wrapped or bare), HLO text, bad input."""

from __future__ import annotations

import pytest

from irprof.frameworks.jax.hlo import decode_hlo_proto, instruction_flops, parse_hlo_text
from irprof.frameworks.jax.hlo_proto import hlo_pb2

NEEDS_FRAMEWORK = False  # shipped fixtures and MLIR only: tests/frameworks/conftest.py

HLO_TEXT = """HloModule jit_g, entry_computation_layout={(f32[4,8]{1,0})->f32[4,4]{1,0}}

FileNames
1 "g.py"

FunctionNames
1 "g"

FileLocations
1 {file_name_id=1 function_name_id=1 line=5 end_line=5 column=9 end_column=20}
2 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=4 end_column=8}

StackFrames
1 {file_location_id=2 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=2}

ENTRY %main.1 (x.1: f32[4,8]) -> f32[4,4] {
  %x.1 = f32[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %t = f32[8,4]{0,1} transpose(f32[4,8]{1,0} %x.1), dimensions={1,0}
  ROOT %dot.3 = f32[4,4]{1,0} dot(f32[4,8]{1,0} %x.1, f32[8,4]{0,1} %t), DOT_ATTRIBUTES
}
""".replace(
    "DOT_ATTRIBUTES",
    "lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
    'metadata={op_name="jit(g)/dot_general" stack_frame_id=2}',
)


def module_proto() -> hlo_pb2.HloModuleProto:
    """A one-instruction module with a two-frame stack."""
    index = hlo_pb2.StackFrameIndexProto(
        file_names=["g.py"],
        file_locations=[
            hlo_pb2.StackFrameIndexProto.FileLocation(file_name_id=1, line=5, column=9),
            hlo_pb2.StackFrameIndexProto.FileLocation(file_name_id=1, line=9, column=4),
        ],
        stack_frames=[
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=2, parent_frame_id=0),
            hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=1, parent_frame_id=1),
        ],
    )
    instr = hlo_pb2.HloInstructionProto(
        name="tanh.1",
        opcode="tanh",
        id=1,
        shape=hlo_pb2.ShapeProto(element_type=11, dimensions=[4, 8]),
        metadata=hlo_pb2.OpMetadata(op_name="jit(g)/tanh", stack_frame_id=2),
    )
    computation = hlo_pb2.HloComputationProto(name="main", id=1, instructions=[instr])
    return hlo_pb2.HloModuleProto(name="jit_g", computations=[computation], stack_frame_index=index)


def test_wrapped_and_bare_module_protos_decode_alike() -> None:
    """GIVEN an HloProto and the bare HloModuleProto inside it THEN the same instruction."""
    bare = module_proto()
    wrapped = hlo_pb2.HloProto(hlo_module=bare)
    for data in (wrapped.SerializeToString(), bare.SerializeToString()):
        tanh = decode_hlo_proto(data).instructions["tanh.1"]
        assert (tanh.op_name, tanh.chain, tanh.flops) == (
            "jit(g)/tanh",
            ("g.py:5:9", "g.py:9:4"),
            32,
        )


def test_garbage_is_not_an_hlo_proto() -> None:
    """GIVEN bytes that are no HLO module THEN ValueError naming the input."""
    with pytest.raises(ValueError, match=r"trace\.pb"):
        decode_hlo_proto(b"\xff\xff\xff not a proto", what="trace.pb")


def test_text_with_operand_shapes_and_frame_chain() -> None:
    """GIVEN HLO text printing operand shapes THEN operands, FLOPs and chains are read (the
    printed parent_frame_id is one above the proto's)."""
    program = parse_hlo_text(HLO_TEXT)
    dot = program.instructions["dot.3"]
    assert dot.op_name == "jit(g)/dot_general"
    assert dot.chain == ("g.py:5:9", "g.py:9:4")
    assert dot.flops == 2 * 4 * 4 * 8
    assert program.instructions["t"].flops == 0
    assert program.kernel_members("dot.3") == (dot,)


def test_text_without_header_is_refused() -> None:
    """GIVEN text that is not HLO THEN ValueError."""
    with pytest.raises(ValueError, match="HloModule"):
        parse_hlo_text("module @m {}\n")


def test_convolution_flops_count_the_window_per_output() -> None:
    """GIVEN a 3x3x1->8 kernel and 16x28x28x8 outputs THEN 2 * outputs * 9 FLOPs."""
    outputs = 16 * 28 * 28 * 8
    flops = instruction_flops("convolution", outputs, [(16, 28, 28, 1), (3, 3, 1, 8)], (), 3)
    assert flops == 2 * 16 * 28 * 28 * 8 * 9

"""Why a StableHLO op got no time, on a program built in code: an op of a region its parent
applies (a sort's comparator) runs in the parent's kernel, and an op whose location only
instructions of other kinds carry (the broadcast of `x + c`, folded into the add) was removed by
XLA, not "kept but never run"."""

from __future__ import annotations

from irprof.coverage import Coverage
from irprof.frameworks.jax.correlate import correlate_program
from irprof.frameworks.jax.hlo import decode_hlo_proto
from irprof.frameworks.jax.hlo_proto import hlo_pb2
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind

MODULE = """
module @jit_g {
  func.func public @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %c = stablehlo.constant dense<1.0> : tensor<f32> loc(#add)
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4x8xf32> loc(#add)
    %1 = stablehlo.add %x, %0 : tensor<4x8xf32> loc(#add)
    %2 = "stablehlo.sort"(%1) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %3 = stablehlo.compare LT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1> loc(#lt)
      stablehlo.return %3 : tensor<i1>
    }) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc(#sort)
    return %2 : tensor<4x8xf32>
  }
}
#add = loc("jit(g)/add"("g.py":3:8))
#sort = loc("jit(g)/sort"("g.py":4:8))
#lt = loc("lt")
"""
FRAMES = {"add": 1, "sort": 2}  # stack frame ids of the index below


def _instr(name: str, opcode: str, uid: int, op_name: str = "", frame: str = "", **extra: object
           ) -> hlo_pb2.HloInstructionProto:  # fmt: skip
    dims = [] if name.startswith(("p.", "lt.")) else [4, 8]  # the comparator's are scalars
    return hlo_pb2.HloInstructionProto(
        name=name,
        opcode=opcode,
        id=uid,
        shape=hlo_pb2.ShapeProto(element_type=11, dimensions=dims),
        metadata=hlo_pb2.OpMetadata(op_name=op_name, stack_frame_id=FRAMES.get(frame, 0)),
        **extra,  # type: ignore[arg-type]
    )


def program() -> bytes:
    """XLA's shape of it: the constant broadcast folded into the add's fusion, the comparator a
    computation the sort calls (its instruction keeps the bare primitive name)."""
    fused = hlo_pb2.HloComputationProto(
        name="fused_add", id=2, is_fusion_computation=True,
        instructions=[_instr("p0", "parameter", 20),
                      _instr("add.1", "add", 21, "jit(g)/add", "add", operand_ids=[20])],
    )  # fmt: skip
    comparator = hlo_pb2.HloComputationProto(
        name="compare_lt", id=3,
        instructions=[_instr("p.a", "parameter", 30), _instr("p.b", "parameter", 31),
                      _instr("lt.1", "compare", 32, "lt", operand_ids=[30, 31])],
    )  # fmt: skip
    entry = hlo_pb2.HloComputationProto(
        name="main", id=1,
        instructions=[
            _instr("x", "parameter", 1),
            _instr("fusion.1", "fusion", 2, "jit(g)/add", "add", operand_ids=[1],
                   called_computation_ids=[2]),
            _instr("sort.1", "sort", 3, "jit(g)/sort", "sort", operand_ids=[2],
                   called_computation_ids=[3]),
        ],
    )  # fmt: skip
    location = hlo_pb2.StackFrameIndexProto.FileLocation
    index = hlo_pb2.StackFrameIndexProto(
        file_names=["g.py"],
        function_names=["g"],
        file_locations=[location(file_name_id=1, function_name_id=1, line=line, column=8)
                        for line in (3, 4)],
        stack_frames=[hlo_pb2.StackFrameIndexProto.StackFrame(file_location_id=frame)
                      for frame in (1, 2)],
    )  # fmt: skip
    module = hlo_pb2.HloModuleProto(
        name="jit_g",
        entry_computation_name="main",
        computations=[fused, comparator, entry],
        stack_frame_index=index,
    )
    return hlo_pb2.HloProto(hlo_module=module).SerializeToString()


def coverage() -> Coverage:
    builder = TraceBuilder()
    worker = builder.track(1, 1, "/host:CPU", "tf_XLAEigen/1")
    for step in range(2):
        for offset, name in ((0, "fusion.1"), (100, "sort.1")):
            args = {"hlo_op": name, "hlo_module": "jit_g", "program_id": 5}
            builder.add(step * 1_000 + offset, 50, worker, name, EventKind.KERNEL, args)
    module = parse_module(MODULE, make_context())
    result = correlate_program(module, builder.build(), decode_hlo_proto(program(), 5), "jit_g")
    return result.coverage


def test_comparator_ops_run_in_the_sort_and_a_folded_broadcast_was_removed() -> None:
    found = coverage()
    reasons = {op.op_name: op.reason for op in found.unmatched_ops}
    assert reasons == {
        "stablehlo.broadcast_in_dim": "removed by XLA: folded or simplified away (only other "
        "kinds of instruction carry its location: add add.1, fusion fusion.1)",
        "stablehlo.compare": "in a region stablehlo.sort applies, run in its kernel: its time "
        "is the parent's",
    }
    # neither is counted as an op that should have run: the add and the sort both got time
    assert found.ops_not_executed == 2
    assert found.ops_nontrivial_annotated == 2
    assert found.nontrivial_coverage == 1.0

"""The JAX correlator's tricky cases on data built in code: a StableHLO module, an HloProto
serialized with irprof's schema, and thunk events from TraceBuilder.

The module has two `jit(f)/dot_general` ops told apart only by source line, a private function
`helper` called from two places (its `tanh` carries only the primitive name), and a fusion that
runs the `add` together with the first inlined `tanh`.
"""

from __future__ import annotations

from typing import Any

import pytest

from irprof.frameworks.jax.attribution import plan_kernel, thunk_events
from irprof.frameworks.jax.correlate import correlate_program
from irprof.frameworks.jax.hlo import HloInstructionInfo, HloModuleInfo, decode_hlo_proto
from irprof.frameworks.jax.hlo_proto import hlo_pb2
from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos
from irprof.opprofile import OpProfileEntry
from irprof.trace.builder import TraceBuilder
from irprof.trace.model import EventKind, Trace

NEEDS_FRAMEWORK = False  # shipped fixtures and MLIR only: tests/frameworks/conftest.py

MODULE = """
!a = tensor<4x8xf32>
!b = tensor<8x8xf32>
module @jit_f {
  func.func public @main(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (!a, !b) -> !a loc(#dot1)
    %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (!a, !b) -> !a loc(#dot2)
    %2 = stablehlo.add %0, %1 : tensor<4x8xf32> loc(#add)
    %3 = func.call @helper(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc(#call1)
    %4 = func.call @helper(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc(#call2)
    %5 = stablehlo.negate %4 : tensor<4x8xf32> loc(#neg)
    return %4 : tensor<4x8xf32>
  }
  func.func private @helper(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.tanh %x : tensor<4x8xf32> loc(#tanh)
    return %0 : tensor<4x8xf32>
  }
}
#dot1 = loc("jit(f)/dot_general"("m.py":10:8))
#dot2 = loc("jit(f)/dot_general"("m.py":11:8))
#add = loc("jit(f)/add"("m.py":12:8))
#call1 = loc("jit(f)/jit(helper)"("m.py":13:8))
#call2 = loc("jit(f)/jit(helper)"("m.py":14:8))
#neg = loc("jit(f)/neg"("m.py":15:8))
#tanh = loc("tanh"("m.py":3:11))
"""

# Source frames of the HLO stack frame index: (line, column, parent frame id), 1-based ids.
FRAMES = {
    "dot1": (10, 8, 0),
    "dot2": (11, 8, 0),
    "add": (12, 8, 0),
    "call1": (13, 8, 0),
    "call2": (14, 8, 0),
    "tanh_in_call1": (3, 11, 4),
    "tanh_in_call2": (3, 11, 5),
}
FRAME_IDS = {name: position + 1 for position, name in enumerate(FRAMES)}


def _shape(*dims: int) -> hlo_pb2.ShapeProto:
    return hlo_pb2.ShapeProto(element_type=11, dimensions=list(dims))


def _instr(
    name: str,
    opcode: str,
    uid: int,
    dims: tuple[int, ...],
    op_name: str = "",
    frame: str = "",
    **extra: Any,
) -> hlo_pb2.HloInstructionProto:
    metadata = hlo_pb2.OpMetadata(op_name=op_name, stack_frame_id=FRAME_IDS[frame] if frame else 0)
    return hlo_pb2.HloInstructionProto(
        name=name, opcode=opcode, id=uid, shape=_shape(*dims), metadata=metadata, **extra
    )


def hlo_program() -> bytes:
    """An optimized-HLO-like program: two dots, a fusion (add + inlined tanh), a tanh, a copy."""
    fused = hlo_pb2.HloComputationProto(
        name="fused_add_tanh",
        id=2,
        is_fusion_computation=True,
        instructions=[
            _instr("p0", "parameter", 20, (4, 8)),
            _instr("p1", "parameter", 21, (4, 8)),
            _instr("add.1", "add", 22, (4, 8), "jit(f)/add", "add", operand_ids=[20, 21]),
            # 96 outputs: three times the add's FLOPs, so the FLOP rule and the even rule differ
            _instr("tanh.1", "tanh", 23, (4, 8, 3), "jit(f)/jit(helper)/tanh", "tanh_in_call1"),
        ],
    )
    dot_numbers = hlo_pb2.DotDimensionNumbers(
        lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
    )
    entry = hlo_pb2.HloComputationProto(
        name="main",
        id=1,
        instructions=[
            _instr("a", "parameter", 1, (4, 8)),
            _instr("b", "parameter", 2, (8, 8)),
            _instr(
                "dot.1",
                "dot",
                3,
                (4, 8),
                "jit(f)/dot_general",
                "dot1",
                operand_ids=[1, 2],
                dot_dimension_numbers=dot_numbers,
            ),
            _instr(
                "dot.2",
                "dot",
                4,
                (4, 8),
                "jit(f)/dot_general",
                "dot2",
                operand_ids=[1, 2],
                dot_dimension_numbers=dot_numbers,
            ),
            _instr(
                "fusion.1",
                "fusion",
                5,
                (4, 8),
                "jit(f)/add",
                "add",
                operand_ids=[3, 4],
                called_computation_ids=[2],
            ),
            _instr(
                "tanh.2",
                "tanh",
                6,
                (4, 8),
                "jit(f)/jit(helper)/tanh",
                "tanh_in_call2",
                operand_ids=[5],
            ),
            _instr("copy.1", "copy", 7, (4, 8), operand_ids=[6]),
        ],
    )
    index = hlo_pb2.StackFrameIndexProto(
        file_names=["m.py"],
        function_names=["f"],
        file_locations=[
            hlo_pb2.StackFrameIndexProto.FileLocation(
                file_name_id=1, function_name_id=1, line=line, column=col
            )
            for line, col, _ in FRAMES.values()
        ],
        stack_frames=[
            hlo_pb2.StackFrameIndexProto.StackFrame(
                file_location_id=position + 1, parent_frame_id=parent
            )
            for position, (_, _, parent) in enumerate(FRAMES.values())
        ],
    )
    module = hlo_pb2.HloModuleProto(
        name="jit_f",
        entry_computation_name="main",
        computations=[fused, entry],
        stack_frame_index=index,
    )
    return hlo_pb2.HloProto(hlo_module=module).SerializeToString()


def thunk_trace(async_end_by_flow: bool = True) -> Trace:
    """Two steps of thunk events; tanh.2 is asynchronous (its `end:` event comes later)."""
    builder = TraceBuilder()
    worker = builder.track(1, 1, "/host:CPU", "tf_XLAEigen/1")
    other = builder.track(1, 2, "/host:CPU", "tf_XLAEigen/2")
    flow = 100
    for step in range(2):
        base = step * 10_000
        for offset, name, dur in (
            (0, "dot.1", 100),
            (200, "dot.2", 300),
            (600, "fusion.1", 64),
            (700, "tanh.2", 10),
            (900, "copy.1", 7),
        ):
            args: dict[str, Any] = {
                "hlo_op": name,
                "hlo_module": "jit_f",
                "program_id": 3,
                "_p": flow,
            }
            builder.add(base + offset, dur, worker, name, EventKind.KERNEL, args)
            end_ts = base + offset + (290 if name == "tanh.2" else dur - 2)
            end_track = other if name == "tanh.2" else worker
            end_args = {"_c": flow} if async_end_by_flow else {}
            builder.add(
                end_ts,
                1,
                end_track if async_end_by_flow else worker,
                f"end: {name}",
                EventKind.RUNTIME,
                end_args,
            )
            flow += 1
    return builder.build()


def correlate(rule: str = "flops", async_end_by_flow: bool = True) -> dict[str, OpProfileEntry]:
    """Run the correlator; entries by a readable label."""
    module = parse_module(MODULE, make_context())
    program = decode_hlo_proto(hlo_program(), 3)
    result = correlate_program(module, thunk_trace(async_end_by_flow), program, "jit_f", rule=rule)
    labels: dict[str, OpProfileEntry] = {}
    for entry in result.opprofile.entries:
        labels[f"{entry.op_name}@{entry.key.source}#{entry.key.ordinal}"] = entry
    labels["__coverage__"] = result.coverage  # type: ignore[assignment]
    return labels


def test_duplicate_op_names_are_told_apart_by_source_position() -> None:
    """GIVEN two ops named jit(f)/dot_general on lines 10 and 11 THEN each gets its own thunk."""
    entries = correlate()
    first = entries["stablehlo.dot_general@m.py:10:8#0"].data
    second = entries["stablehlo.dot_general@m.py:11:8#0"].data
    assert (first.kernels, first.total_ns, first.count) == (("dot.1",), 200, 2)
    assert (second.kernels, second.total_ns, second.count) == (("dot.2",), 600, 2)


def test_ops_inlined_from_a_private_function_receive_every_call_site() -> None:
    """GIVEN helper's tanh (name 'tanh' only) inlined twice THEN it gets both thunks, and each
    func.call gets the time of its own call site only."""
    entries = correlate()
    tanh = entries["stablehlo.tanh@m.py:3:11#0"].data
    assert set(tanh.kernels) == {"fusion.1", "tanh.2"}
    call1 = entries["func.call@m.py:13:8#0"].data
    call2 = entries["func.call@m.py:14:8#0"].data
    assert call1.kernels == ("fusion.1",)
    assert call2.kernels == ("tanh.2",)
    assert call1.source.endswith(":inclusive")
    assert tanh.total_ns == call1.total_ns + call2.total_ns


def test_async_thunk_runs_to_the_end_of_its_end_event() -> None:
    """GIVEN tanh.2 whose `end:` event (linked by _p/_c, on another thread) ends 291 ns after its
    start THEN its duration is 291 ns, not the 10 ns of the launch event."""
    events, _ = thunk_events(thunk_trace(), "jit_f")
    tanh = [e for e in events if e.hlo_op == "tanh.2"]
    assert [e.dur_ns for e in tanh] == [291, 291]
    assert all(e.async_end_row is not None for e in tanh)
    call2 = correlate()["func.call@m.py:14:8#0"].data
    assert call2.total_ns == 2 * 291


def test_async_end_found_on_the_same_track_without_flow_ids() -> None:
    """GIVEN `end:` events without consumer ids THEN the next one of that name on the track."""
    events, _ = thunk_events(thunk_trace(async_end_by_flow=False), "jit_f")
    assert [e.dur_ns for e in events if e.hlo_op == "tanh.2"] == [291, 291]


def test_fused_thunk_time_is_shared_by_flops_and_records_fused_with() -> None:
    """GIVEN fusion.1 (64 ns) running add (32 FLOPs) and tanh (96 FLOPs) THEN the FLOP rule gives
    add 16 ns per run, the even rule 32 ns, and each op lists the other as fused_with."""
    entries = correlate()
    add = entries["stablehlo.add@m.py:12:8#0"].data
    assert add.kernels == ("fusion.1",)
    assert add.total_ns == 2 * 16
    assert add.fused_with == ("tanh",)
    assert "jit(f)/add" in entries["stablehlo.tanh@m.py:3:11#0"].data.fused_with
    assert correlate("even")["stablehlo.add@m.py:12:8#0"].data.total_ns == 2 * 32


def test_flop_rule_weights_a_dot_above_an_elementwise_op() -> None:
    """GIVEN the estimate THEN a 4x8x8 dot costs 2*4*8*8 FLOPs and an add its 32 outputs."""
    program = decode_hlo_proto(hlo_program())
    assert program.instructions["dot.1"].flops == 2 * 4 * 8 * 8
    assert program.instructions["add.1"].flops == 32
    assert program.instructions["copy.1"].flops == 0


def test_event_without_metadata_is_unattributed_with_its_time() -> None:
    """GIVEN copy.1 (no op metadata, like XLA's layout copies) THEN listed with 14 ns, 2 events."""
    coverage = correlate()["__coverage__"]
    unmatched = {e.name: e for e in coverage.unmatched_events}  # type: ignore[attr-defined]
    assert unmatched["copy.1"].total_ns == 14 and unmatched["copy.1"].count == 2
    assert "without op metadata" in unmatched["copy.1"].reason
    assert coverage.attributed_ns == coverage.profiled_ns - 14  # type: ignore[attr-defined]


def test_op_missing_from_the_compiled_program_is_reported_as_removed() -> None:
    """GIVEN negate, absent from the HLO THEN it is not a failure: reason 'removed by XLA'."""
    coverage = correlate()["__coverage__"]
    reasons = {o.op_name: o.reason for o in coverage.unmatched_ops}  # type: ignore[attr-defined]
    assert reasons["stablehlo.negate"].startswith("removed by XLA")
    assert coverage.ops_not_executed == 1  # type: ignore[attr-defined]
    assert coverage.nontrivial_coverage == pytest.approx(1.0)  # type: ignore[attr-defined]


MOVES = """
module @jit_g {
  func.func public @main(%x: tensor<4x8x3xf32>) -> tensor<32x3xf32> {
    %0 = stablehlo.transpose %x, dims = [1, 0, 2] : (tensor<4x8x3xf32>) -> tensor<8x4x3xf32> loc(#t)
    %1 = stablehlo.reshape %0 : (tensor<8x4x3xf32>) -> tensor<32x3xf32> loc(#r)
    return %1 : tensor<32x3xf32>
  }
}
#t = loc("jit(g)/transpose"("g.py":20:8))
#r = loc("jit(g)/reshape"("g.py":21:8))
"""


def _info(name: str, opcode: str, op_name: str, line: int, elements: int) -> HloInstructionInfo:
    return HloInstructionInfo(name, opcode, op_name, (f"g.py:{line}:8",), 0.0, elements, "f", ())


def test_data_movement_fusion_is_shared_by_elements_written() -> None:
    """GIVEN a fusion of a transpose (96 elements written), a copy (32) and a bitcast (free)
    THEN the FLOP rule, with no FLOPs to weigh, gives 3/4 and 1/4."""
    members = {
        "transpose.1": _info("transpose.1", "transpose", "jit(g)/transpose", 20, 96),
        "copy.1": _info("copy.1", "copy", "jit(g)/reshape", 21, 32),
        "bitcast.1": _info("bitcast.1", "bitcast", "jit(g)/reshape", 21, 96),
    }
    fusion = HloInstructionInfo("f.1", "fusion", "jit(g)/transpose", (), 0.0, 96, "main", ("f",))
    program = HloModuleInfo(
        "jit_g", 1, {"f.1": fusion, **members}, {"main": ("f.1",), "f": tuple(members)}
    )
    index = JaxOpIndex(derive_op_infos(parse_module(MOVES, make_context())))
    plan = plan_kernel(program, index, "f.1", "flops")
    shares = {instruction: fraction for fraction, _, instruction in plan.shares}
    assert shares == {"transpose.1": 0.75, "copy.1": 0.25, "bitcast.1": 0.0}

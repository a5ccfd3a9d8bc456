"""Estimated operations of imported ONNX nodes (the share basis of ORT's fused kernels), each
figure written out by hand from the node's shapes."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from irprof.frameworks.onnx.work import node_work
from irprof.mlir.context import make_context
from irprof.mlir.op_kind import op_kind

F = "f32"
MODULE = f"""
func.func @g(%x: !torch.vtensor<[?,256],{F}>, %w: !torch.vtensor<[256,32],{F}>,
             %t: !torch.vtensor<[256,3],{F}>, %i: !torch.vtensor<[1,3,8,8],{F}>,
             %k: !torch.vtensor<[4,3,3,3],{F}>, %kt: !torch.vtensor<[3,2,3,3],{F}>,
             %s: !torch.vtensor<[2,3],{F}>, %d: !torch.vtensor<[?,?],{F}>,
             %tb: !torch.vtensor<[32,256],{F}>) {{
  %0 = torch.operator "onnx.MatMul"(%x, %w) : (!torch.vtensor<[?,256],{F}>,
       !torch.vtensor<[256,32],{F}>) -> !torch.vtensor<[?,32],{F}>
  %1 = torch.operator "onnx.Gemm"(%t, %w) {{torch.onnx.transA = 1 : si64}}
       : (!torch.vtensor<[256,3],{F}>, !torch.vtensor<[256,32],{F}>) -> !torch.vtensor<[3,32],{F}>
  %2 = torch.operator "onnx.Conv"(%i, %k) : (!torch.vtensor<[1,3,8,8],{F}>,
       !torch.vtensor<[4,3,3,3],{F}>) -> !torch.vtensor<[1,4,8,8],{F}>
  %3 = torch.operator "onnx.ConvTranspose"(%i, %kt) : (!torch.vtensor<[1,3,8,8],{F}>,
       !torch.vtensor<[3,2,3,3],{F}>) -> !torch.vtensor<[1,2,10,10],{F}>
  %4 = torch.operator "onnx.Reshape"(%s, %s) : (!torch.vtensor<[2,3],{F}>,
       !torch.vtensor<[2,3],{F}>) -> !torch.vtensor<[3,2],{F}>
  %5 = torch.operator "onnx.Add"(%s, %s) : (!torch.vtensor<[2,3],{F}>,
       !torch.vtensor<[2,3],{F}>) -> !torch.vtensor<[2,3],{F}>
  %6 = torch.operator "onnx.ReduceMean"(%x) : (!torch.vtensor<[?,256],{F}>)
       -> !torch.vtensor<[?,1],{F}>
  %7 = torch.operator "onnx.MatMul"(%d, %w) : (!torch.vtensor<[?,?],{F}>,
       !torch.vtensor<[256,32],{F}>) -> !torch.vtensor<[?,32],{F}>
  %8 = torch.operator "onnx.Softmax"(%s) : (!torch.vtensor<[2,3],{F}>) -> !torch.vtensor<[2,3],{F}>
  %9 = torch.operator "onnx.MatMul"(%d, %d) : (!torch.vtensor<[?,?],{F}>,
       !torch.vtensor<[?,?],{F}>) -> !torch.vtensor<[?,?],{F}>
  %10 = torch.operator "onnx.Gemm"(%d, %tb) {{torch.onnx.transB = 1 : si64}}
       : (!torch.vtensor<[?,?],{F}>, !torch.vtensor<[32,256],{F}>) -> !torch.vtensor<[?,32],{F}>
  %12 = torch.operator "onnx.LayerNormalization"(%x) : (!torch.vtensor<[?,256],{F}>)
       -> !torch.vtensor<[?,256],{F}>
  %13 = torch.operator "onnx.ReduceMean"(%x) : (!torch.vtensor<[?,256],{F}>)
       -> !torch.vtensor<[3,1],{F}>
  %11 = torch.operator "onnx.Gemm"(%d, %w)
       : (!torch.vtensor<[?,?],{F}>, !torch.vtensor<[256,32],{F}>) -> !torch.vtensor<[?,32],{F}>
  return
}}
"""


@pytest.fixture(scope="module", name="module")
def fixture_module() -> ir.Module:
    return ir.Module.parse(MODULE, make_context())


@pytest.fixture(name="ops")
def fixture_ops(module: ir.Module) -> list[ir.Operation]:
    """The function's ops but its return (the module fixture owns them)."""
    body = module.body.operations[0].regions[0].blocks[0].operations
    return [op.operation for op in body][:-1]


def work(op: ir.Operation, output_bytes: int | None = None) -> float | None:
    return node_work(op, op_kind(op, op.name).removeprefix("onnx."), output_bytes)


def test_contractions_do_2k_operations_per_output_element(ops: list[ir.Operation]) -> None:
    batch = 3  # the symbolic batch, known from the bytes written at the fed shapes
    assert work(ops[0], output_bytes=batch * 32 * 4) == 2 * (batch * 32) * 256
    assert work(ops[0]) is None  # no size for the batch
    assert work(ops[1]) == 2 * (3 * 32) * 256  # transA: K is A's first dim
    # A's K is dynamic (a reshape before a projection): B's rows give it, as MatMul requires
    assert work(ops[7], output_bytes=batch * 32 * 4) == 2 * (batch * 32) * 256
    assert work(ops[9], output_bytes=batch * 5 * 4) is None  # K dynamic in both inputs
    # Gemm: B is (K, N), or (N, K) with transB
    assert work(ops[10], output_bytes=batch * 32 * 4) == 2 * (batch * 32) * 256
    assert work(ops[13], output_bytes=batch * 32 * 4) == 2 * (batch * 32) * 256


def test_convolutions_count_the_kernel_window(ops: list[ir.Operation]) -> None:
    assert work(ops[2]) == 2 * (1 * 4 * 8 * 8) * (3 * 3 * 3)
    assert work(ops[3]) == 2 * (1 * 3 * 8 * 8) * (2 * 3 * 3)  # each input point, scattered


def test_movement_elementwise_and_one_pass_ops(ops: list[ir.Operation]) -> None:
    assert work(ops[4]) == 0.0
    assert work(ops[5]) == 6.0
    assert work(ops[8]) == 6.0  # one pass over its input
    assert work(ops[6]) is None  # the input's batch is unknown
    # a shape-preserving pass with a dynamic input: its output's elements, as many as it read
    assert work(ops[11], output_bytes=3 * 256 * 4) == 3 * 256
    assert work(ops[11]) is None
    # a reduction writes fewer elements than it reads: no stand-in for the input's size
    assert work(ops[12], output_bytes=3 * 4) is None


def test_the_kind_of_a_generic_operator_is_its_name(ops: list[ir.Operation]) -> None:
    assert [op_kind(op, op.name) for op in ops[:2]] == ["onnx.MatMul", "onnx.Gemm"]
    assert op_kind(ops[0], "func.func") == "func.func"

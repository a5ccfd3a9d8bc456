"""A constant's op name does not place a kernel's time.

XLA's CSE merges equal constants across the whole module and keeps one user's metadata, so a
fused kernel whose only named member is such a constant says nothing about which op it runs for.
Found on Keras MobileNetV2 under `fit(jit_compile=True)`: a zero constant named
`bn_Conv1_1/moments/mean` sat in the fusions of XLA's depthwise-backprop rewrites, and 149 ms of
convolutions went to that BatchNorm `mean` (9.7% of the step, ranked #2). Kernels here are built
as HloModuleInfo records, the form `decode_hlo_proto` gives; the IR is parsed by MLIR.
"""

from __future__ import annotations

from collections import defaultdict

from iree.compiler import ir

from irprof.correlate.hlo import HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.attribution import plan_kernel
from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.frameworks.tf import xla
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

TF_MODULE = """
func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %m = "tf.Mean"(%x) : (tensor<4x8xf32>) -> tensor<4xf32> loc("bn/moments/mean")
  %r = "tf.Relu"(%m) : (tensor<4xf32>) -> tensor<4xf32> loc("block/relu")
  return %r : tensor<4xf32>
}
"""
JAX_MODULE = """
module @jit_g {
  func.func public @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
    %0 = stablehlo.constant dense<0.0> : tensor<f32> loc(#mean)
    %1 = stablehlo.reduce(%x init: %0) applies stablehlo.add across dimensions = [1]
        : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32> loc(#mean)
    return %1 : tensor<4xf32>
  }
}
#mean = loc("jit(g)/mean"("g.py":20:8))
"""


def _instruction(name: str, opcode: str, op_name: str, *, flops: float = 0.0) -> HloInstructionInfo:
    chain = ("g.py:20:8",) if op_name else ()
    return HloInstructionInfo(name, opcode, op_name, chain, flops, 32, "fused", ())


def _program(named_constant: str, *, named_compute: str = "") -> HloModuleInfo:
    """One fusion: a select (the kernel's work) and a zero constant carrying `named_constant`,
    as CSE left it; `named_compute` names the select too."""
    members = {
        "zero.1": _instruction("zero.1", "constant", named_constant),
        "select.1": _instruction("select.1", "select", named_compute, flops=32.0),
    }
    fusion = HloInstructionInfo("fusion.1", "fusion", "", (), 0.0, 32, "main", ("fused",))
    return HloModuleInfo(
        "m", 1, {"fusion.1": fusion, **members}, {"main": ("fusion.1",), "fused": tuple(members)}
    )


def test_tf_kernel_named_only_by_a_constant_is_not_given_to_the_constants_op() -> None:
    context = ir.Context()
    context.allow_unregistered_dialects = True
    view = TfOpIndex.of(ir.Module.parse(TF_MODULE, context))
    names = xla._Names(view, None)
    ops, _, _, reason = xla._own_plan(_program("bn/moments/mean"), names, "fusion.1", "default")
    assert ops == [] and reason  # unattributed with a reason, not on `mean`


def test_tf_kernel_with_a_named_compute_member_goes_to_that_op_alone() -> None:
    context = ir.Context()
    context.allow_unregistered_dialects = True
    view = TfOpIndex.of(ir.Module.parse(TF_MODULE, context))
    names = xla._Names(view, None)
    program = _program("bn/moments/mean", named_compute="block/relu")
    ops, weights, _, _ = xla._own_plan(program, names, "fusion.1", "default")
    share: dict[str | None, float] = defaultdict(float)
    for position, weight in zip(ops, weights, strict=True):
        share[view.infos[position].keys.name] += weight
    assert set(share) == {"block/relu"}


def test_jax_kernel_named_only_by_a_constant_is_not_given_to_the_constants_op() -> None:
    module = parse_module(JAX_MODULE, make_context())  # owns the ops the index refers to
    index = JaxOpIndex(derive_op_infos(module))
    plan = plan_kernel(_program("jit(g)/mean"), index, "fusion.1", "flops")
    assert plan.shares == () and "without op metadata" in plan.reason
    del module


def test_a_named_constant_still_names_nothing_when_alone_in_a_fusion_of_named_work() -> None:
    """The constant's name is ignored, not the kernel: named work keeps all of the time."""
    module = parse_module(JAX_MODULE, make_context())  # owns the ops the index refers to
    index = JaxOpIndex(derive_op_infos(module))
    program = _program("jit(g)/other", named_compute="jit(g)/mean")
    plan = plan_kernel(program, index, "fusion.1", "flops")
    assert [(fraction, instruction) for fraction, _, instruction in plan.shares] == [
        (1.0, "select.1")
    ]
    del module

"""A `dot` XLA made of `transpose(dot_general)` is timed on the dot_general.

XLA's simplifier rewrites `transpose(dot(a, b))` as one `dot` that keeps the transpose's
metadata: the weight gradient of each matmul of a JAX training step (JAX emits it as a
`dot_general` then a `transpose`) was ranked as a `transpose` (a Flax NNX block's two largest
backward kernels, 0.91 and 0.77 ms). The kernel is built as the HloModuleInfo record
`decode_hlo_proto` gives; the IR is parsed by MLIR.
"""

from __future__ import annotations

from irprof.correlate.hlo import HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.attribution import plan_kernel
from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

MODULE = """
module @jit_g {
  func.func public @main(%x: tensor<64x128xf32>, %g: tensor<64x32xf32>) -> tensor<32x128xf32> {
    %0 = stablehlo.dot_general %x, %g, contracting_dims = [0] x [0]
        : (tensor<64x128xf32>, tensor<64x32xf32>) -> tensor<128x32xf32> loc(#dot)
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<128x32xf32>) -> tensor<32x128xf32>
        loc(#t)
    %2 = stablehlo.transpose %x, dims = [1, 0] : (tensor<64x128xf32>) -> tensor<128x64xf32>
        loc(#t2)
    return %1 : tensor<32x128xf32>
  }
}
#dot = loc("jit(g)/transpose(jvp())/dot_general"("g.py":7:11))
#t = loc("jit(g)/transpose(jvp())/transpose"("g.py":7:11))
#t2 = loc("jit(g)/transpose(jvp())/transpose_x"("g.py":8:11))
"""


def _program(op_name: str, opcode: str = "dot") -> HloModuleInfo:
    dot = HloInstructionInfo("dot.21", opcode, op_name, ("g.py:7:11",), 2 * 64 * 128 * 32,
                             32 * 128, "main", ())  # fmt: skip
    return HloModuleInfo("jit_g", 1, {"dot.21": dot}, {"main": ("dot.21",)})


def _kinds(module_text: str, op_name: str, opcode: str = "dot") -> list[str]:
    module = parse_module(module_text, make_context())
    index = JaxOpIndex(derive_op_infos(module))
    plan = plan_kernel(_program(op_name, opcode), index, "dot.21", "flops")
    kinds = [index.infos[t.position].op_name for _, targets, _ in plan.shares for t in targets]
    del module
    return kinds


def test_the_dot_named_after_its_transpose_goes_to_the_dot_general_it_read() -> None:
    assert _kinds(MODULE, "jit(g)/transpose(jvp())/transpose") == ["stablehlo.dot_general"]


def test_a_transpose_of_no_dot_keeps_the_time() -> None:
    """Nothing to fold into: the transpose of an argument stays the named op."""
    name = "jit(g)/transpose(jvp())/transpose_x"
    module = MODULE.replace('"g.py":8:11', '"g.py":7:11')  # the kernel's line
    assert _kinds(module, name) == ["stablehlo.transpose"]


def test_a_kernel_of_the_transposes_own_kind_stays_on_it() -> None:
    assert _kinds(MODULE, "jit(g)/transpose(jvp())/transpose", "transpose") == [
        "stablehlo.transpose"
    ]

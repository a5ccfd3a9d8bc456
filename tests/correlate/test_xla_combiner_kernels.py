"""A reduce's combiner that XLA runs as a kernel of its own is the reduce's work.

XLA CPU splits a reduction into partial reduces named after the reducer's scalar `add`, whose
metadata is the reduce's name and line: the lookup finds the `stablehlo.add` in the reduce's
body. The printed IR shows that body as `applies stablehlo.add`, so an annotation there is lost
on the way to the file: a `jnp.sum` in a `lax.cond` predicate lost 7.9 us of 395 us in `top`
while coverage counted them. The time goes to the reduce; the kernels are built as the
HloModuleInfo records `decode_hlo_proto` gives, the IR parsed by MLIR.
"""

from __future__ import annotations

from irprof.correlate.hlo import HloInstructionInfo, HloModuleInfo
from irprof.correlate.payload import payload_owners
from irprof.correlate.xla_thunks import ThunkEvent
from irprof.frameworks.jax.attribution import attribute_thunks
from irprof.frameworks.jax.ir_index import JaxOpIndex
from irprof.frameworks.tf import xla
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.op_index import derive_op_infos

MODULE = """
module @jit_f {
  func.func public @main(%x: tensor<32x64xf32>) -> tensor<f32> {
    %cst = stablehlo.constant dense<0.0> : tensor<f32> loc(#sum)
    %0 = stablehlo.reduce(%x init: %cst) applies stablehlo.add across dimensions = [0, 1]
        : (tensor<32x64xf32>, tensor<f32>) -> tensor<f32> loc(#sum)
    return %0 : tensor<f32>
  }
}
#sum = loc("jit(f)/reduce_sum"("f.py":10:24))
"""
CHAIN = ("f.py:10:24",)


def _program() -> HloModuleInfo:
    """The reducer's `add` as a kernel of its own, and the reduce in another."""
    add = HloInstructionInfo("reduce_sum.2", "add", "jit(f)/reduce_sum", CHAIN, 1.0, 1, "main", ())
    reduce = HloInstructionInfo(
        "reduce_sum.6", "reduce", "jit(f)/reduce_sum", CHAIN, 2048.0, 1, "main", ()
    )
    return HloModuleInfo(
        "jit_f", 1, {"reduce_sum.2": add, "reduce_sum.6": reduce},
        {"main": ("reduce_sum.2", "reduce_sum.6")},
    )  # fmt: skip


def test_a_combiner_kernel_is_timed_on_its_reduce() -> None:
    module = parse_module(MODULE, make_context())
    infos = derive_op_infos(module)
    reduce = next(p for p, info in enumerate(infos) if info.op_name == "stablehlo.reduce")
    body_add = next(p for p, info in enumerate(infos) if info.op_name == "stablehlo.add")
    events = [
        ThunkEvent(0, "reduce_sum.2", "reduce_sum.2", 1_000, 700),
        ThunkEvent(1, "reduce_sum.6", "reduce_sum.6", 2_000, 300),
    ]
    ledger = attribute_thunks(events, _program(), JaxOpIndex(infos), "flops").ledger
    entries = ledger.entries(infos, 1_000, location_of=lambda info: "", name_of=str)
    assert set(entries) == {reduce} and body_add not in entries
    assert entries[reduce].data.total_ns == 700 + 300
    del module


def test_tf_xla_plans_put_a_combiner_on_its_reduce() -> None:
    """The same at TF's `xla` level (StableHLO translated from the TF graph)."""
    module = parse_module(MODULE, make_context())
    view = TfOpIndex.of(module)
    names = [info.op_name for info in view.infos]
    reduce, body_add = names.index("stablehlo.reduce"), names.index("stablehlo.add")
    owners = payload_owners(view.infos)
    plan = xla._to_payload_owners(([body_add, reduce], [1.0, 2048.0], "flops", ""), owners)
    assert plan == ([reduce], [2049.0], "flops", "")
    untouched = ([reduce], [5.0], "even", "")
    assert xla._to_payload_owners(untouched, owners) is untouched
    del module

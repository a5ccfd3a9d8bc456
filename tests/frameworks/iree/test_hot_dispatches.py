"""Which dispatches `irprof tune` tunes: the ones with the most time of their own, measured from
their events, never an op's time spread over the dispatches it ran in."""

from __future__ import annotations

from irprof.frameworks.iree.tune import TuneOptions, hot_dispatches
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module
from irprof.mlir.profile_attrs import attach_profile
from irprof.opprofile import ProfileData

MODULE = """
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("conv")
  %1 = stablehlo.tanh %0 : tensor<4x4xf32> loc("act")
  return %1 : tensor<4x4xf32>
}
"""


def profile(total_ns: int, kernels: tuple[str, ...]) -> ProfileData:
    return ProfileData(
        count=3, total_ns=total_ns, mean_ns=total_ns // 3, min_ns=0, max_ns=total_ns,
        first_ts_ns=0, fraction=0.0, kernels=kernels,
    )  # fmt: skip


def test_an_op_in_two_dispatches_does_not_make_the_small_one_hot() -> None:
    """Flax U-Net through IREE: a convolution ran in its own dispatch (1.29 ms) and in a 2 us
    transpose that lays out its input; halving the op's time between them made the transpose
    the second hottest dispatch, at 21%."""
    module = parse_module(MODULE, make_context())
    conv, act = list(module.body.operations[0].regions[0].blocks[0].operations)[:2]
    attach_profile(conv.operation, profile(1_000, ("d_conv", "d_layout")))
    attach_profile(act.operation, profile(300, ("d_act",)))
    measured = {"d_conv": 990, "d_layout": 10, "d_act": 300}
    hot, total = hot_dispatches(module, measured, TuneOptions(max_dispatches=3, min_share=0.05))
    assert total == 1_300
    assert [(h.symbol, h.total_ns) for h in hot] == [("d_conv", 990), ("d_act", 300)]
    assert hot[0].share == 990 / 1_300
    assert [entry["key"] for entry in hot[0].ops] == ["name:conv"]

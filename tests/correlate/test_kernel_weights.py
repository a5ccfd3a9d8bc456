"""How one XLA kernel's time is split over the instructions it runs (JAX and TF's XLA clusters):
by FLOPs, unless the kernel moves more elements than it computes FLOPs, then by the elements
each instruction writes. The weights expected here are worked out from the instructions' FLOPs
and elements by hand.

The case that made the rule: a Flax `nn.scan` backward pass slices each layer's weights out of
the stacked ones with a fusion of `subtract` (the reversed index, 1 FLOP) and `dynamic-slice`
(4096 elements): by FLOPs alone the scalar index took the whole slice's time, and ranked as a
hot op.
"""

from __future__ import annotations

import pytest

from irprof.correlate.hlo import HloInstructionInfo, kernel_weights


def member(opcode: str, flops: float, elements: int) -> HloInstructionInfo:
    return HloInstructionInfo(f"{opcode}.1", opcode, "", (), flops, elements, "fused", ())


N = 64 * 64


@pytest.mark.parametrize(
    ("members", "weights", "basis"),
    [
        # a scalar index beside the slice it computes: the slice's elements decide
        (
            [member("subtract", 1, 1), member("dynamic-slice", 0, N), member("bitcast", 0, N)],
            [1.0, float(N), 0.0],
            "bytes",
        ),
        # a matmul and the transpose of its result: the FLOPs decide
        (
            [member("dot", 2 * 64**3, N), member("transpose", 0, N)],
            [float(2 * 64**3), 0.0],
            "flops",
        ),
        # the boundary: as many FLOPs as moved elements stays with FLOPs ...
        ([member("add", N, N), member("transpose", 0, N)], [float(N), 0.0], "flops"),
        # ... one element more goes by elements
        (
            [member("add", N, N), member("transpose", 0, N + 1)],
            [float(N), float(N + 1)],
            "bytes",
        ),
        # a broadcast or reshape inside a kernel is an index mapping, not moved data
        (
            [member("multiply", N, N), member("broadcast", 0, 8 * N), member("reshape", 0, N)],
            [float(N), 0.0, 0.0],
            "flops",
        ),
        # no FLOPs at all: what each instruction writes (free ones nothing)
        (
            [member("copy", 0, N), member("pad", 0, 2 * N), member("parameter", 0, N)],
            [float(N), float(2 * N), 0.0],
            "bytes",
        ),
        # nothing written and nothing computed: even
        ([member("bitcast", 0, N), member("tuple", 0, 0)], [1.0, 1.0], "even"),
    ],
)
def test_kernel_weights(
    members: list[HloInstructionInfo], weights: list[float], basis: str
) -> None:
    assert kernel_weights(members) == (weights, basis)

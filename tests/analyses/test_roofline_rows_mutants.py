"""Rows of `top --by type`, `--by scope` and group rows on the roofline: which ops each row
stands for, their runs, FLOPs and bytes, and the fields a point copies from its row.

Written from the survivors of `analyses/roofline.py`, whose tests put only single ops of `--by
op` tables on the roofline. The module below has three profiled ops and one without a profile;
each op's cost is worked out here from its shapes (a matmul of M x K by K x N does 2 M N K
FLOPs and moves its two inputs, its init and its result, 4 bytes each), never read from the
cost model.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from iree.compiler import ir

from irprof.analyses.hotspots import HotspotRow, HotspotTable
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.analyses.roofline import Roofline, RooflineOptions, RooflinePoint, roofline
from irprof.errors import BundleError
from irprof.mlir.context import make_context
from irprof.opprofile import ProfileData

MODULE = """
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>,
             %x: tensor<?x8xf32>, %t: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%m : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = linalg.transpose ins(%n : tensor<4x16xf32>) outs(%t : tensor<16x4xf32>)
                        permutation = [1, 0]
  %d = linalg.matmul ins(%x, %b : tensor<?x8xf32>, tensor<8x16xf32>)
                     outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %e : tensor<16x4xf32>
}
"""

F32 = 4
MATMUL_FLOPS = 2 * 4 * 16 * 8
MATMUL_BYTES = (4 * 8 + 8 * 16 + 4 * 16 + 4 * 16) * F32  # a, b, the init and the result
TRANSPOSE_BYTES = (4 * 16 + 16 * 4) * F32  # read once, written once
# %m and %n as one kernel: %m stays inside; a, b and c are read, %n written
GROUP_BYTES = (4 * 8 + 8 * 16 + 4 * 16 + 4 * 16) * F32
PEAKS = MachinePeaks(100.0, 10.0, "given")
OPTIONS = RooflineOptions(1_000, 0.2)


def profile(
    count: int, total_ns: int, kernels: tuple[str, ...] = (), group: str = ""
) -> ProfileData:
    return ProfileData(count, total_ns, total_ns // count, 1, total_ns, 0, 0.25, kernels,
                       group=group, group_size=2 if group else 0)  # fmt: skip


def parsed() -> tuple[ir.Module, ProfiledModule, dict[str, int]]:
    """The module, its ops with profiles and scopes, and the walk index of each named op."""
    context = make_context()
    with context:
        module = ir.Module.parse(MODULE)
        plain = profiled_ops_of(module)
    matmuls = [op.index for op in plain.ops if op.op_name == "linalg.matmul"]
    index = {
        "m": matmuls[0],
        "n": matmuls[1],
        "d": matmuls[2],
        "e": next(op.index for op in plain.ops if op.op_name == "linalg.transpose"),
    }
    # %m: 6 events of 2 kernels (3 runs); %n: 5 events; %e: 2 events; %d: no profile
    changes = {
        index["m"]: {"profile": profile(6, 6_000, ("k1", "k2"), "g"), "scope": "dense"},
        index["n"]: {"profile": profile(5, 5_000, (), "g"), "scope": "dense"},
        index["e"]: {"profile": profile(2, 2_000)},
        index["d"]: {"scope": "dense"},
    }
    ops = tuple(replace(op, **changes.get(op.index, {})) for op in plain.ops)  # type: ignore[arg-type]
    return module, replace(plain, path="run/ir/linalg.mlir", ops=ops), index


def row(key: str, op_index: int, **fields: object) -> HotspotRow:
    base = HotspotRow(
        key=key, op_name="linalg.matmul", total_ns=1_000_000, share=0.5, count=1, mean_ns=1,
        ops=1, kernels=(), fused_with=(), location="m.py:1:1", op_index=op_index,
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


def expected(source: HotspotRow, runs: int, flops: int | None, moved: int | None,
             category: str) -> RooflinePoint:  # fmt: skip
    return RooflinePoint(
        key=source.key, op_name=source.op_name, location=source.location,
        op_index=source.op_index, group=source.group, ops=source.ops,
        total_ns=source.total_ns, share=source.share, estimated=source.estimated_ns > 0,
        executions=runs, category=category, flops=flops, bytes=moved, peaks=PEAKS,
        options=OPTIONS,
    )  # fmt: skip


def chart(table: HotspotTable) -> Roofline:
    module, profiled, _ = parsed()
    with module.context:
        return roofline(table, profiled, module, level="linalg", peaks=PEAKS, options=OPTIONS)


def test_rows_by_type_add_up_their_ops_runs() -> None:
    _, _, index = parsed()
    matmul = row("linalg.matmul", index["m"], ops=3, share=0.75, total_ns=11_000)
    transpose = row("linalg.transpose", index["e"], op_name="linalg.transpose", share=0.125,
                    total_ns=2_000, estimated_ns=1)  # fmt: skip
    table = HotspotTable("type", (matmul, transpose), 13_000, 13_000)
    result = chart(table)
    # matmuls: 3 runs of %m and 5 of %n; %d has no profile, so its unknown bytes do not count
    assert result == Roofline(
        "linalg", "type", PEAKS, OPTIONS,
        (expected(matmul, 3 + 5, 8 * MATMUL_FLOPS, 8 * MATMUL_BYTES, "matmul"),
         expected(transpose, 2, 0, 2 * TRANSPOSE_BYTES, "copy")),
    )  # fmt: skip


def test_rows_by_scope_and_the_ops_without_one() -> None:
    _, _, index = parsed()
    dense = row("dense", index["n"], ops=2, estimated_ns=0)
    unscoped = row("(no scope)", index["e"], op_name="linalg.transpose", estimated_ns=7)
    result = chart(HotspotTable("scope", (dense, unscoped), 13_000, 13_000))
    assert result.points == (
        expected(dense, 3 + 5, 8 * MATMUL_FLOPS, 8 * MATMUL_BYTES, "matmul"),
        expected(unscoped, 2, 0, 2 * TRANSPOSE_BYTES, "copy"),
    )
    assert (result.level, result.by, result.options) == ("linalg", "scope", OPTIONS)


def test_a_group_row_is_one_kernel_of_all_its_members() -> None:
    _, _, index = parsed()
    # the group's 4 events of one kernel: 4 runs of both matmuls together
    group = row("g", index["n"], ops=2, group="g", count=4, kernels=("fused",), share=0.3)
    single = row("t", index["e"], op_name="linalg.transpose", count=2, estimated_ns=1)
    result = chart(HotspotTable("op", (group, single), 13_000, 13_000))
    assert result.points == (
        expected(group, 4, 4 * 2 * MATMUL_FLOPS, 4 * GROUP_BYTES, "matmul"),
        expected(single, 2, 0, 2 * TRANSPOSE_BYTES, "copy"),
    )
    assert result.points[1].estimated and not result.points[0].estimated


def test_a_row_of_one_op_by_op() -> None:
    _, _, index = parsed()
    # 6 events of 2 kernels: 3 runs; a row without a group is its own op, even when the op's
    # profile names one
    single = row("m", index["m"], count=6, kernels=("k1", "k2"))
    result = chart(HotspotTable("op", (single,), 6_000, 6_000))
    assert result.points == (expected(single, 3, 3 * MATMUL_FLOPS, 3 * MATMUL_BYTES, "matmul"),)


def test_a_module_that_changed_under_its_profile() -> None:
    module, profiled, index = parsed()
    shorter = replace(profiled, ops=profiled.ops[:-1])
    table = HotspotTable("op", (row("m", index["m"]),), 1, 1)
    with module.context, pytest.raises(BundleError) as error:
        roofline(table, shorter, module, level="linalg", peaks=PEAKS)
    assert str(error.value) == "run/ir/linalg.mlir: the module changed under its profiled ops"

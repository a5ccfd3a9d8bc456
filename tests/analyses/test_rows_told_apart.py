"""Rows of one name told apart by the function arguments their op reads.

A Flax NNX model called as `nnx.merge(graphdef, state)(x)` has no name stack: its attention's
query, key, value and output projections are each `jit(forward)/dot_general`, on one line of
the script. JAX names each leaf of the function's arguments (`loc("state['attn']['query']
['kernel'].value")`), which says which weights each op reads.
"""

from __future__ import annotations

from iree.compiler import ir

from irprof.analyses.hotspots import hotspots
from irprof.analyses.profiled_ops import profiled_ops_of
from irprof.mlir.context import make_context
from irprof.mlir.profile_attrs import attach_profile
from irprof.opprofile import ProfileData

MODULE = """
module {
  func.func @main(%q: tensor<4x4xf32> loc("state['attn']['query']['kernel'].value"),
                  %k: tensor<4x4xf32> loc("state['attn']['key']['kernel'].value"),
                  %x: tensor<4x4xf32> loc("x"), %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = arith.mulf %x, %q : tensor<4x4xf32> loc("jit(forward)/dot_general"("m.py":15:25))
    %1 = arith.mulf %x, %k : tensor<4x4xf32> loc("jit(forward)/dot_general"("m.py":15:25))
    %2 = arith.mulf %0, %1 : tensor<4x4xf32> loc("jit(forward)/dot_general"("m.py":15:25))
    %3 = arith.addf %2, %b : tensor<4x4xf32> loc("jit(forward)/add"("m.py":16:1))
    %4 = arith.addf %3, %x : tensor<4x4xf32> loc("jit(forward)/add_1"("m.py":16:1))
    return %4 : tensor<4x4xf32>
  }
}
"""


def rows_by_time() -> dict[int, str]:
    """Row key by the op's time (each op timed differently so rows are found by their ns)."""
    with make_context():
        module = ir.Module.parse(MODULE)
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        for position, op in enumerate(ops[:5]):
            ns = 1_000 * (position + 1)
            attach_profile(
                op, ProfileData.from_durations([ns], 0, 100_000, kernels=[f"k{position}"])
            )
        profiled = profiled_ops_of(module)
    table = hotspots(profiled.ops, stat="sum")
    return {row.total_ns: row.key for row in table.rows}


def test_each_op_lists_the_named_arguments_it_reads() -> None:
    with make_context():
        profiled = profiled_ops_of(ir.Module.parse(MODULE))
    reads = {op.index: op.inputs for op in profiled.ops if op.op_name.startswith("arith.")}
    assert sorted(reads.values()) == sorted(
        [
            ("state['attn']['query']['kernel'].value", "x"),
            ("state['attn']['key']['kernel'].value", "x"),
            (),  # %2 reads results only
            (),  # %3 reads an argument without a name
            ("x",),
        ]
    )


def test_rows_of_one_name_show_the_arguments_only_they_read() -> None:
    keys = rows_by_time()
    # x is read by both projections: it tells nothing apart and is not shown.
    assert keys[1_000] == "jit(forward)/dot_general [state.attn.query.kernel.value]"
    assert keys[2_000] == "jit(forward)/dot_general [state.attn.key.kernel.value]"
    # The product reads no argument: it keeps the name.
    assert keys[3_000] == "jit(forward)/dot_general"
    # Names that are unique stay as they are, even when their op reads a named argument.
    assert (keys[4_000], keys[5_000]) == ("jit(forward)/add", "jit(forward)/add_1")

"""XLA's sharding annotations removed before IREE compiles a framework's StableHLO.

JAX's GSPMD lowering writes `with_sharding_constraint` (Flax NNX constrains its RNG keys on an
empty mesh) as `stablehlo.custom_call @Sharding(%x) {mhlo.sharding = ...}`: an identity that only
says how `%x` is laid out across devices. IREE's StableHLO input rejects it ("failed to legalize
operation 'stablehlo.custom_call'"); on the one device irprof runs IREE on, the annotated value
is the value itself, so its users read `%x` directly. The IR level kept in the bundle is the
framework's, annotations included; the correlator reports them as ops IREE did not keep.
"""

from __future__ import annotations

from iree.compiler import ir

SHARDING_TARGET = "Sharding"  # XLA's `kShardingCustomCallTarget`


def is_sharding_annotation(op: ir.Operation) -> bool:
    """A `stablehlo.custom_call @Sharding` of one value to a value of the same type."""
    if op.name != "stablehlo.custom_call" or len(op.operands) != 1 or len(op.results) != 1:
        return False
    if "call_target_name" not in op.attributes:
        return False
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    return bool(target == SHARDING_TARGET and op.operands[0].type == op.results[0].type)


def drop_sharding_annotations(module: ir.Module) -> int:
    """Replace every sharding annotation in `module` by its operand; return how many."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if is_sharding_annotation(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()
    return len(found)

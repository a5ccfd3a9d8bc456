"""Annotate speed: a 100,000-op module, every op with a distinct location, every op annotated.

Reports parse, annotate (derive keys + match + attach) and print seconds, and the ratio of
irprof's parse+annotate+print to the bindings' bare parse+print of the same text in the same
process (target: at most 1.3x).
Usage: `.venv/bin/python benchmarks/bench_annotate.py [N [REPEATS]]` (best of REPEATS=3).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from iree.compiler import ir

from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.passes.annotate import apply_opprofile

T = TypeVar("T")


def make_module_text(ops: int) -> str:
    """A function of `ops` chained i64 adds, op k at `"layer_k/add"("model.py":k:5)`."""
    lines = ["func.func @main(%arg0: i64) -> i64 {"]
    previous = "%arg0"
    for k in range(ops):
        location = f'loc("layer_{k}/add"("model.py":{k + 1}:5))'
        lines.append(f"  %v{k} = arith.addi {previous}, %arg0 : i64 {location}")
        previous = f"%v{k}"
    lines.append(f"  return {previous} : i64")
    lines.append("}")
    return "\n".join(lines)


def make_profile(ops: int) -> OpProfile:
    """One entry per op, keyed by runtime name, distinct data each."""
    entries = tuple(
        OpProfileEntry(
            OpKey(name=f"layer_{k}/add"),
            ProfileData.from_durations(
                [1000 + k, 900 + k], 10 * k, ops * 2000, kernels=[f"layer_{k}/add:AddV2"]
            ),
        )
        for k in range(ops)
    )
    return OpProfile(level="bench", framework="bench", entries=entries)


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """`fn()` and its wall time in seconds."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bare_parse_print(text: str, context: ir.Context) -> tuple[float, float]:
    """The bindings alone: parse, print with debug info."""
    module, parse_s = timed(lambda: ir.Module.parse(text, context))

    def print_it() -> str:
        buffer = io.StringIO()
        module.operation.print(file=buffer, enable_debug_info=True, assume_verified=True)
        return buffer.getvalue()

    _, print_s = timed(print_it)
    return parse_s, print_s


def bare_annotate_by_position(text: str, profile: OpProfile, context: ir.Context) -> float:
    """The bindings alone doing the same annotation with no keys: op k gets entry k."""
    start = time.perf_counter()
    module = ir.Module.parse(text, context)
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "arith.addi":
            ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    i64 = ir.IntegerType.get_signless(64, context)
    f64 = ir.F64Type.get(context)
    unknown = ir.Location.unknown(context)
    for op, entry in zip(ops, profile.entries, strict=True):
        data = entry.data
        fields = {
            name: ir.IntegerAttr.get(i64, getattr(data, name))
            for name in ("count", "total_ns", "mean_ns", "min_ns", "max_ns", "first_ts_ns")
        }
        fields["fraction"] = ir.FloatAttr.get(f64, data.fraction, unknown)
        fields["kernels"] = ir.ArrayAttr.get(
            [ir.StringAttr.get(k, context) for k in data.kernels], context
        )
        fields["fused_with"] = ir.ArrayAttr.get([], context)
        fields["source"] = ir.StringAttr.get(data.source, context)
        op.attributes["irprof.profile"] = ir.DictAttr.get(fields, context)
    buffer = io.StringIO()
    module.operation.print(file=buffer, enable_debug_info=True, assume_verified=True)
    return time.perf_counter() - start


def irprof_parse_annotate_print(
    text: str, profile: OpProfile, context: ir.Context
) -> tuple[float, float, float, str]:
    """irprof's path: load_module, apply_opprofile (keys, index, attach), print_module."""
    module, parse_s = timed(lambda: load_module(text, context))
    applied, annotate_s = timed(lambda: apply_opprofile(module, profile))
    printed, print_s = timed(lambda: print_module(module, debug_info=True))
    assert len(applied.annotated) == len(profile.entries) and not applied.unmatched_entries
    return parse_s, annotate_s, print_s, printed


def main(ops: int, repeats: int) -> None:
    """Run each measurement `repeats` times and report the fastest (the machine is shared)."""
    text = make_module_text(ops)
    profile = make_profile(ops)
    context = make_context()
    bare_runs = [bare_parse_print(text, context) for _ in range(repeats)]
    bare_parse = min(run[0] for run in bare_runs)
    bare_print = min(run[1] for run in bare_runs)
    runs = [irprof_parse_annotate_print(text, profile, context) for _ in range(repeats)]
    parse_s, annotate_s, print_s = (min(run[k] for run in runs) for k in range(3))
    printed = runs[-1][3]
    assert printed.count("irprof.profile = {") == ops
    by_hand = min(bare_annotate_by_position(text, profile, context) for _ in range(repeats))
    bare = bare_parse + bare_print
    irprof_total = parse_s + annotate_s + print_s
    sizes = f"text {len(text) / 1e6:.1f} MB, annotated output {len(printed) / 1e6:.1f} MB"
    print(f"ops: {ops:,} ({sizes}); best of {repeats}")
    print(f"bindings bare:  parse {bare_parse:.2f} s, print {bare_print:.2f} s, total {bare:.2f} s")
    print(
        f"irprof:         parse {parse_s:.2f} s, annotate {annotate_s:.2f} s, "
        f"print {print_s:.2f} s, total {irprof_total:.2f} s"
    )
    print(f"ratio irprof / bare parse+print: {irprof_total / bare:.2f}x (target <= 1.3x)")
    print(
        f"bindings by hand (parse, set the same attribute on op k from entry k, print): "
        f"{by_hand:.2f} s; irprof / by hand: {irprof_total / by_hand:.2f}x"
    )


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 3,
    )

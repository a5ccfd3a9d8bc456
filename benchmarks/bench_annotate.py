"""Annotate speed: a 100,000-op module, every op with a distinct location, every op annotated.

Three paths, each run in its own fresh `ir.Context` (a shared context keeps the attributes and
locations an earlier run interned, which made later parses faster and later attribute builds
slower for reasons unrelated to irprof), interleaved and repeated; the best of N is reported:
- bare:    the bindings parse and print the input (the issue's baseline);
- irprof:  `load_module`, `apply_opprofile` (keys, index, match, attributes, set), `print_module`;
- by hand: the bindings parse, walk, build the same `irprof.profile` dictionary for op k from
           entry k (no keys, no matching) with `DictAttr.get`, set it, print.
A fourth run times the steps inside `apply_opprofile` one by one. The cyclic GC is paused in the
irprof and by-hand annotation alike (irprof does it itself). The printed irprof and by-hand
outputs are checked equal (but for the module's `irprof.summary`), so both do the same work.
Usage: `.venv/bin/python benchmarks/bench_annotate.py [N [REPEATS]]` (default 100000 3).
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from iree.compiler import ir

from irprof.mlir.apply_profile import apply_opprofile
from irprof.mlir.context import make_context
from irprof.mlir.gc_pause import gc_paused
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import OpIndex, derive_op_keys
from irprof.mlir.profile_attrs import PROFILE_ATTR, AttributeBuilder
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

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


@dataclass
class Phases:
    """Seconds per named phase of one run, in the order they ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    def timed(self, name: str, fn: Callable[[], T]) -> T:
        """Run `fn`, record its wall time under `name`, return its result."""
        start = time.perf_counter()
        result = fn()
        self.seconds[name] = time.perf_counter() - start
        return result

    @property
    def total(self) -> float:
        """Sum of the phases."""
        return sum(self.seconds.values())


def _print(module: ir.Module) -> str:
    # The bindings' fastest way to text (one buffer), the same call irprof's print_module makes.
    printed: bytes = module.operation.get_asm(
        binary=True, enable_debug_info=True, assume_verified=True
    )
    return printed.decode("utf-8")


def run_bare(text: str) -> tuple[Phases, str]:
    """The bindings alone: parse, print with debug info."""
    run = Phases()
    module = run.timed("parse", lambda: ir.Module.parse(text, ir.Context()))
    return run, run.timed("print", lambda: _print(module))


def run_irprof(text: str, profile: OpProfile) -> tuple[Phases, str]:
    """irprof's path: load_module, apply_opprofile (keys, index, attach), print_module."""
    run = Phases()
    module = run.timed("parse", lambda: load_module(text, make_context()))
    applied = run.timed("annotate", lambda: apply_opprofile(module, profile))
    assert len(applied.annotated) == len(profile.entries) and not applied.unmatched_entries
    return run, run.timed("print", lambda: print_module(module, debug_info=True))


def run_by_hand(text: str, profile: OpProfile) -> tuple[Phases, str]:
    """The bindings annotating op k with entry k's dictionary (no keys), the natural way."""
    run = Phases()
    context = ir.Context()
    module = run.timed("parse", lambda: ir.Module.parse(text, context))

    def annotate() -> None:
        ops: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "arith.addi":
                ops.append(op)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        i64 = ir.IntegerType.get_signless(64, context)
        f64 = ir.F64Type.get(context)
        unknown = ir.Location.unknown(context)
        empty = ir.ArrayAttr.get([], context)
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
            fields["fused_with"] = empty
            fields["source"] = ir.StringAttr.get(data.source, context)
            op.attributes[PROFILE_ATTR] = ir.DictAttr.get(fields, context)

    with gc_paused():
        run.timed("annotate", annotate)
    return run, run.timed("print", lambda: _print(module))


def run_apply_phases(text: str, profile: OpProfile) -> Phases:
    """The steps of `apply_opprofile` timed one by one (same calls, fresh context)."""
    run = Phases()
    context = make_context()
    module = load_module(text, context)
    with gc_paused():
        keyed = run.timed("derive keys", lambda: derive_op_keys(module))
        index = OpIndex(keyed)
        matched = run.timed(
            "index+match", lambda: [index.match_positions(e.key) for e in profile.entries]
        )
        builder = AttributeBuilder(context)
        attributes = run.timed(
            "build attrs", lambda: builder.profiles([e.data for e in profile.entries])
        )

        def set_all() -> None:
            for attribute, positions in zip(attributes, matched, strict=True):
                for position in positions:
                    index.op_at(position).operation.attributes[PROFILE_ATTR] = attribute

        run.timed("set attrs", set_all)
    return run


def _but_module_line(printed: str) -> list[str]:
    """The printed lines but the module op's own (where irprof adds `irprof.summary`)."""
    return [line for line in printed.split("\n") if not line.startswith("module")]


def _best(runs: list[Phases]) -> Phases:
    """Per-phase minimum; the total is the fastest whole run, not the sum of minima."""
    best = Phases({name: min(r.seconds[name] for r in runs) for name in runs[0].seconds})
    return best


def _line(label: str, runs: list[Phases]) -> str:
    best = _best(runs)
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.seconds.items())
    return f"{label:<9} {phases}; total {min(r.total for r in runs):.2f} s"


def main(ops: int, repeats: int) -> None:
    """Interleave the paths `repeats` times, each in a fresh context; report the fastest."""
    text = make_module_text(ops)
    profile = make_profile(ops)
    bare: list[Phases] = []
    irprof: list[Phases] = []
    by_hand: list[Phases] = []
    steps: list[Phases] = []
    for _ in range(repeats):
        run, bare_out = run_bare(text)
        bare.append(run)
        run, irprof_out = run_irprof(text, profile)
        irprof.append(run)
        run, by_hand_out = run_by_hand(text, profile)
        by_hand.append(run)
        assert _but_module_line(irprof_out) == _but_module_line(by_hand_out)
        steps.append(run_apply_phases(text, profile))
        del by_hand_out
        gc.collect()
    b, i, h = (min(r.total for r in runs) for runs in (bare, irprof, by_hand))
    bare_print, irprof_print = _best(bare).seconds["print"], _best(irprof).seconds["print"]
    sizes = (
        f"text {len(text) / 1e6:.1f} MB, printed bare {len(bare_out) / 1e6:.1f} MB, "
        f"annotated {len(irprof_out) / 1e6:.1f} MB"
    )
    print(f"ops: {ops:,} ({sizes}); best of {repeats}, each run in a fresh context")
    print(_line("bare", bare))
    print(_line("irprof", irprof))
    print(_line("by hand", by_hand))
    print(f"apply_opprofile steps: {_line('', steps).strip()}")
    print(f"irprof / bare parse+print:     {i / b:.2f}x (target <= 1.3x)")
    print(f"irprof / by hand:              {i / h:.2f}x")
    print(
        f"excluding the larger output's print (irprof print {irprof_print:.2f} s counted as the "
        f"bare print {bare_print:.2f} s): {(i - irprof_print + bare_print) / b:.2f}x bare"
    )


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 3,
    )

"""Annotate speed: a 100,000-op module, every op with a distinct location, every op annotated.

Each path runs in its own fresh process (a shared context or heap keeps what an earlier run
interned, which made later parses faster and later attribute builds slower for reasons
unrelated to irprof); the paths alternate, REPEATS rounds, and the median of each is reported:
- bare:    the bindings parse and print the input (the issue's baseline, the reference);
- irprof:  `load_module`, `apply_opprofile` (keys, index, match, attributes, set), `print_module`;
- compact: the same with `layout="compact"` (one columnar table on the module, a row per op);
- by hand: the bindings parse, walk, build the same `irprof.profile` dictionary for op k from
           entry k (no keys, no matching) with `DictAttr.get`, set it, print;
- steps:   the steps inside `apply_opprofile` timed one by one (irprof layout);
- compact steps: the same for `layout="compact"` (keys, match, table, row attributes, set).
The cyclic GC is paused in the irprof and by-hand annotation alike (irprof does it itself).
Before timing, on a small module, the irprof and by-hand outputs are checked equal (but for the
module's `irprof.summary`) and every op of the compact output is checked to read back the
profile its entry holds, so the paths do the same work.
Usage: `.venv/bin/python benchmarks/bench_annotate.py [N [REPEATS [PATHS]]]` (default 100000 5,
every path; PATHS is a comma-separated subset, e.g. `bare,compact,compact steps`; bare is always
run, as the reference).
"""

from __future__ import annotations

import json
import statistics
import subprocess
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
from irprof.mlir.op_index import OpIndex, derive_key_columns, derive_op_keys
from irprof.mlir.profile_attrs import PROFILE_ATTR, AttributeBuilder, Layout, get_profile
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR, row_attributes, table_attribute
from irprof.mlir.safe_parse import prescan_mlir
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
    cpu: dict[str, float] = field(default_factory=dict)  # process CPU time, steadier on a busy host

    def timed(self, name: str, fn: Callable[[], T]) -> T:
        """Run `fn`, record its wall and CPU time under `name`, return its result."""
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        self.seconds[name] = time.perf_counter() - start
        self.cpu[name] = time.process_time() - start_cpu
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


def run_irprof(text: str, profile: OpProfile, layout: Layout = "irprof") -> tuple[Phases, str]:
    """irprof's path: load_module, apply_opprofile (keys, index, attach), print_module."""
    run = Phases()
    module = run.timed("parse", lambda: load_module(text, make_context()))
    applied = run.timed("annotate", lambda: apply_opprofile(module, profile, layout=layout))
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


def run_compact_phases(text: str, profile: OpProfile) -> Phases:
    """The steps of `apply_opprofile(layout="compact")` timed one by one (same calls as
    `write_table`, fresh context, a module without an earlier table)."""
    run = Phases()
    context = make_context()
    module = load_module(text, context)
    with gc_paused():
        index = OpIndex.of_columns(run.timed("derive keys", lambda: derive_key_columns(module)))
        found = run.timed("match", lambda: index.match_many([e.key for e in profile.entries]))
        datas = [e.data for e in profile.entries]
        table = run.timed("table", lambda: table_attribute(datas, context))
        module.operation.attributes[TABLE_ATTR] = table
        rows = run.timed("row attrs", lambda: row_attributes(len(datas), context))
        ops = index.ops

        def set_all() -> None:
            for attribute, positions in zip(rows, found, strict=True):
                for position in positions:
                    attributes = ops[position].attributes
                    attributes[ROW_ATTR] = attribute
                    for name in (PROFILE_ATTR, "profiler_data"):
                        if name in attributes:
                            del attributes[name]

        run.timed("set rows", set_all)
    return run


def _but_module_line(printed: str) -> list[str]:
    """The printed lines but the module op's own (where irprof adds `irprof.summary`)."""
    return [line for line in printed.split("\n") if not line.startswith("module")]


def check_paths(ops: int) -> None:
    """The irprof and by-hand outputs agree; the compact output reads back every entry."""
    text, profile = make_module_text(ops), make_profile(ops)
    _, irprof_out = run_irprof(text, profile)
    _, by_hand_out = run_by_hand(text, profile)
    assert _but_module_line(irprof_out) == _but_module_line(by_hand_out)
    _, compact_out = run_irprof(text, profile, "compact")
    module = load_module(compact_out, make_context())
    adds = [op for op, _ in derive_op_keys(module) if op.name == "arith.addi"]
    assert [get_profile(op) for op in adds] == [entry.data for entry in profile.entries]


def run_one(path: str, ops: int) -> dict[str, object]:
    """One run of `path` in this (fresh) process: its phases and output size."""
    text = make_module_text(ops)
    profile = make_profile(ops)
    if path in ("steps", "compact steps"):
        phases = run_apply_phases if path == "steps" else run_compact_phases
        steps = phases(text, profile)
        return {"seconds": steps.seconds, "cpu": steps.cpu, "size": 0}
    if path == "bare":
        run, out = run_bare(text)
    elif path == "by hand":
        run, out = run_by_hand(text, profile)
    else:
        run, out = run_irprof(text, profile, "compact" if path == "compact" else "irprof")
    size = len(out.encode("utf-8"))
    result: dict[str, object] = {
        "seconds": run.seconds, "cpu": run.cpu, "size": size, "text": len(text)
    }  # fmt: skip
    if path in ("irprof", "compact"):
        # `load_module` checks the text before MLIR parses it; timed again here, after the run,
        # so the report can say how much of irprof's parse that check is.
        start = time.perf_counter()
        prescan_mlir(text.encode("utf-8"), "<bench>")
        result["prescan"] = time.perf_counter() - start
    return result


PATHS = ("bare", "irprof", "compact", "by hand", "steps", "compact steps")
STEP_PATHS = ("steps", "compact steps")


def _fresh(path: str, ops: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", path, str(ops)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _median_phases(runs: list[dict[str, object]], clock: str = "seconds") -> dict[str, float]:
    seconds = [run[clock] for run in runs]
    names = list(seconds[0])  # type: ignore[call-overload]
    phases = {name: statistics.median(s[name] for s in seconds) for name in names}  # type: ignore[index]
    phases["total"] = statistics.median(sum(s.values()) for s in seconds)  # type: ignore[attr-defined]
    return phases


def main(ops: int, repeats: int, paths: tuple[str, ...] = PATHS) -> None:
    """Alternate the paths `repeats` times, each in a fresh process; report medians."""
    unknown = set(paths) - set(PATHS)
    if unknown:
        raise SystemExit(f"unknown path(s) {sorted(unknown)}; choose from {', '.join(PATHS)}")
    paths = ("bare", *(path for path in paths if path != "bare"))
    check_paths(min(ops, 2000))
    runs: dict[str, list[dict[str, object]]] = {path: [] for path in paths}
    for _ in range(repeats):
        for path in paths:
            runs[path].append(_fresh(path, ops))
    medians = {path: _median_phases(runs[path]) for path in paths}
    cpu = {path: _median_phases(runs[path], "cpu")["total"] for path in paths}
    bare = medians["bare"]["total"]
    text_mb = float(runs["bare"][0]["text"]) / 1e6  # type: ignore[arg-type]
    print(f"ops: {ops:,} (text {text_mb:.1f} MB); median of {repeats}, each run a fresh process")
    print(
        f"{'path':<9} {'phases (wall)':<58} {'total':>8} {'/ bare':>7} {'cpu / bare':>10} "
        f"{'output':>9} {'/ bare':>7}"
    )
    bare_size = float(runs["bare"][0]["size"])  # type: ignore[arg-type]
    for path in paths:
        if path in STEP_PATHS:
            continue
        phases = medians[path]
        text = ", ".join(f"{n} {s:.2f} s" for n, s in phases.items() if n != "total")
        size = float(runs[path][0]["size"])  # type: ignore[arg-type]
        print(
            f"{path:<9} {text:<58} {phases['total']:>6.2f} s {phases['total'] / bare:>6.2f}x "
            f"{cpu[path] / cpu['bare']:>9.2f}x {size / 1e6:>6.1f} MB {size / bare_size:>6.2f}x"
        )
    if "compact" in paths:
        prescan = statistics.median(float(run["prescan"]) for run in runs["compact"])  # type: ignore[arg-type]
        compact = medians["compact"]["total"]
        print(
            f"compact's parse includes load_module's input check (safe_parse.prescan_mlir), "
            f"{prescan:.2f} s: without it compact / bare would be {(compact - prescan) / bare:.2f}x"
        )
    for path, layout in (("steps", "irprof"), ("compact steps", "compact")):
        if path in paths:
            wall = ", ".join(f"{n} {s:.2f} s" for n, s in medians[path].items() if n != "total")
            cpu_steps = _median_phases(runs[path], "cpu")
            cpu_text = ", ".join(f"{n} {s:.2f}" for n, s in cpu_steps.items() if n != "total")
            print(f"apply_opprofile steps ({layout} layout), wall: {wall}")
            print(f"  CPU: {cpu_text}; total {cpu_steps['total']:.2f} s")
    print("targets: irprof <= 1.3x bare, compact <= 1.5x bare (issue 30)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2], int(sys.argv[3]))))
    else:
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
            int(sys.argv[2]) if len(sys.argv) > 2 else 5,
            tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else PATHS,
        )

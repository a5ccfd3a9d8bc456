"""`irprof tune RUN`: profile-guided code-generation choices for the hot dispatches of an IREE run.

The loop (docs/tuning.md): the annotated source IR says which source ops form which dispatch and
how much measured time each dispatch holds; for the dispatches holding most of it, candidate
lowering configurations around IREE's default (`tune_space`) are compiled as a tuning spec, their
outputs checked against the default's, and each dispatch timed in alternating rounds
(`tune_measure`); a candidate is kept only when it is faster in every round. Then global flags
(data tiling, microkernels, aggressive fusion) are measured end to end on top of those choices.
The result is the source module with `irprof.tuned` on the ops of each tuned dispatch, the spec
and flags IREE reads, a JSON tuning record (`irprof-apply-tuning` re-applies it to an edited
model) and an MLGO training log of every measured (dispatch features, choice, time) triple.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from iree.compiler import ir

from irprof.analyses.mlgo_features import (
    MlgoContext,
    MlgoLog,
    Observation,
    TensorSpec,
    name_id,
)
from irprof.bundle import RunBundle
from irprof.errors import CaptureError, UsageError
from irprof.fileio import write_bytes_atomic
from irprof.frameworks.iree.inputs import function_signature, random_inputs, write_inputs
from irprof.frameworks.iree.tune_measure import (
    ATOL,
    RTOL,
    Build,
    Comparison,
    bench_module,
    compare,
    compile_all,
    compile_variant,
    dispatch_times,
    output_mismatch,
    run_outputs,
)
from irprof.frameworks.iree.tune_space import (
    Candidate,
    RootOp,
    candidates,
    root_ops,
    tile_levels,
    tuning_spec,
)
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, write_module
from irprof.mlir.profile_attrs import get_profile
from irprof.passes.apply_tuning import RECORD_VERSION, apply_record, op_identities
from irprof.renderers.mlgo_log import training_log
from irprof.trace.model import Trace

# Global choices IREE's llvm-cpu backend takes for the whole module (no per-dispatch form).
GLOBAL_VARIANTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data-tiling", ("--iree-opt-data-tiling=true",)),
    ("data-tiling+ukernels", ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")),
    ("aggressive-fusion", ("--iree-dispatch-creation-enable-aggressive-fusion=true",)),
)
TILE_SLOTS = 4
LEVELS = ("distribution", "vector_common_parallel", "vector_reduction")
MLGO_FEATURES: tuple[TensorSpec, ...] = (
    TensorSpec("root_op_id", "int64_t", (1,)),
    TensorSpec("loop_ranges", "int64_t", (TILE_SLOTS,)),
    *(TensorSpec(level, "int64_t", (TILE_SLOTS,)) for level in LEVELS),
    TensorSpec("global_flags_id", "int64_t", (1,)),
    TensorSpec("is_default", "int64_t", (1,)),
)
MLGO_SCORE = TensorSpec("dispatch_median_ns", "int64_t", (1,))


@dataclass(frozen=True)
class TuneOptions:
    """How many dispatches, how long each comparison runs, and what counts as a win."""

    max_dispatches: int = 3
    min_share: float = 0.05  # a dispatch must hold at least this share of measured time
    rounds: int = 3  # alternating baseline/candidate rounds per comparison
    runs: int = 10  # calls per round
    # A winner is faster by more than this in every round; a negative margin keeps the fastest
    # measured candidate whatever the noise (for experiments, not for production).
    margin: float = 0.03
    guard: bool = True  # revert to IREE's default when the tuned module is slower end to end
    global_flags: bool = True
    extra_configs: tuple[str, ...] = ()  # lowering configs tried on every hot dispatch
    seed: int = 0


@dataclass
class TuneResult:
    """What `tune_run` decided and wrote."""

    record: dict[str, Any]
    out: Path
    files: dict[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class HotDispatch:
    """A dispatch of the capture, the measured time of its ops and their identities."""

    symbol: str
    total_ns: float
    share: float
    ops: tuple[dict[str, Any], ...]


def hot_dispatches(
    annotated: ir.Module, measured: Mapping[str, int], options: TuneOptions
) -> tuple[list[HotDispatch], float]:
    """Dispatches by their own measured time (`measured`: each dispatch's summed event time in
    the profiled runs), the hottest first; the ops listing a dispatch in the annotated source
    IR (`irprof.profile.kernels`) are the ones that formed it. An op's time is not a
    dispatch's: a convolution ran in its own dispatch and in a 2 us transpose feeding it, and
    halving the op's time made the transpose the second "hottest" dispatch (21%)."""
    members: dict[str, list[dict[str, Any]]] = {}
    for (op_name, key, ordinal), op in op_identities(annotated.operation).items():
        profile = get_profile(op)
        if profile is None or not profile.kernels:
            continue
        for kernel in profile.kernels:
            members.setdefault(kernel, []).append(
                {"op": op_name, "key": key, "ordinal": ordinal, "total_ns": profile.total_ns}
            )
    total = float(sum(measured.values()))
    ranked = sorted(
        ((symbol, float(measured.get(symbol, 0))) for symbol in members),
        key=lambda item: (-item[1], item[0]),
    )
    hot = [
        HotDispatch(symbol, ns, ns / total, tuple(members[symbol]))
        for symbol, ns in ranked
        if total and ns / total >= options.min_share
    ]
    return hot[: options.max_dispatches], total


def measured_dispatches(trace: Trace) -> dict[str, int]:
    """Each dispatch's summed event time in the bundle's profiled runs."""
    found: dict[str, int] = defaultdict(int)
    for name, dur in zip(trace.names(), trace.dur_ns.tolist(), strict=True):
        found[name] += int(dur)
    return dict(found)


def _result_count(module: ir.Module, function: str) -> int:
    for op in module.body.operations:
        if op.operation.name == "func.func":
            attributes = op.operation.attributes
            if ir.StringAttr(attributes["sym_name"]).value == function:
                kind = ir.FunctionType(ir.TypeAttr(attributes["function_type"]).value)
                return len(kind.results)
    raise UsageError(f"no function @{function} in the module")


class _Tuner:
    """One tuning session's state: sources, inputs, reference outputs, observations."""

    def __init__(
        self,
        source: Path,
        work: Path,
        function: str,
        inputs: list[str],
        results: int,
        options: TuneOptions,
        say: Callable[[str], None],
    ) -> None:
        self.source = source
        self.work = work
        self.function = function
        self.inputs = inputs
        self.results = results
        self.options = options
        self.say = say
        self.reference: list[Any] = []
        self.observations: list[Observation] = []

    def outputs_problem(self, build: Build) -> str:
        """Why `build` cannot be chosen (failed to compile, results differ), or ""."""
        if build.vmfb is None:
            return f"compile failed: {build.error}"
        try:
            got = run_outputs(
                build.vmfb,
                self.work / build.label / "out",
                function=self.function,
                inputs=self.inputs,
                results=self.results,
            )
        except (CaptureError, OSError, ValueError) as exc:  # a candidate that fails to run
            return f"run failed: {str(exc).splitlines()[0]}"
        mismatch = output_mismatch(self.reference, got)
        return f"results differ: {mismatch}" if mismatch else ""

    def end_to_end(self, base: Build, other: Build) -> Comparison:
        """`base` vs `other` wall time, alternating rounds."""
        return compare(self._rounds(base, other))

    def confirmed(self, base: Build, other: Build) -> Comparison:
        """`end_to_end`, with as many rounds again when `other` looks slower (one noisy round
        of a shared machine should not undo a measured choice)."""
        rounds = self._rounds(base, other)
        if compare(rounds).speedup < 1.0:
            rounds += self._rounds(base, other)
        return compare(rounds)

    def _rounds(self, base: Build, other: Build) -> list[tuple[list[float], list[float]]]:
        assert base.vmfb is not None and other.vmfb is not None
        rounds = []
        for _ in range(self.options.rounds):
            a = bench_module(
                base.vmfb, function=self.function, inputs=self.inputs, runs=self.options.runs
            )
            b = bench_module(
                other.vmfb, function=self.function, inputs=self.inputs, runs=self.options.runs
            )
            rounds.append((a, b))
        return rounds

    def per_dispatch(self, symbol: str, base: Build, others: Sequence[Build]) -> list[Comparison]:
        """`symbol`'s HAL-profiled time in `base` vs each of `others`, alternating rounds."""
        assert base.vmfb is not None
        samples: list[list[tuple[list[float], list[float]]]] = [[] for _ in others]
        for number in range(self.options.rounds):
            folder = self.work / "profiles" / str(number)
            base_times = self._times(base, folder, symbol)
            for position, other in enumerate(others):
                samples[position].append((base_times, self._times(other, folder, symbol)))
                base_times = self._times(base, folder, symbol)
        return [compare(rounds) for rounds in samples]

    def _times(self, build: Build, folder: Path, symbol: str) -> list[float]:
        assert build.vmfb is not None
        times = dispatch_times(
            build.vmfb,
            folder / build.label,
            function=self.function,
            inputs=self.inputs,
            runs=self.options.runs,
        )
        return [float(t) for t in times.get(symbol, [])]

    def observe(
        self, root: RootOp, config: str, flags: Sequence[str], ns: float, default: bool
    ) -> None:
        """Log one measured (features, choice, time) triple."""
        levels = tile_levels(config)

        def slots(values: Sequence[int]) -> tuple[int, ...]:
            padded = [*values[:TILE_SLOTS], *([0] * TILE_SLOTS)]
            return tuple(int(v) for v in padded[:TILE_SLOTS])

        features = (
            (name_id(root.op),),
            slots(root.loop_ranges),
            *(slots(levels.get(level, ())) for level in LEVELS),
            (name_id(" ".join(flags)),),
            (1 if default else 0,),
        )
        self.observations.append(
            Observation(len(self.observations), root.dispatch, features, round(ns))
        )


def tune_run(
    run_path: str | Path,
    out: str | Path | None = None,
    options: TuneOptions = TuneOptions(),
    say: Callable[[str], None] = lambda _line: None,
) -> TuneResult:
    """Tune the IREE run bundle `run_path`; write record, tuned IR, spec and log into `out`
    (default `RUN/tuned`)."""
    run = RunBundle(run_path)
    manifest = run.manifest()
    if manifest.framework != "iree":
        raise UsageError(
            f"{run_path}: captured with {manifest.framework}; `irprof tune` tunes IREE runs "
            "(`capture iree`, or `capture jax|torch --backend iree` then `capture iree` of its IR)"
        )
    level = str(manifest.options.get("source_level", manifest.ir_levels[0]))
    if not run.annotated_path(level).is_file():
        raise UsageError(f"{run_path}: annotate the {level} level first (`irprof annotate`)")
    out_dir = Path(out) if out is not None else run.root / "tuned"
    context = make_context()
    annotated = load_module(run.annotated_path(level), context)
    hot, profiled_ns = hot_dispatches(annotated, measured_dispatches(run.trace()), options)
    if not hot:
        raise UsageError(f"{run_path}: no dispatch holds measured time in annotated/{level}.mlir")
    source_path = run.ir_path(level)
    source = load_module(source_path, context)
    function = manifest.entry or "main"
    with tempfile.TemporaryDirectory(prefix="irprof-tune-") as scratch:
        work = Path(scratch)
        signature = function_signature(source, function, source_path)
        inputs = write_inputs(random_inputs(signature, source_path, options.seed), work, signature)
        tuner = _Tuner(
            source_path,
            work,
            function,
            inputs,
            _result_count(source, function),
            options,
            say,
        )
        record = _tune(tuner, hot, profiled_ns, level, manifest.model)
    return _write_outputs(record, source, tuner.observations, out_dir, level)


def _tune(
    tuner: _Tuner, hot: list[HotDispatch], profiled_ns: float, level: str, model: str
) -> dict[str, Any]:
    options = tuner.options
    default = compile_variant(tuner.source, tuner.work, "default")
    if default.vmfb is None or default.configs is None:
        raise UsageError(f"IREE's default compilation failed: {default.error}")
    tuner.reference = run_outputs(
        default.vmfb,
        tuner.work / "default" / "out",
        function=tuner.function,
        inputs=tuner.inputs,
        results=tuner.results,
    )
    roots = {root.dispatch: root for root in root_ops(default.configs)}
    chosen: list[tuple[RootOp, Candidate]] = []
    base = default
    decisions: list[dict[str, Any]] = []
    for dispatch in hot:
        decisions.append(_tune_dispatch(tuner, dispatch, roots, chosen, base))
        if decisions[-1]["chosen"]:
            base = decisions[-1].pop("_build")
        decisions[-1].pop("_build", None)
    spec_alone = tuning_spec(chosen) if chosen else ""
    flags: tuple[str, ...] = ()
    keep_spec = True
    global_record: list[dict[str, Any]] = []
    if options.global_flags:
        flags, keep_spec, global_record = _tune_flags(tuner, base, spec_alone)
    # What to confirm end to end against IREE's default, best first: the flags (with the spec
    # when it measured better with it), then the per-dispatch choices alone.
    finals: list[tuple[str, tuple[str, ...], str]] = []
    if flags:
        finals.append(("global flags", flags, spec_alone if keep_spec else ""))
    if chosen and (flags and not keep_spec):
        finals.append(("per-dispatch choices alone", (), spec_alone))
    elif chosen and not flags:
        finals.append(("per-dispatch choices", (), spec_alone))
    end_to_end: dict[str, Any] = {"changed": False, "tried": []}
    accepted: tuple[str, tuple[str, ...], str] | None = None
    for number, (what, final_flags, final_spec) in enumerate(finals):
        final = base
        if final_flags:
            final = compile_variant(
                tuner.source, tuner.work, f"final.{number}", flags=final_flags, spec=final_spec
            )
        comparison = tuner.confirmed(default, final)
        tried = {"what": what, "flags": list(final_flags), **comparison.to_json()}
        end_to_end["tried"].append(tried)
        if comparison.speedup >= 1.0 or not options.guard:
            accepted = (what, final_flags, final_spec)
            end_to_end.update(changed=True, chosen=what, **comparison.to_json())
            break
        # Never slower: a choice that does not show end to end is not kept.
        tuner.say(f"{what}: end to end {comparison.speedup:.3f}x, not kept")
    flags_kept = accepted is not None and bool(accepted[1])
    spec_kept = accepted is not None and bool(accepted[2])
    for entry in global_record:
        if entry.get("status") == "chosen" and not flags_kept:
            entry["status"] = "dropped: not faster end to end than IREE's default"
    for decision in decisions:
        if decision["chosen"] and not spec_kept:
            if flags_kept:
                decision["superseded"] = decision.pop("chosen")
                decision["why"] = f"global flags {' '.join(flags)} won without the spec"
            else:
                decision["dropped"] = decision.pop("chosen")
                decision["why"] = "not faster end to end than IREE's default"
            decision["chosen"] = None
    if finals and accepted is None:
        end_to_end["reverted"] = "no tuned module was faster end to end: IREE's default is kept"
    flags = accepted[1] if accepted is not None else ()
    spec = accepted[2] if accepted is not None else ""
    return {
        "version": RECORD_VERSION,
        "model": model,
        "source_level": level,
        "function": tuner.function,
        "profiled_ns": round(profiled_ns),
        "tolerance": {"rtol": RTOL, "atol": ATOL, "scaled_by": "max(1, max|default output|)"},
        "measurement": {
            "rounds": options.rounds,
            "runs_per_round": options.runs,
            "margin": options.margin,
            "guard": options.guard,
            "rule": "a candidate wins when faster than the baseline in every alternating round "
            "by more than the margin; per dispatch from IREE's HAL profile, end to end from "
            "iree-benchmark-module",
        },
        "dispatches": decisions,
        "global": global_record,
        "flags": list(flags),
        "spec": spec,
        "end_to_end": end_to_end,
    }


def _tune_dispatch(
    tuner: _Tuner,
    dispatch: HotDispatch,
    roots: dict[str, RootOp],
    chosen: list[tuple[RootOp, Candidate]],
    base: Build,
) -> dict[str, Any]:
    decision: dict[str, Any] = {
        "dispatch": dispatch.symbol,
        "measured_ns": round(dispatch.total_ns),
        "share": round(dispatch.share, 4),
        "ops": list(dispatch.ops),
        "chosen": None,
        "candidates": [],
    }
    root = roots.get(dispatch.symbol)
    if root is None:
        decision["why"] = "IREE's configuration dump has no root op with tile sizes for it"
        return decision
    decision["root_op"] = root.op
    decision["default"] = {
        "lowering_config": root.lowering_config,
        "translation_info": root.translation_info,
    }
    if root.unmatchable:
        decision["why"] = f"not tuned per dispatch: {root.unmatchable}"
        return decision
    options = tuner.options
    proposals = candidates(root, options.extra_configs)
    tuner.say(f"{dispatch.symbol}: {len(proposals)} candidates")
    builds = compile_all(
        tuner.source,
        tuner.work,
        [(f"{dispatch.symbol}.{c.id}", (), tuning_spec([*chosen, (root, c)])) for c in proposals],
    )
    viable: list[tuple[Candidate, Build]] = []
    for candidate, build in zip(proposals, builds, strict=True):
        entry: dict[str, Any] = {
            "id": candidate.id,
            "lowering_config": candidate.lowering_config,
            "why": candidate.why,
        }
        problem = tuner.outputs_problem(build)
        if not problem:
            problem = _not_applied(build, dispatch.symbol, candidate)
        if problem:
            entry["status"] = "rejected"
            entry["reason"] = problem
        else:
            viable.append((candidate, build))
        decision["candidates"].append(entry)
    if not viable:
        return decision
    comparisons = tuner.per_dispatch(dispatch.symbol, base, [b for _, b in viable])
    best: tuple[Candidate, Build, Comparison] | None = None
    by_id = {entry["id"]: entry for entry in decision["candidates"]}
    for (candidate, build), comparison in zip(viable, comparisons, strict=True):
        entry = by_id[candidate.id]
        entry.update(comparison.to_json())
        entry["status"] = "faster" if comparison.significant(options.margin) else "not faster"
        if comparison.candidate_ns:
            tuner.observe(root, candidate.lowering_config, (), comparison.candidate_ns, False)
        if comparison.significant(options.margin) and (
            best is None or comparison.speedup > best[2].speedup
        ):
            best = (candidate, build, comparison)
    baseline = [c.baseline_ns for c in comparisons if c.baseline_ns]
    if baseline:
        decision["default_ns"] = round(statistics.median(baseline))
        tuner.observe(root, root.lowering_config, (), statistics.median(baseline), True)
    if best is not None:
        candidate, build, comparison = best
        by_id[candidate.id]["status"] = "chosen"
        decision["chosen"] = {
            "id": candidate.id,
            "lowering_config": candidate.lowering_config,
            "translation_info": candidate.translation_info,
            "default_ns": round(comparison.baseline_ns),
            "tuned_ns": round(comparison.candidate_ns),
            "speedup": round(comparison.speedup, 4),
            "interval": [round(comparison.low, 4), round(comparison.high, 4)],
        }
        decision["_build"] = build
        chosen.append((root, candidate))
    return decision


def _not_applied(build: Build, symbol: str, candidate: Candidate) -> str:
    """Why the build did not use the candidate's configuration for `symbol` (IREE's dump)."""
    assert build.configs is not None
    used = {root.dispatch: root.lowering_config for root in root_ops(build.configs)}
    if used.get(symbol) != candidate.lowering_config:
        return f"IREE compiled {symbol} with {used.get(symbol, 'no root config')}: spec not applied"
    return ""


def _tune_flags(
    tuner: _Tuner, base: Build, spec: str
) -> tuple[tuple[str, ...], bool, list[dict[str, Any]]]:
    """Global flag variants measured end to end against `base` (the per-dispatch choices),
    each with the spec and, when there is one, without it: (flags, keep the spec, record)."""
    variants = [(name, flags, spec) for name, flags in GLOBAL_VARIANTS]
    if spec:
        variants += [(f"{name} (no spec)", flags, "") for name, flags in GLOBAL_VARIANTS]
    tuner.say(f"global flags: {len(variants)} variants")
    builds = compile_all(tuner.source, tuner.work, [(f"global.{n}", f, s) for n, f, s in variants])
    record: list[dict[str, Any]] = []
    best: tuple[dict[str, Any], tuple[str, ...], bool, Comparison] | None = None
    for (name, flags, with_spec), build in zip(variants, builds, strict=True):
        entry: dict[str, Any] = {"id": name, "flags": list(flags), "with_spec": bool(with_spec)}
        record.append(entry)
        problem = tuner.outputs_problem(build)
        if problem:
            entry.update(status="rejected", reason=problem)
            continue
        comparison = tuner.end_to_end(base, build)
        entry.update(comparison.to_json())
        faster = comparison.significant(tuner.options.margin)
        entry["status"] = "faster" if faster else "not faster"
        if faster and (best is None or comparison.speedup > best[3].speedup):
            best = (entry, flags, bool(with_spec), comparison)
    if best is None:
        return (), True, record
    best[0]["status"] = "chosen"
    return best[1], best[2], record


def _write_outputs(
    record: dict[str, Any],
    source: ir.Module,
    observations: list[Observation],
    out_dir: Path,
    level: str,
) -> TuneResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "record": out_dir / "tuning.json",
        "ir": out_dir / f"{level}.tuned.mlir",
        "log": out_dir / "tune.mlgo.log",
    }
    apply_record(source.operation, record)
    write_module(files["ir"], source)
    write_bytes_atomic(files["record"], orjson.dumps(record, option=orjson.OPT_INDENT_2))
    log = MlgoLog(
        MLGO_FEATURES, MLGO_SCORE, (MlgoContext(str(record["function"]), tuple(observations)),)
    )
    write_bytes_atomic(files["log"], training_log(log))
    spec_path = out_dir / "tuning_spec.mlir"
    if record["spec"]:
        write_bytes_atomic(spec_path, str(record["spec"]).encode("utf-8"))
        files["spec"] = spec_path
    elif spec_path.exists():
        spec_path.unlink()
    return TuneResult(record, out_dir, files)


def compile_tuned(tuned_ir: Path, folder: Path) -> Build:
    """Compile a tuned module with the flags and spec it carries (`irprof.tuning`)."""
    from irprof.passes.apply_tuning import module_tuning

    module = load_module(tuned_ir, make_context())
    flags, spec = module_tuning(module.operation)
    shutil.rmtree(folder / "tuned", ignore_errors=True)
    return compile_variant(tuned_ir, folder, "tuned", flags=flags, spec=spec)

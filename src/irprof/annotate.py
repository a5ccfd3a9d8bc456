"""Annotate a run bundle: correlate one IR level, attach the profile, write the results.

`RUN/ir/<level>.mlir` -> correlator -> `RUN/opprofile.<level>.json`, `RUN/opprofile.json`,
`RUN/annotated/<level>.mlir`, and the level's record merged into `RUN/coverage.json`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, get_all_correlators
from irprof.coverage import Coverage, load_coverages, save_coverages
from irprof.errors import BundleError, CorrelationError
from irprof.fileio import write_text_atomic
from irprof.mlir.annotation import Layout, ModuleSummary, attach_summary
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.opprofile import OpProfile
from irprof.passes.annotate import apply_opprofile

# Below these a correlation found almost nothing: the trace most likely belongs to another model.
MIN_TIME_COVERAGE = 0.05
MIN_NONTRIVIAL_COVERAGE = 0.05


@dataclass(frozen=True)
class AnnotateOutcome:
    """What `annotate_bundle` wrote and how well the level was covered."""

    level: str
    annotated_path: Path
    opprofile_path: Path
    coverage: Coverage
    ops_annotated: int
    entries_unmatched: int


def choose_level(bundle: RunBundle, framework: str, level: str | None) -> str:
    """`level`, checked; by default the first correlator level present in the bundle."""
    correlator = get_all_correlators().get(framework)
    present = bundle.manifest().ir_levels
    if level is not None:
        if level not in correlator.levels:
            raise BundleError(
                f"{bundle.root}: the {framework} correlator cannot annotate level '{level}' "
                f"(it knows {', '.join(correlator.levels)})"
            )
        if not bundle.ir_path(level).is_file():
            raise BundleError(f"{bundle.ir_path(level)}: no IR for level '{level}' in this run")
        return level
    for candidate in correlator.levels:
        if candidate in present and bundle.ir_path(candidate).is_file():
            return candidate
    raise BundleError(
        f"{bundle.root}: none of the {framework} levels ({', '.join(correlator.levels)}) has "
        f"IR under ir/ (present: {', '.join(present) or 'none'})"
    )


def check_coverage(coverage: Coverage, bundle: RunBundle) -> None:
    """Refuse a near-empty correlation: it means the trace and IR do not belong together."""
    if coverage.ops_nontrivial == 0 and coverage.profiled_ns == 0:
        raise CorrelationError(
            f"{bundle.root}: level '{coverage.level}' has no profiled op time and no "
            "non-trivial ops; nothing to annotate"
        )
    if (
        coverage.time_coverage < MIN_TIME_COVERAGE
        or coverage.nontrivial_coverage < MIN_NONTRIVIAL_COVERAGE
    ):
        raise CorrelationError(
            f"{bundle.root}: level '{coverage.level}' matched only "
            f"{coverage.time_coverage:.1%} of profiled time and "
            f"{coverage.nontrivial_coverage:.1%} of non-trivial ops "
            f"({coverage.ops_nontrivial_annotated}/{coverage.ops_nontrivial}). The profile most "
            "likely comes from another model or another trace of it (names depend on tracing "
            "order); re-capture, or pass --allow-low-coverage to annotate anyway."
        )


def annotate_bundle(
    bundle: RunBundle,
    level: str | None = None,
    attr: Layout = "irprof",
    allow_low_coverage: bool = False,
    options: CorrelationOptions | None = None,
) -> AnnotateOutcome:
    """Correlate `level` of `bundle`, annotate its IR and write the results into the bundle."""
    manifest = bundle.manifest()
    framework = manifest.framework
    if framework not in get_all_correlators():
        raise BundleError(
            f"{bundle.manifest_path}: no correlator for framework '{framework}' "
            f"(known: {', '.join(get_all_correlators().names())})"
        )
    level = choose_level(bundle, framework, level)
    result = (
        get_all_correlators()
        .get(framework)
        .correlate(bundle, level, options or CorrelationOptions())
    )
    coverage = result.coverage
    if not allow_low_coverage:
        check_coverage(coverage, bundle)
    module = load_module(bundle.ir_path(level), make_context())
    applied = apply_opprofile(module, result.opprofile, layout=attr)
    if applied.unmatched_entries:
        coverage = dataclasses.replace(
            coverage,
            warnings=(
                *coverage.warnings,
                f"{len(applied.unmatched_entries)} opprofile entries matched no op of "
                f"{bundle.ir_path(level).name}",
            ),
        )
    summary = ModuleSummary.of(
        coverage, source_trace=result.opprofile.source_trace, framework=framework
    )
    attach_summary(module, summary)
    write_text_atomic(bundle.annotated_path(level), print_module(module, debug_info=True))
    opprofile: OpProfile = result.opprofile
    opprofile.save(bundle.opprofile_level_path(level))
    opprofile.save(bundle.opprofile_path)
    coverages = load_coverages(bundle.coverage_path) if bundle.coverage_path.is_file() else {}
    coverages[level] = coverage
    save_coverages(bundle.coverage_path, coverages)
    return AnnotateOutcome(
        level=level,
        annotated_path=bundle.annotated_path(level),
        opprofile_path=bundle.opprofile_level_path(level),
        coverage=coverage,
        ops_annotated=len(applied.annotated),
        entries_unmatched=len(applied.unmatched_entries),
    )

"""Annotate a run bundle: correlate one IR level, attach the profile, write the results.

`RUN/ir/<level>.mlir` -> correlator -> `RUN/opprofile.<level>.json`, `RUN/annotated/<level>.mlir`,
and the level's record merged into `RUN/coverage.json`. The level is parsed once: the correlator
reads `bundle.ir(level)` and the profile is attached to that same module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.coverage import Coverage, check_coverage
from irprof.errors import BundleError
from irprof.fileio import OutputStage, write_text_atomic
from irprof.frameworks import Framework, get_all_frameworks
from irprof.mlir.apply_profile import annotate_module
from irprof.mlir.load import print_module
from irprof.mlir.profile_attrs import Layout
from irprof.progress import stage


@dataclass(frozen=True)
class AnnotateOutcome:
    """What `annotate_bundle` wrote and how well the level was covered."""

    level: str
    annotated_path: Path
    opprofile_path: Path
    coverage: Coverage
    ops_annotated: int
    entries_unmatched: int


def bundle_framework(bundle: RunBundle) -> Framework:
    """The registered framework that captured `bundle`, or a BundleError naming the manifest."""
    name = bundle.manifest().framework
    frameworks = get_all_frameworks()
    if name not in frameworks:
        raise BundleError(
            f"{bundle.manifest_path}: unknown framework {name!r} "
            f"(known: {', '.join(frameworks.names())})"
        )
    return frameworks.get(name)


def annotatable_levels(bundle: RunBundle) -> list[str]:
    """The bundle's IR levels its framework's correlator can annotate, in lowering order."""
    framework = bundle_framework(bundle)
    present = bundle.manifest().ir_levels
    return [level for level in framework.levels if level in present]


def failed_level_reason(bundle: RunBundle, level: str) -> str:
    """Why the capture could not produce `level`, from the manifest's `failed_levels` record
    (stage, op, error), as a clause; "" when none was recorded."""
    for failed in bundle.manifest().options.get("failed_levels") or []:
        if isinstance(failed, dict) and failed.get("level") == level:
            op = f" on {failed['op']}" if failed.get("op") else ""
            return (
                f": the capture's {failed.get('stage') or 'lowering'} failed{op} "
                f"({str(failed.get('error'))[:200]}); the other levels can be annotated"
            )
    return ""


def choose_level(bundle: RunBundle, level: str | None) -> str:
    """`level`, checked; by default the first correlator level present in the bundle."""
    framework = bundle_framework(bundle)
    present = bundle.manifest().ir_levels
    if level is not None:
        if level not in framework.levels:
            raise BundleError(
                f"{bundle.root}: the {framework.name} correlator cannot annotate level '{level}' "
                f"(it knows {', '.join(framework.levels)})"
            )
        if level not in present:
            raise BundleError(
                f"{bundle.ir_path(level)}: no IR for level '{level}' in this run"
                + failed_level_reason(bundle, level)
            )
        return level
    levels = annotatable_levels(bundle)
    if not levels:
        raise BundleError(
            f"{bundle.root}: none of the {framework.name} levels ({', '.join(framework.levels)}) "
            f"is in the bundle (manifest lists: {', '.join(present) or 'none'})"
        )
    return levels[0]


def annotate_bundle(
    bundle: RunBundle,
    level: str | None = None,
    attr: Layout = "irprof",
    allow_low_coverage: bool = False,
    options: CorrelationOptions | None = None,
    allow_mismatch: bool = False,
) -> AnnotateOutcome:
    """Correlate `level` of `bundle`, annotate its IR and write the results into the bundle.

    Unless `allow_mismatch`, the level's IR, the trace files and the capture's side files must
    still be the ones fingerprinted at capture: a swapped file would be annotated with another
    model's profile."""
    bundle.complete_interrupted_update()  # a commit killed half-way is finished first
    framework = bundle_framework(bundle)
    level = choose_level(bundle, level)
    if not allow_mismatch:
        manifest = bundle.manifest()
        bundle.check_fingerprints(
            [f"ir/{level}.mlir", *(name for _, name in manifest.path_fields())]
        )
    bundle.coverages()  # the record is merged into at the end: refuse a malformed one up front
    with stage(f"correlating level {level}"):
        correlator = framework.load_correlator()
        result = correlator.correlate(bundle, level, options or CorrelationOptions())
    coverage = result.coverage
    if not allow_low_coverage:
        check_coverage(coverage, str(bundle.root))
    with stage(f"annotating {bundle.ir_path(level).name}"):
        module = bundle.ir(level)
        applied = annotate_module(module, result.opprofile, layout=attr, coverage=coverage)
    if applied.unmatched_entries:
        coverage = dataclasses.replace(
            coverage,
            warnings=(
                *coverage.warnings,
                f"{len(applied.unmatched_entries)} opprofile entries matched no op of "
                f"{bundle.ir_path(level).name}",
            ),
        )
    # The three outputs are staged and committed together under the bundle's lock: a failure
    # (a full disk) leaves the bundle as it was, never annotated without its coverage record.
    outputs = OutputStage()
    try:
        text = print_module(module, debug_info=True)
        bundle.forget_ir(level)  # the module carries the profile; `ir(level)` is the captured IR
        write_text_atomic(outputs.path(bundle.annotated_path(level)), text)
        result.opprofile.save(outputs.path(bundle.opprofile_level_path(level)))
        bundle.record_coverage(coverage, outputs)
    finally:
        outputs.discard()
    return AnnotateOutcome(
        level=level,
        annotated_path=bundle.annotated_path(level),
        opprofile_path=bundle.opprofile_level_path(level),
        coverage=coverage,
        ops_annotated=len(applied.annotated),
        entries_unmatched=len(applied.unmatched_entries),
    )

"""One annotated IR level of a run bundle, loaded for the views (`load_annotated_level`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from iree.compiler import ir

from irprof.analyses.profiled_ops import ProfiledModule, load_profiled_module
from irprof.bundle import Manifest, RunBundle
from irprof.errors import BundleError, MlirError, UsageError


@dataclass(frozen=True)
class AnnotatedLevel:
    """One annotated IR level of a bundle, loaded."""

    level: str
    path: Path
    module: ir.Module
    profiled: ProfiledModule


def require_annotated(bundle: RunBundle, level: str | None = None) -> str:
    """The level to show (default: the first annotated one); clear errors when there is none."""
    levels = bundle.annotated_levels()
    if not levels:
        raise BundleError(
            f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
        )
    captured = bundle.manifest().ir_levels
    strays = [name for name in levels if name not in captured]
    if strays:
        # `irprof annotate` only writes levels the manifest lists: anything else was put there
        # by hand or belongs to another run, and its numbers cannot be trusted.
        raise BundleError(
            f"{bundle.annotated_path(strays[0])}: level {strays[0]!r} is not among the "
            f"captured IR levels of {bundle.manifest_path} "
            f"({', '.join(captured) or 'none'}); remove it or re-run `irprof annotate`"
        )
    if level is None:
        return levels[0]
    if level not in levels:
        raise UsageError(
            f"{bundle.root}: level {level!r} is not annotated; annotated: {', '.join(levels)}"
        )
    return level


def load_annotated_level(bundle: RunBundle, level: str | None = None) -> AnnotatedLevel:
    """Parse `RUN/annotated/<level>.mlir` and gather its profiled ops, checked to attribute
    no negative time and no more than the module's profiled time (`check_attributed`)."""
    chosen = require_annotated(bundle, level)
    path = bundle.member(f"annotated/{chosen}.mlir", what="annotated IR")
    try:
        module, profiled = load_profiled_module(path)
    except MlirError as exc:
        message = str(exc)
        raise BundleError(
            message if message.startswith(str(path)) else f"{path}: {message}"
        ) from exc
    check_attributed(path, profiled)
    return AnnotatedLevel(chosen, path, module, profiled)


def check_attributed(path: Path, profiled: ProfiledModule) -> None:
    """Refuse an annotated module whose ops attribute more time than it says was profiled
    (`irprof.summary`), or whose summary holds a negative time: a forged or damaged file
    would otherwise print "18446744074 s attributed of 4.89 ms profiled"."""
    summary = profiled.summary
    for field in ("profiled_ns", "attributed_ns"):
        value = summary.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BundleError(
                f"{path}: irprof.summary field '{field}' = {value!r} is not a non-negative "
                "integer; re-run `irprof annotate`"
            )
    limit = summary.get("profiled_ns", 0)
    if not limit:
        return
    # Shares of one event are rounded to whole ns: allow 1 ns of rounding per op.
    ops = [op for op in profiled.annotated if not op.inclusive]
    attributed = sum(op.total_ns for op in ops)
    groups = [op.profile.group_total_ns for op in ops if op.profile is not None]
    biggest_group = max(groups, default=0)
    if attributed > limit + len(ops) or biggest_group > limit:
        what = "its ops attribute" if attributed > limit + len(ops) else "an event group holds"
        amount = attributed if attributed > limit + len(ops) else biggest_group
        raise BundleError(
            f"{path}: {what} {amount} ns, more than the {limit} ns its irprof.summary says "
            "were profiled; the annotation is damaged or forged: re-run `irprof annotate`"
        )


def model_script(bundle: RunBundle, manifest: Manifest) -> str:
    """The model script as a path relative to the working directory when it can be found
    (the manifest names it relative to the bundle's parent), else as the manifest names it."""
    candidate = bundle.root.parent / manifest.model
    try:
        found = candidate.is_file()
    except OSError:  # a name longer than the system allows (ENAMETOOLONG) names no file
        found = False
    if not found:
        return manifest.model
    try:
        return os.path.relpath(candidate.resolve())
    except ValueError:  # another drive on Windows
        return str(candidate)

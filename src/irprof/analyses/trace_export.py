"""Trace events -> the IR ops they were attributed to, through `ProfileData.kernels`.

`kernels` holds the exact event names a correlator attributed to an op, so joining back needs no
framework knowledge: an event maps to every op (at every annotated level) that lists its name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.bundle import Manifest, RunBundle
from irprof.errors import BundleError
from irprof.opprofile import OpProfile, ProfileData
from irprof.trace.model import Trace

REATTACH = "reattach:"


@dataclass(frozen=True)
class OpRef:
    """One annotated op an event belongs to."""

    level: str
    op_index: int
    name: str  # runtime name (qualified by its call for private-function ops), else op kind
    op_name: str
    location: str  # first user-code frame (the call site's for those ops), else the location
    function: str
    runtime_name: str = ""  # the name the IR and the trace use ("" when the op has none)


@dataclass(frozen=True)
class TraceExport:
    """What a trace export needs: the original events and the annotated levels."""

    trace: Trace
    trace_path: str
    manifest: Manifest
    levels: tuple[tuple[str, ProfiledModule], ...]
    # Origin (`torch#17`) -> the event names its op was measured by, for ops whose profile was
    # carried down from another level (`reattach:torch#17`: linalg ops of one torch op).
    origin_kernels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def event_names(self, profile: ProfileData) -> tuple[str, ...]:
        """The trace's event names behind an op's profile (through its origin when reattached)."""
        if profile.source.startswith(REATTACH):
            return self.origin_kernels.get(profile.source[len(REATTACH) :], ())
        return profile.kernels

    def ops_by_event_name(self) -> dict[str, tuple[OpRef, ...]]:
        """Exact event name -> ops at every level that list it among their kernels."""
        found: dict[str, list[OpRef]] = {}
        for level, profiled in self.levels:
            for op in profiled.ops:
                if op.profile is None or op.inclusive:
                    continue
                ref = OpRef(
                    level=level,
                    op_index=op.index,
                    # Named and placed like `irprof top`: a primitive of a private function
                    # (`max`) through the call reaching it (`jit(mlp)/jit(relu)/max`).
                    name=op.qualified_name,
                    op_name=op.op_name,
                    location=op.site_source or op.location,
                    function=op.function,
                    runtime_name=op.runtime_name,
                )
                for kernel in self.event_names(op.profile):
                    found.setdefault(kernel, []).append(ref)
        return {name: tuple(refs) for name, refs in found.items()}


def load_trace_export(bundle: RunBundle, level: str | None = None) -> TraceExport:
    """The bundle's first trace file and its annotated levels (all, or just `level`)."""
    manifest = bundle.manifest()
    levels = [level] if level is not None else bundle.annotated_levels()
    loaded = [load_annotated_level(bundle, name) for name in levels]
    if not loaded:
        raise BundleError(
            f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
        )
    trace_path = bundle.primary_trace_path
    return TraceExport(
        trace=bundle.trace(),
        trace_path=trace_path.relative_to(bundle.root).as_posix(),
        manifest=manifest,
        levels=tuple((item.level, item.profiled) for item in loaded),
        origin_kernels=origin_kernels(bundle),
    )


def origin_kernels(bundle: RunBundle) -> dict[str, tuple[str, ...]]:
    """Origin -> event names, from every annotated level whose ops were measured directly."""
    found: dict[str, tuple[str, ...]] = {}
    for level in bundle.annotated_levels():
        name = bundle.opprofile_level_path(level).name
        if not bundle.opprofile_level_path(level).exists():
            continue
        profile = OpProfile.load(bundle.member(name, what=f"{level} profile"))
        for entry in profile.entries:
            data = entry.data
            if entry.key.origin and data.kernels and not data.source.startswith(REATTACH):
                found.setdefault(entry.key.origin, data.kernels)
    return found


def with_trace_kernels(
    ops: Sequence[ProfiledOp], kernels_of: Mapping[str, tuple[str, ...]]
) -> list[ProfiledOp]:
    """`ops`, those whose profile was carried down from another level (`reattach:`) listing the
    trace's event names their upper ops were measured by (`origin_kernels`) instead of the
    upper ops themselves (`torch.aten.mm torch#1937`), so that their per-step samples are read
    from the trace as at the upper level. An op with an upper op of unknown kernels keeps its
    list (it then has no samples, and rankings say so)."""
    found: list[ProfiledOp] = []
    for op in ops:
        profile = op.profile
        if profile is None or not profile.source.startswith(REATTACH):
            found.append(op)
            continue
        origins = [label.rsplit(" ", 1)[-1] for label in profile.kernels]
        if not origins or any(origin not in kernels_of for origin in origins):
            found.append(op)
            continue
        names = tuple(dict.fromkeys(name for origin in origins for name in kernels_of[origin]))
        found.append(dataclasses.replace(op, profile=dataclasses.replace(profile, kernels=names)))
    return found

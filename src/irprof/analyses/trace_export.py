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
    # The starts of the op's own events when its names ran other ops too (torch's
    # `aten::linear`); empty: every event of its names is the op's.
    starts: frozenset[int] = frozenset()

    def ran(self, ts_ns: int) -> bool:
        """Whether the event of this op's names starting at `ts_ns` is the op's."""
        return not self.starts or ts_ns in self.starts


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
    # The starts of ops' own events where their names ran other ops too (from the opprofiles).
    measured: MeasuredEvents | None = None

    def event_names(self, profile: ProfileData) -> tuple[str, ...]:
        """The trace's event names behind an op's profile (through its origin when reattached)."""
        if profile.source.startswith(REATTACH):
            return self.origin_kernels.get(reattached_origin(profile), ())
        return profile.kernels

    def event_starts(self, profile: ProfileData) -> frozenset[int]:
        """The starts of the op's own events among its names' (empty: all of them are)."""
        if self.measured is None:
            return frozenset()
        if profile.source.startswith(REATTACH):
            return frozenset(self.measured.starts.get(reattached_origin(profile), ()))
        return frozenset(self.measured.starts_of(profile))

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
                    starts=self.event_starts(op.profile),
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
    measured = measured_events(bundle)
    return TraceExport(
        trace=bundle.trace(),
        trace_path=trace_path.relative_to(bundle.root).as_posix(),
        manifest=manifest,
        levels=tuple((item.level, item.profiled) for item in loaded),
        origin_kernels=measured.kernels,
        measured=measured,
    )


def reattached_origin(profile: ProfileData) -> str:
    """The upper op a `reattach:` profile was carried down from (`reattach:torch#17 split 1/2`
    -> `torch#17`)."""
    return profile.source[len(REATTACH) :].split(" ", 1)[0]


ProfileKey = tuple[int, tuple[str, ...], int]  # first start, event names, count


@dataclass(frozen=True)
class MeasuredEvents:
    """What the annotated levels' opprofiles say about the trace events their ops were measured
    by: the event names of each origin's op, and the starts of ops' own events where their names
    ran other ops too (`ProfileData.event_ts`, which the IR does not hold)."""

    kernels: Mapping[str, tuple[str, ...]]  # origin -> event names
    starts: Mapping[str, tuple[int, ...]]  # origin -> its op's event starts (names shared)
    # What the IR keeps of a profile -> its event starts; None when two entries with that key
    # list different events (they cannot be told apart from the IR).
    by_profile: Mapping[ProfileKey, tuple[int, ...] | None]

    def starts_of(self, profile: ProfileData) -> tuple[int, ...]:
        """The starts of the op's own events, or () when its names are its own or unknown."""
        return self.by_profile.get((profile.first_ts_ns, profile.kernels, profile.count)) or ()


def measured_events(bundle: RunBundle) -> MeasuredEvents:
    """Every annotated level's measured entries (not the ones carried down from another level)."""
    kernels: dict[str, tuple[str, ...]] = {}
    starts: dict[str, tuple[int, ...]] = {}
    by_profile: dict[ProfileKey, tuple[int, ...] | None] = {}
    for level in bundle.annotated_levels():
        name = bundle.opprofile_level_path(level).name
        if not bundle.opprofile_level_path(level).exists():
            continue
        profile = OpProfile.load(bundle.member(name, what=f"{level} profile"))
        for entry in profile.entries:
            data = entry.data
            if not data.kernels or data.source.startswith(REATTACH):
                continue
            if entry.key.origin:
                kernels.setdefault(entry.key.origin, data.kernels)
                if data.event_ts:
                    starts.setdefault(entry.key.origin, data.event_ts)
            if data.event_ts:
                key = (data.first_ts_ns, data.kernels, data.count)
                seen = by_profile.setdefault(key, data.event_ts)
                if seen != data.event_ts:
                    by_profile[key] = None
    return MeasuredEvents(kernels, starts, by_profile)


def with_trace_kernels(ops: Sequence[ProfiledOp], measured: MeasuredEvents) -> list[ProfiledOp]:
    """`ops` with what their per-step samples are read from the trace by:

    - an op whose names ran other ops too gets the starts of its own events (`event_ts`);
    - an op whose profile was carried down from another level (`reattach:`) lists the trace's
      event names its upper ops were measured by instead of the upper ops themselves
      (`torch.aten.mm torch#1937`), and their starts when every upper op has them. An op with an
      upper op of unknown kernels keeps its list (it then has no samples, and rankings say so).
    """
    found: list[ProfiledOp] = []
    for op in ops:
        profile = op.profile
        if profile is None:
            found.append(op)
            continue
        if not profile.source.startswith(REATTACH):
            own = measured.starts_of(profile)
            found.append(
                dataclasses.replace(op, profile=dataclasses.replace(profile, event_ts=own))
                if own
                else op
            )
            continue
        origins = [label.rsplit(" ", 1)[-1] for label in profile.kernels]
        if not origins or any(origin not in measured.kernels for origin in origins):
            found.append(op)
            continue
        names = tuple(dict.fromkeys(k for origin in origins for k in measured.kernels[origin]))
        # Starts only when every upper op has them: a start list stands for all of an op's
        # events, so one upper op without it would lose its events to the filter.
        events = [measured.starts.get(origin, ()) for origin in origins]
        starts = tuple(sorted({t for own in events for t in own})) if all(events) else ()
        replaced = dataclasses.replace(profile, kernels=names, event_ts=starts)
        found.append(dataclasses.replace(op, profile=replaced))
    return found

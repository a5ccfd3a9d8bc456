"""Trace events -> the IR ops they were attributed to, through `ProfileData.kernels`.

`kernels` holds the exact event names a correlator attributed to an op, so joining back needs no
framework knowledge: an event maps to every op (at every annotated level) that lists its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.profiled_ops import ProfiledModule
from irprof.bundle import Manifest, RunBundle
from irprof.errors import BundleError
from irprof.trace.model import Trace


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
                for kernel in op.profile.kernels:
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
    )

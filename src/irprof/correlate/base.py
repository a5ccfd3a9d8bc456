"""The correlator contract: loaded run bundle + level -> per-op profile + coverage.

Correlators are registered per framework in `irprof.frameworks`. They read their inputs through
the bundle's loader (`bundle.manifest()`, `bundle.trace()`, `bundle.ir(level)`), never by path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from irprof.bundle import RunBundle
from irprof.coverage import Coverage
from irprof.opprofile import OpProfile


@dataclass(frozen=True)
class CorrelationOptions:
    """Knobs shared by correlators."""

    fused_time_rule: str = "default"  # each correlator documents what "default" means
    # Also take time from untimed reference steps, where a capture has them (TF): by default
    # they give structure only. Time taken so is listed in coverage and printed.
    reference_time: bool = False


@dataclass(frozen=True)
class CorrelationResult:
    """What a correlator returns for one IR level."""

    opprofile: OpProfile
    coverage: Coverage


class Correlator(Protocol):
    """One per framework; `levels` lists the IR levels it can annotate, in lowering order."""

    framework: str
    levels: tuple[str, ...]

    def correlate(
        self, bundle: RunBundle, level: str, options: CorrelationOptions
    ) -> CorrelationResult:
        """Join the bundle's trace to the ops of `RUN/ir/<level>.mlir`."""
        ...

"""The correlator contract: loaded run bundle + level -> per-op profile + coverage.

Correlators are registered per framework in `irprof.frameworks`. They read their inputs through
the bundle's loader (`bundle.manifest()`, `bundle.trace()`, `bundle.ir(level)`), never by path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from irprof.bundle import RunBundle
from irprof.coverage import Coverage
from irprof.errors import CorrelationError
from irprof.opprofile import OpProfile


@dataclass(frozen=True)
class CorrelationOptions:
    """Knobs shared by correlators."""

    fused_time_rule: str = "default"  # each correlator documents what "default" means
    # Also take time from untimed reference steps, where a capture has them (TF): by default
    # they give structure only. Time taken so is listed in coverage and printed.
    reference_time: bool = False

    def share_basis(self, rules: Mapping[str, str]) -> str:
        """The share basis `rules` maps this `fused_time_rule` to (a correlator's own table);
        an unknown rule is a CorrelationError naming the known ones."""
        basis = rules.get(self.fused_time_rule)
        if basis is None:
            raise CorrelationError(
                f"unknown fused-time rule '{self.fused_time_rule}' (known: {', '.join(rules)})"
            )
        return basis


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

"""The correlator contract and registry: bundle + level -> per-op profile + coverage."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Protocol

from irprof.bundle import RunBundle
from irprof.coverage import Coverage
from irprof.opprofile import OpProfile
from irprof.registry import Registry


@dataclass(frozen=True)
class CorrelationOptions:
    """Knobs shared by correlators."""

    fused_time_rule: str = "default"  # each correlator documents what "default" means


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


def _lazy(module: str) -> Correlator:
    loaded: Correlator = importlib.import_module(module).CORRELATOR
    return loaded


_CORRELATORS: Registry[Correlator] = Registry("correlator")
for _framework, _module in (
    ("tf", "irprof.correlate.tf"),
    ("jax", "irprof.correlate.jax"),
    ("torch", "irprof.correlate.torch"),
):
    _CORRELATORS.register(_framework, functools.partial(_lazy, _module))


def get_all_correlators() -> Registry[Correlator]:
    """framework name -> correlator (lazily imported)."""
    return _CORRELATORS

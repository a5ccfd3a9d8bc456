"""Correlators: join a run bundle's trace to one IR level's ops, per framework."""

from irprof.correlate.base import CorrelationOptions, CorrelationResult, Correlator

__all__ = ["CorrelationOptions", "CorrelationResult", "Correlator"]

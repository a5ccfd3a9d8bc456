"""Capture adapters by framework name, each a lazily imported `capture_<fw>(script, out)`."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from irprof.bundle import RunBundle
from irprof.registry import Registry


@dataclass(frozen=True)
class CaptureAdapter:
    """How to capture one framework with default options, and the bundled example for it."""

    framework: str
    capture: Callable[[Path, Path], RunBundle]
    example: str  # path relative to the repository root


def _load(framework: str, module: str, function: str, example: str) -> CaptureAdapter:
    loaded = importlib.import_module(module)
    return CaptureAdapter(framework, getattr(loaded, function), example)


_CAPTURERS: Registry[CaptureAdapter] = Registry("capture framework")
for _name, _module, _function, _example in (
    ("tf", "irprof.capture.tf", "capture_tf", "examples/tf_cnn.py"),
    ("jax", "irprof.capture.jax", "capture_jax", "examples/jax_mlp.py"),
    ("torch", "irprof.capture.torch", "capture_torch", "examples/torch_cnn.py"),
):
    _CAPTURERS.register(_name, functools.partial(_load, _name, _module, _function, _example))


def get_all_capturers() -> Registry[CaptureAdapter]:
    """framework name -> capture adapter (imported on first use; frameworks load in a child)."""
    return _CAPTURERS

"""Capture adapters by framework name, each a lazily imported `capture_<fw>(script, out)`."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irprof.bundle import RunBundle
from irprof.registry import Registry


@dataclass(frozen=True)
class CaptureAdapter:
    """How to capture one framework with default options, and the bundled example for it."""

    framework: str
    capture: Callable[[Path, Path], RunBundle]
    example: str  # path relative to the repository root


def _load(
    framework: str, module: str, function: str, options: tuple[str, dict[str, Any]], example: str
) -> CaptureAdapter:
    loaded = importlib.import_module(module)
    capture = getattr(loaded, function)
    options_class, fields = options
    chosen = getattr(loaded, options_class)(**fields)
    return CaptureAdapter(framework, lambda script, out: capture(script, out, chosen), example)


_CAPTURERS: Registry[CaptureAdapter] = Registry("capture framework")
for _name, _module, _function, _options, _example in (
    # TF: also the graph after grappler, so the demo shows its fused kernels as IR ops.
    ("tf", "irprof.capture.tf", "capture_tf", ("TfCaptureOptions", {"post_grappler": True}),
     "examples/tf_cnn.py"),
    ("jax", "irprof.capture.jax", "capture_jax", ("JaxCaptureOptions", {}), "examples/jax_mlp.py"),
    ("torch", "irprof.capture.torch", "capture_torch", ("TorchCaptureOptions", {}),
     "examples/torch_cnn.py"),
):  # fmt: skip
    _CAPTURERS.register(
        _name, functools.partial(_load, _name, _module, _function, _options, _example)
    )


def get_all_capturers() -> Registry[CaptureAdapter]:
    """framework name -> capture adapter (imported on first use; frameworks load in a child)."""
    return _CAPTURERS

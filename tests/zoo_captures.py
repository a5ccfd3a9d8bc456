"""Zoo models captured once per test session.

A capture of a real model costs seconds to tens of seconds, and several test modules read the
same model with the same options (the e2e coverage test of every zoo model, the framework tests
of the public-library models). `ZooCaptures` captures each (model, options) pair once for the
session; a test that needs its own settings passes other options and gets its own capture.
Tests read the bundles, or annotate them (annotation adds files the others do not read).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from irprof.bundle import RunBundle
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf
from irprof.frameworks.torch.capture import TorchCaptureOptions, capture_torch

ZOO = Path(__file__).resolve().parents[1] / "examples" / "zoo"
CaptureOptions = TfCaptureOptions | TorchCaptureOptions | JaxCaptureOptions
CAPTURE: dict[type, Callable[[Path, Path, Any], RunBundle]] = {
    TfCaptureOptions: capture_tf,
    TorchCaptureOptions: capture_torch,
    JaxCaptureOptions: capture_jax,
}


class ZooCaptures:
    """`captures(model, options)`: the bundle of `examples/zoo/<model>.py` captured with
    `options`, made on the first call for that pair and returned again after."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bundles: dict[tuple[str, CaptureOptions], RunBundle] = {}

    def __call__(self, model: str, options: CaptureOptions) -> RunBundle:
        key = (model, options)
        if key not in self.bundles:
            out = self.root / f"{model}-{len(self.bundles)}"
            self.bundles[key] = CAPTURE[type(options)](ZOO / f"{model}.py", out, options)
        return self.bundles[key]

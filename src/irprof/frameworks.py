"""Every stack irprof knows, registered once: capture, CLI options, correlator, IR levels, example.

To add a framework, write its capture adapter (`capture/<fw>.py`, plus a `*_runner.py` child that
alone imports the framework), its `capture <fw>` command (`cli/capture_<fw>.py`) and its
correlator (`correlate/<fw>.py`), then add one `Framework` record and one `register` line below.
Nothing else in irprof names a framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from irprof.registry import Registry, load_reference

if TYPE_CHECKING:
    from irprof.bundle import RunBundle
    from irprof.correlate.base import Correlator


class CaptureFunction(Protocol):
    """`capture_<fw>(script, out, options)`: run the model, write the bundle, return it."""

    def __call__(self, script: str | Path, out: str | Path, options: Any, /) -> RunBundle: ...


@dataclass(frozen=True)
class Framework:
    """One stack: where its parts live (lazy `"module:attribute"` references) and what it has."""

    name: str
    summary: str
    capture: str  # capture function, `CaptureFunction`
    options: str  # its options dataclass; keyword arguments of `capture_run` are its fields
    cli: str  # `register(capture_app)` adding `irprof capture <name>`
    correlator: str  # the `Correlator` of this stack's IR levels
    levels: tuple[str, ...]  # IR levels the correlator annotates, in lowering order
    example: str  # the bundled example script, relative to the repository root
    demo_options: Mapping[str, Any] = field(default_factory=dict)

    def load_correlator(self) -> Correlator:
        """The correlator object (imports the correlator module)."""
        return cast("Correlator", load_reference(self.correlator))

    def capture_run(self, script: str | Path, out: str | Path, **options: Any) -> RunBundle:
        """Run `script` under this stack's profiler into the bundle `out`."""
        options_class = cast("type[Any]", load_reference(self.options))
        capture = cast(CaptureFunction, load_reference(self.capture))
        return capture(script, out, options_class(**options))


TF = Framework(
    name="tf",
    summary="TensorFlow 2 (tf.function / Keras) under the TF profiler; TF-dialect MLIR",
    capture="irprof.capture.tf:capture_tf",
    options="irprof.capture.tf:TfCaptureOptions",
    cli="irprof.cli.capture_tf:register",
    correlator="irprof.correlate.tf:CORRELATOR",
    levels=("tf", "tf-standard", "post-grappler"),
    example="examples/tf_cnn.py",
    # The demo also dumps the graph after grappler, so it shows fused kernels as IR ops.
    demo_options={"post_grappler": True},
)
JAX = Framework(
    name="jax",
    summary="JAX on XLA:CPU under jax.profiler; StableHLO",
    capture="irprof.capture.jax:capture_jax",
    options="irprof.capture.jax:JaxCaptureOptions",
    cli="irprof.cli.capture_jax:register",
    correlator="irprof.correlate.jax:CORRELATOR",
    levels=("stablehlo",),
    example="examples/jax_mlp.py",
)
TORCH = Framework(
    name="torch",
    summary="PyTorch under torch.profiler; torch-dialect and linalg MLIR via torch.export",
    capture="irprof.capture.torch:capture_torch",
    options="irprof.capture.torch:TorchCaptureOptions",
    cli="irprof.cli.capture_torch:register",
    correlator="irprof.correlate.torch:CORRELATOR",
    levels=("torch", "linalg"),
    example="examples/torch_cnn.py",
)

IREE = Framework(
    name="iree",
    summary="MLIR compiled by IREE for llvm-cpu, per-dispatch HAL profile; source and flow MLIR",
    capture="irprof.capture.iree:capture_iree",
    options="irprof.capture.iree:IreeCaptureOptions",
    cli="irprof.cli.capture_iree:register",
    correlator="irprof.correlate.iree:CORRELATOR",
    # The source level is named after the input dialect; flow is IREE's dispatch-region level.
    levels=("stablehlo", "torch", "tosa", "linalg", "flow"),
    example="examples/iree_mlp.stablehlo.mlir",
)

_FRAMEWORKS: Registry[Framework] = Registry("framework")
_FRAMEWORKS.register("tf", "irprof.frameworks:TF")
_FRAMEWORKS.register("jax", "irprof.frameworks:JAX")
_FRAMEWORKS.register("torch", "irprof.frameworks:TORCH")
_FRAMEWORKS.register("iree", "irprof.frameworks:IREE")


def get_all_frameworks() -> Registry[Framework]:
    """Framework name -> its record, in registration order via `in_order()`."""
    return _FRAMEWORKS

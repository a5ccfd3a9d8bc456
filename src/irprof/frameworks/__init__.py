"""Every stack irprof knows, registered once: capture, CLI options, correlator, IR levels, example.

Each stack is one package, `frameworks/<fw>/`: its capture adapter and child runners, its
`capture <fw>` command, its correlator and passes. Adding one is that folder plus one `Framework`
record and one `register` line below (the recipe: docs/architecture.md).
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
    capture="irprof.frameworks.tf.capture:capture_tf",
    options="irprof.frameworks.tf.capture:TfCaptureOptions",
    cli="irprof.frameworks.tf.cli:register",
    correlator="irprof.frameworks.tf.correlate:CORRELATOR",
    # `xla`: the StableHLO XLA compiled a `jit_compile=True` function into, when there is one.
    levels=("tf", "tf-standard", "post-grappler", "xla"),
    example="examples/tf_cnn.py",
    # The demo also dumps the graph after grappler, so it shows fused kernels as IR ops.
    demo_options={"post_grappler": True},
)
JAX = Framework(
    name="jax",
    summary="JAX on XLA:CPU under jax.profiler; StableHLO",
    capture="irprof.frameworks.jax.capture:capture_jax",
    options="irprof.frameworks.jax.capture:JaxCaptureOptions",
    cli="irprof.frameworks.jax.cli:register",
    correlator="irprof.frameworks.jax.correlate:CORRELATOR",
    levels=("stablehlo",),
    example="examples/jax_mlp.py",
)
TORCH = Framework(
    name="torch",
    summary="PyTorch under torch.profiler; torch-dialect and linalg MLIR via torch.export",
    capture="irprof.frameworks.torch.capture:capture_torch",
    options="irprof.frameworks.torch.capture:TorchCaptureOptions",
    cli="irprof.frameworks.torch.cli:register",
    correlator="irprof.frameworks.torch.correlate:CORRELATOR",
    levels=("torch", "linalg"),
    example="examples/torch_cnn.py",
)

IREE = Framework(
    name="iree",
    summary="MLIR compiled by IREE for llvm-cpu, per-dispatch HAL profile; source and flow MLIR",
    capture="irprof.frameworks.iree.capture:capture_iree",
    options="irprof.frameworks.iree.capture:IreeCaptureOptions",
    cli="irprof.frameworks.iree.cli:register",
    correlator="irprof.frameworks.iree.correlate:CORRELATOR",
    # The source level is named after the input dialect; flow is IREE's dispatch-region level.
    levels=("stablehlo", "torch", "tosa", "linalg", "flow"),
    example="examples/iree_mlp.stablehlo.mlir",
)

ONNX = Framework(
    name="onnx",
    summary="ONNX models under ONNX Runtime's profiler (CPU EP); the model imported to MLIR",
    capture="irprof.frameworks.onnx.capture:capture_onnx",
    options="irprof.frameworks.onnx.capture:OnnxCaptureOptions",
    cli="irprof.frameworks.onnx.cli:register",
    correlator="irprof.frameworks.onnx.correlate:CORRELATOR",
    levels=("onnx",),
    example="examples/onnx_mlp.py",
)

_FRAMEWORKS: Registry[Framework] = Registry("framework")
_FRAMEWORKS.register("tf", "irprof.frameworks:TF")
_FRAMEWORKS.register("jax", "irprof.frameworks:JAX")
_FRAMEWORKS.register("torch", "irprof.frameworks:TORCH")
_FRAMEWORKS.register("iree", "irprof.frameworks:IREE")
_FRAMEWORKS.register("onnx", "irprof.frameworks:ONNX")


def get_all_frameworks() -> Registry[Framework]:
    """Framework name -> its record, in registration order via `in_order()`."""
    return _FRAMEWORKS

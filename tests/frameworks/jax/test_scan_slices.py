"""A layer stack under `lax.scan` over stacked weights (Flax's `nn.scan`, the LLM layout), trained.

XLA fuses the backward scan's reversed index (`L - 1 - i`: one scalar `subtract`) into each
`dynamic-slice` that takes a layer's weights out of the stack. Split by FLOPs, the scalar took
the slice's whole time: `transpose(jvp(...))/while/body/sub` ranked as a hot op. The check is
structural, from the annotated IR and its profile: integer scalars computed from scalars are
loop indices, so the time they hold as shares of fused kernels is a sliver of those kernels'.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.annotation import annotate_bundle
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.mlir.op_index import walk_ops

pytestmark = pytest.mark.slow

MODEL = """
from typing import Any
import jax
import jax.numpy as jnp

LAYERS, WIDTH = 4, 48

def irprof_model(mode: str = "infer") -> tuple[Any, tuple[Any, ...]]:
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {
        "w": jax.random.normal(keys[0], (LAYERS, WIDTH, WIDTH)) / WIDTH,
        "b": jnp.zeros((LAYERS, WIDTH)),
    }
    x = jax.random.normal(keys[1], (16, WIDTH))

    def loss(params: Any, x: jax.Array) -> jax.Array:
        def layer(h: jax.Array, wb: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
            w, b = wb
            return jnp.tanh(h @ w + b), None

        out, _ = jax.lax.scan(layer, x, (params["w"], params["b"]))
        return jnp.mean(out**2)

    return loss, (params, x)
"""


def test_a_scalar_index_fused_into_a_slice_holds_a_sliver_of_it(tmp_path: Path) -> None:
    script = tmp_path / "scan_stack.py"
    script.write_text(MODEL)
    bundle = capture_jax(script, tmp_path / "run", JaxCaptureOptions(mode="train", steps=3))
    annotate_bundle(bundle, "stablehlo")
    loaded = load_annotated_level(bundle, "stablehlo")
    ops = walk_ops(loaded.module)

    def index_arithmetic(index: int) -> bool:
        """An integer scalar computed from scalars: a loop index, not tensor work."""
        op = ops[index]
        types = [str(value.type) for value in (*op.results, *op.operands)]
        scalar = all(text.startswith("tensor<") and "x" not in text for text in types)
        return scalar and str(op.results[0].type)[len("tensor<") :].startswith(("i", "ui"))

    index_ns = fused_ns = 0
    for op in loaded.profiled.ops:
        profile = op.profile
        if profile is None or not profile.estimated:
            continue
        fused_ns += profile.total_ns
        if len(ops[op.index].results) == 1 and index_arithmetic(op.index):
            index_ns += profile.total_ns
    assert fused_ns > 0
    # A scalar's share of a kernel is its one element among the elements the kernel writes
    # (at least a 48-wide row of a layer's weights here): under 1/48 of the fused time.
    assert index_ns <= fused_ns / 48, (index_ns, fused_ns)

"""A wide MLP (batch 64, 1024 -> 1024 -> 1024 -> 10) as StableHLO for `irprof capture iree`.

`.venv/bin/python examples/zoo/iree_mlp_wide.py OUT.mlir` writes the module JAX lowers
(`jax.jit(f).lower(...).as_text()`, debug info on, so every op keeps its JAX source location);
the weights are arguments, so `capture iree` draws them at random from the signature.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

SHAPES = {"x": (64, 1024), "w1": (1024, 1024), "w2": (1024, 1024), "w3": (1024, 10)}


def mlp(x: jax.Array, w1: jax.Array, w2: jax.Array, w3: jax.Array) -> jax.Array:
    """Two GELU layers and a softmax head."""
    hidden = jax.nn.gelu(x @ w1)
    hidden = jax.nn.gelu(hidden @ w2)
    return jax.nn.softmax(hidden @ w3, axis=-1)


def stablehlo_text() -> str:
    """The StableHLO of `mlp` for float32 arguments of `SHAPES`, with locations."""
    specs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in SHAPES.values()]
    return jax.jit(mlp).lower(*specs).as_text(debug_info=True)


if __name__ == "__main__":
    Path(sys.argv[1] if len(sys.argv) > 1 else "iree_mlp_wide.mlir").write_text(stablehlo_text())

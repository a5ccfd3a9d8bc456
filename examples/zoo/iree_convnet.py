"""A small conv net (8x32x32x3 -> conv 3x3x32 -> conv 3x3x64 -> 2x2 mean pool -> dense 10) as
StableHLO for `irprof capture iree`.

`.venv/bin/python examples/zoo/iree_convnet.py OUT.mlir` writes the module JAX lowers, with
debug info (JAX source locations on every op); weights are arguments drawn at random by
`capture iree`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

SHAPES = {
    "images": (8, 32, 32, 3),
    "k1": (3, 3, 3, 32),
    "k2": (3, 3, 32, 64),
    "w": (16 * 16 * 64, 10),
}


def convnet(images: jax.Array, k1: jax.Array, k2: jax.Array, w: jax.Array) -> jax.Array:
    """Two SAME convolutions with ReLU, a 2x2 mean pool and a dense head."""
    dims = ("NHWC", "HWIO", "NHWC")
    hidden = jax.lax.conv_general_dilated(images, k1, (1, 1), "SAME", dimension_numbers=dims)
    hidden = jax.nn.relu(hidden)
    hidden = jax.lax.conv_general_dilated(hidden, k2, (1, 1), "SAME", dimension_numbers=dims)
    hidden = jax.nn.relu(hidden)
    batch, height, width, channels = hidden.shape
    pooled = hidden.reshape(batch, height // 2, 2, width // 2, 2, channels).mean(axis=(2, 4))
    return pooled.reshape(batch, -1) @ w


def stablehlo_text() -> str:
    """The StableHLO of `convnet` for float32 arguments of `SHAPES`, with locations."""
    specs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in SHAPES.values()]
    return jax.jit(convnet).lower(*specs).as_text(debug_info=True)


if __name__ == "__main__":
    Path(sys.argv[1] if len(sys.argv) > 1 else "iree_convnet.mlir").write_text(stablehlo_text())

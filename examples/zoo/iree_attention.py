"""A transformer encoder block (batch 4, 128 tokens, width 256, 4 heads, MLP 1024) as StableHLO
for `irprof capture iree`.

`.venv/bin/python examples/zoo/iree_attention.py OUT.mlir` writes the module JAX lowers, with
debug info (JAX source locations on every op); weights are arguments drawn at random by
`capture iree`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

BATCH, TOKENS, WIDTH, HEADS, HIDDEN = 4, 128, 256, 4, 1024
SHAPES = {
    "x": (BATCH, TOKENS, WIDTH),
    "wqkv": (WIDTH, 3 * WIDTH),
    "wo": (WIDTH, WIDTH),
    "w1": (WIDTH, HIDDEN),
    "w2": (HIDDEN, WIDTH),
}


def _norm(x: jax.Array) -> jax.Array:
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


def block(x: jax.Array, wqkv: jax.Array, wo: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    """Pre-norm self-attention and GELU MLP, each with a residual."""
    q, k, v = jnp.split(_norm(x) @ wqkv, 3, axis=-1)

    def heads(t: jax.Array) -> jax.Array:
        return t.reshape(BATCH, TOKENS, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)

    scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / jnp.sqrt(WIDTH / HEADS)
    attended = jax.nn.softmax(scores, axis=-1) @ heads(v)
    x = x + attended.transpose(0, 2, 1, 3).reshape(BATCH, TOKENS, WIDTH) @ wo
    return x + jax.nn.gelu(_norm(x) @ w1) @ w2


def stablehlo_text() -> str:
    """The StableHLO of `block` for float32 arguments of `SHAPES`, with locations."""
    specs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in SHAPES.values()]
    return jax.jit(block).lower(*specs).as_text(debug_info=True)


if __name__ == "__main__":
    Path(sys.argv[1] if len(sys.argv) > 1 else "iree_attention.mlir").write_text(stablehlo_text())

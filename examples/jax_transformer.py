"""One pre-norm transformer block in JAX for irprof, on a batch of sequences.

x -> LayerNorm -> multi-head self-attention -> + x -> LayerNorm -> MLP (GELU) -> + residual.

irprof's JAX capture convention: `irprof_model()` returns `(function, example_args)`; irprof
calls `jax.jit(function)` and profiles it. `layer_norm` is `jax.jit`-wrapped and called twice:
StableHLO holds it once as a private function with two `func.call` sites, which XLA inlines at
both. Run it alone to check it works: `python examples/jax_transformer.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

SEED = 0
BATCH = 4
SEQ = 64
D_MODEL = 128
HEADS = 4
D_MLP = 512
EPS = 1e-5


@jax.jit
def layer_norm(x: jax.Array, scale: jax.Array, shift: jax.Array) -> jax.Array:
    """Normalise the last axis; jitted on its own so it lowers to a private function."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPS) * scale + shift


def attention(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Multi-head scaled dot-product self-attention (no mask)."""
    batch, seq, d_model = x.shape
    head_dim = d_model // HEADS
    qkv = x @ params["w_qkv"]  # (batch, seq, 3 * d_model)
    q, k, v = jnp.split(qkv, 3, axis=-1)

    def heads(t: jax.Array) -> jax.Array:
        return t.reshape(batch, seq, HEADS, head_dim).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(float(head_dim))
    weights = jax.nn.softmax(scores, axis=-1)
    context = jnp.einsum("bhqk,bhkd->bhqd", weights, v)
    context = context.transpose(0, 2, 1, 3).reshape(batch, seq, d_model)
    return context @ params["w_out"]


def block(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Pre-norm transformer block: attention and MLP sub-layers, each with a residual."""
    x = x + attention(params, layer_norm(x, params["ln1_scale"], params["ln1_shift"]))
    hidden = layer_norm(x, params["ln2_scale"], params["ln2_shift"])
    hidden = jax.nn.gelu(hidden @ params["w_up"] + params["b_up"])
    return x + hidden @ params["w_down"] + params["b_down"]


def init_params(key: jax.Array) -> dict[str, jax.Array]:
    """Deterministic weights (scaled normal), unit layer-norm scales."""
    k_qkv, k_out, k_up, k_down = jax.random.split(key, 4)
    return {
        "ln1_scale": jnp.ones((D_MODEL,)),
        "ln1_shift": jnp.zeros((D_MODEL,)),
        "w_qkv": jax.random.normal(k_qkv, (D_MODEL, 3 * D_MODEL)) * D_MODEL**-0.5,
        "w_out": jax.random.normal(k_out, (D_MODEL, D_MODEL)) * D_MODEL**-0.5,
        "ln2_scale": jnp.ones((D_MODEL,)),
        "ln2_shift": jnp.zeros((D_MODEL,)),
        "w_up": jax.random.normal(k_up, (D_MODEL, D_MLP)) * D_MODEL**-0.5,
        "b_up": jnp.zeros((D_MLP,)),
        "w_down": jax.random.normal(k_down, (D_MLP, D_MODEL)) * D_MLP**-0.5,
        "b_down": jnp.zeros((D_MODEL,)),
    }


def irprof_model() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """irprof entry: (function to jit and profile, example arguments)."""
    key = jax.random.PRNGKey(SEED)
    params = init_params(key)
    x = jax.random.normal(jax.random.fold_in(key, 1), (BATCH, SEQ, D_MODEL))
    return block, (params, x)


if __name__ == "__main__":
    function, args = irprof_model()
    out = jax.jit(function)(*args)
    print(out.shape, float(jnp.abs(out).mean()))

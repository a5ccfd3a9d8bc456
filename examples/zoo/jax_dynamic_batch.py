"""JAX shape polymorphism: the model exported with a symbolic batch dimension `b`.

The entry returns `polymorphic_shapes`, so irprof's IR level is the shape-polymorphic
StableHLO of `jax.export` (`tensor<?x128xf32>`, a `shape_assertion` on `b`), while the profiled
executable is the same function compiled for the example batch, which is what calling the
export does once the shapes are known.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def mlp(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """GELU MLP with a layer norm, batch size unknown at export."""
    hidden = jax.nn.gelu(x @ params["up"] + params["up_bias"])
    mean = hidden.mean(axis=-1, keepdims=True)
    centered = hidden - mean
    hidden = centered * jax.lax.rsqrt((centered**2).mean(axis=-1, keepdims=True) + 1e-5)
    return jax.nn.softmax(hidden @ params["down"], axis=-1)


def irprof_model() -> dict[str, Any]:
    """The function, its arguments (a batch of 96) and the batch dimension left symbolic."""
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    params = {
        "up": jax.random.normal(keys[0], (128, 512)) * 128**-0.5,
        "up_bias": jnp.zeros((512,)),
        "down": jax.random.normal(keys[1], (512, 10)) * 512**-0.5,
    }
    x = jax.random.normal(keys[2], (96, 128))
    return {"function": mlp, "args": (params, x), "polymorphic_shapes": (None, "b, 128")}

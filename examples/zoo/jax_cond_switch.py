"""JAX `lax.cond` and `lax.switch` on the data: each picks one branch of dense layers per call.

Both lower to `stablehlo.case` with one region per branch; XLA:CPU runs a `conditional` thunk and
only the taken branch's kernels, so the other branches' ops get no time in the profiled steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def model(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """A trunk layer, a two-way `cond` and a three-way `switch`, then a head."""
    hidden = jax.nn.relu(x @ params["trunk"])
    hidden = jax.lax.cond(
        hidden.mean() > 0.5,
        lambda h: jnp.tanh(h @ params["wide"]),
        lambda h: jax.nn.sigmoid(h @ params["narrow"]),
        hidden,
    )
    index = (jnp.abs(hidden).sum() * 7).astype(jnp.int32) % 3
    hidden = jax.lax.switch(
        index,
        [
            lambda h: h @ params["a"],
            lambda h: jax.nn.gelu(h @ params["b"]),
            lambda h: h * 2.0,
        ],
        hidden,
    )
    return hidden @ params["head"]


def irprof_model() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function, its parameters and one batch (deterministic)."""
    keys = jax.random.split(jax.random.PRNGKey(3), 7)
    shapes = {
        "trunk": (128, 256),
        "wide": (256, 256),
        "narrow": (256, 256),
        "a": (256, 256),
        "b": (256, 256),
        "head": (256, 8),
    }
    params = {
        name: jax.random.normal(key, shape) * shape[0] ** -0.5
        for key, (name, shape) in zip(keys, shapes.items(), strict=False)
    }
    return model, (params, jax.random.normal(keys[6], (128, 128)))

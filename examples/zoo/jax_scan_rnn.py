"""JAX: an Elman RNN over a sequence with `lax.scan`, then a `lax.cond` on the mean state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def rnn(params: dict[str, jax.Array], inputs: jax.Array) -> jax.Array:
    """Final state of a tanh RNN (scan over time), scaled by a data-dependent branch."""

    def step(state: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        state = jnp.tanh(x @ params["wx"] + state @ params["wh"] + params["b"])
        return state, state

    init = jnp.zeros((inputs.shape[1], params["wh"].shape[0]), inputs.dtype)
    final, _ = jax.lax.scan(step, init, inputs)
    return jax.lax.cond(final.mean() > 0, lambda s: s * 2.0, lambda s: s - 1.0, final)


def irprof_model() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function and its arguments: parameters and a (time, batch, features) sequence."""
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {
        "wx": jax.random.normal(keys[0], (16, 32)) * 0.2,
        "wh": jax.random.normal(keys[1], (32, 32)) * 0.2,
        "b": jnp.zeros((32,)),
    }
    return rnn, (params, jax.random.normal(keys[2], (20, 8, 16)))

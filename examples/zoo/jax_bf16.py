"""JAX in bfloat16: convolution and dense layers with bf16 parameters and activations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

DTYPE = jnp.bfloat16


def model(params: dict[str, jax.Array], images: jax.Array) -> jax.Array:
    """Conv -> ReLU -> conv (stride 2) -> ReLU -> mean pool -> dense, all in bf16."""
    numbers = ("NHWC", "HWIO", "NHWC")
    x = images.astype(DTYPE)
    x = jax.nn.relu(
        jax.lax.conv_general_dilated(x, params["conv1"], (1, 1), "SAME", dimension_numbers=numbers)
    )
    x = jax.nn.relu(
        jax.lax.conv_general_dilated(x, params["conv2"], (2, 2), "SAME", dimension_numbers=numbers)
    )
    pooled = x.mean(axis=(1, 2))
    return (pooled @ params["head"]).astype(jnp.float32)


def irprof_model() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function, bf16 parameters and one batch of float32 images (deterministic)."""
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    params = {
        "conv1": (jax.random.normal(keys[0], (3, 3, 3, 16)) * 0.2).astype(DTYPE),
        "conv2": (jax.random.normal(keys[1], (3, 3, 16, 32)) * 0.1).astype(DTYPE),
        "head": (jax.random.normal(keys[2], (32, 10)) * 0.2).astype(DTYPE),
    }
    return model, (params, jax.random.uniform(keys[3], (16, 32, 32, 3)))

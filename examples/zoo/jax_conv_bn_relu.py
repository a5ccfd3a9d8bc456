"""JAX conv -> batch norm -> ReLU, inference, with the statistics folded at compile time.

The batch-norm statistics and affine parameters are closed over (constants of the jitted
function), so XLA folds `scale * rsqrt(var + eps)` and the shift into constants and fuses the
normalisation and the ReLU into one elementwise kernel after each convolution; the ops it
folded away are listed as removed. `jax_cnn_train.py` is the unfolded case (batch statistics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

NUMBERS = ("NHWC", "HWIO", "NHWC")


def batch_norm_constants(key: jax.Array, channels: int) -> dict[str, jax.Array]:
    """Fixed running statistics and affine parameters of one batch norm."""
    keys = jax.random.split(key, 4)
    return {
        "mean": jax.random.normal(keys[0], (channels,)) * 0.1,
        "var": jax.random.uniform(keys[1], (channels,)) + 0.5,
        "scale": jax.random.uniform(keys[2], (channels,)) + 0.5,
        "shift": jax.random.normal(keys[3], (channels,)) * 0.1,
    }


def make_model(key: jax.Array) -> Callable[..., jax.Array]:
    """The model with its batch-norm constants closed over."""
    norms = [
        batch_norm_constants(k, c) for k, c in zip(jax.random.split(key, 2), (16, 32), strict=True)
    ]

    def model(kernels: dict[str, jax.Array], images: jax.Array) -> jax.Array:
        x = images
        for name, norm in zip(("conv1", "conv2"), norms, strict=True):
            x = jax.lax.conv_general_dilated(
                x, kernels[name], (1, 1), "SAME", dimension_numbers=NUMBERS
            )
            x = (x - norm["mean"]) * jax.lax.rsqrt(norm["var"] + 1e-5) * norm["scale"] + norm[
                "shift"
            ]
            x = jax.nn.relu(x)
        return x.mean(axis=(1, 2)) @ kernels["head"]

    return model


def irprof_model() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function, its convolution kernels and one batch of images (deterministic)."""
    keys = jax.random.split(jax.random.PRNGKey(11), 5)
    kernels = {
        "conv1": jax.random.normal(keys[0], (3, 3, 3, 16)) * 0.2,
        "conv2": jax.random.normal(keys[1], (3, 3, 16, 32)) * 0.1,
        "head": jax.random.normal(keys[2], (32, 10)) * 0.2,
    }
    return make_model(keys[3]), (kernels, jax.random.uniform(keys[4], (16, 32, 32, 3)))

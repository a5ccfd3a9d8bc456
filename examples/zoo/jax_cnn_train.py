"""JAX training step of a conv -> batch norm (batch statistics) -> ReLU network.

`irprof capture jax --mode train` (the zoo table captures files ending in `_train` that way):
the entry returns the loss function and `(params, images, labels)`; irprof jits one step of
`jax.value_and_grad` + SGD. The batch norm normalises with the batch's own statistics, so
nothing folds; the backward ops (`transpose(jvp())/...`) are linked to the forward ops they
differentiate through their names and source positions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

NUMBERS = ("NHWC", "HWIO", "NHWC")
CLASSES = 10


def forward(params: dict[str, jax.Array], images: jax.Array) -> jax.Array:
    """Logits: two conv-BN-ReLU blocks (batch statistics), mean pooling, dense."""
    x = images
    for block in ("block1", "block2"):
        x = jax.lax.conv_general_dilated(
            x, params[f"{block}_kernel"], (1, 1), "SAME", dimension_numbers=NUMBERS
        )
        mean = x.mean(axis=(0, 1, 2))
        var = ((x - mean) ** 2).mean(axis=(0, 1, 2))
        x = (x - mean) * jax.lax.rsqrt(var + 1e-5) * params[f"{block}_scale"] + params[
            f"{block}_shift"
        ]
        x = jax.nn.relu(x)
    return x.mean(axis=(1, 2)) @ params["head"]


def loss_fn(params: dict[str, jax.Array], images: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy."""
    logits = forward(params, images)
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


def irprof_model(mode: str = "train") -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """irprof entry: `mode="train"` gives (loss_fn, (params, images, labels)), `"infer"` gives
    (forward, (params, images))."""
    keys = jax.random.split(jax.random.PRNGKey(13), 5)
    params = {
        "block1_kernel": jax.random.normal(keys[0], (3, 3, 3, 16)) * 0.2,
        "block1_scale": jnp.ones((16,)),
        "block1_shift": jnp.zeros((16,)),
        "block2_kernel": jax.random.normal(keys[1], (3, 3, 16, 32)) * 0.1,
        "block2_scale": jnp.ones((32,)),
        "block2_shift": jnp.zeros((32,)),
        "head": jax.random.normal(keys[2], (32, CLASSES)) * 0.2,
    }
    images = jax.random.uniform(keys[3], (16, 32, 32, 3))
    if mode == "infer":
        return forward, (params, images)
    if mode != "train":
        raise ValueError(f"mode must be 'infer' or 'train', not {mode!r}")
    labels = jax.random.randint(keys[4], (16,), 0, CLASSES)
    return loss_fn, (params, images, labels)

"""A small JAX model for irprof: Conv2D -> ReLU -> Flatten -> Dense -> ReLU -> Dense -> softmax.

irprof's JAX capture convention: the script defines `irprof_model(mode="infer")` returning
`(function, example_args)`; irprof calls `jax.jit(function)`, dumps its StableHLO and optimized
HLO, and profiles `function(*example_args)`. With `mode="train"` it returns
`(loss_fn, (params, *batch))` instead and irprof profiles one SGD step of
`jax.value_and_grad(loss_fn)` (`irprof capture jax --mode train`). Parameters are arguments
(not closed-over constants) so XLA cannot fold the layers away. `dense` is itself
`jax.jit`-wrapped: in StableHLO it becomes a private function reached through `func.call`, and
XLA inlines it, which is the case irprof must join through. Run it alone to check it works:
`python examples/jax_mlp.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

SEED = 0
BATCH = 16
IMAGE = (28, 28, 1)  # height, width, channels (NHWC)
CONV_FEATURES = 8
HIDDEN = 128
CLASSES = 10


@jax.jit
def dense(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    """An affine layer; jitted on its own so it lowers to a private function."""
    return x @ w + b


def conv_relu(images: jax.Array, kernel: jax.Array, bias: jax.Array) -> jax.Array:
    """3x3 'SAME' convolution with bias and ReLU."""
    y = jax.lax.conv_general_dilated(
        images, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return jax.nn.relu(y + bias)


def mlp(params: dict[str, jax.Array], images: jax.Array) -> jax.Array:
    """Class probabilities for a batch of images."""
    features = conv_relu(images, params["conv_w"], params["conv_b"])
    flat = features.reshape(features.shape[0], -1)
    hidden = jax.nn.relu(dense(flat, params["w1"], params["b1"]))
    logits = dense(hidden, params["w2"], params["b2"])
    return jax.nn.softmax(logits, axis=-1)


def init_params(key: jax.Array) -> dict[str, jax.Array]:
    """Deterministic weights (scaled normal)."""
    k_conv, k1, k2 = jax.random.split(key, 3)
    flat = IMAGE[0] * IMAGE[1] * CONV_FEATURES
    return {
        "conv_w": jax.random.normal(k_conv, (3, 3, IMAGE[2], CONV_FEATURES)) * 0.3,
        "conv_b": jnp.zeros((CONV_FEATURES,)),
        "w1": jax.random.normal(k1, (flat, HIDDEN)) * flat**-0.5,
        "b1": jnp.zeros((HIDDEN,)),
        "w2": jax.random.normal(k2, (HIDDEN, CLASSES)) * HIDDEN**-0.5,
        "b2": jnp.zeros((CLASSES,)),
    }


def cross_entropy(params: dict[str, jax.Array], images: jax.Array, labels: jax.Array) -> jax.Array:
    """Mean cross-entropy of the class probabilities against integer labels."""
    probabilities = mlp(params, images)
    picked = jnp.take_along_axis(probabilities, labels[:, None], axis=-1)
    return -jnp.mean(jnp.log(picked + 1e-9))


def irprof_model(mode: str = "infer") -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """irprof entry: (function to jit and profile, example arguments); for `mode="train"`
    (loss function, (params, images, labels))."""
    key = jax.random.PRNGKey(SEED)
    params = init_params(key)
    images = jax.random.uniform(jax.random.fold_in(key, 1), (BATCH, *IMAGE))
    if mode == "train":
        labels = jax.random.randint(jax.random.fold_in(key, 2), (BATCH,), 0, CLASSES)
        return cross_entropy, (params, images, labels)
    if mode != "infer":
        raise ValueError(f"mode must be 'infer' or 'train', not {mode!r}")
    return mlp, (params, images)


if __name__ == "__main__":
    function, args = irprof_model()
    probabilities = jax.jit(function)(*args)
    print(probabilities.shape, float(probabilities.sum()))

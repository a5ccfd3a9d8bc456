"""TF residual block: conv, BN, ReLU, depthwise, BN, 1x1 conv, add skip, pool, dense.

The remapper fuses the 1x1 convolution, its bias and the skip addition into one kernel named
after the addition; the stem convolution feeds the skip. Attribution must send that kernel's time
to the 1x1 convolution, not to the stem.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the block and one batch of images (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_residual_block only supports mode='infer'")
    tf.keras.utils.set_random_seed(3)
    layers = tf.keras.layers
    inputs = tf.keras.Input((32, 32, 3), batch_size=16)
    stem = layers.ReLU(name="stem_relu")(
        layers.BatchNormalization(name="stem_bn")(
            layers.Conv2D(8, 3, padding="same", name="stem")(inputs)
        )
    )
    branch = layers.BatchNormalization(name="dw_bn")(
        layers.DepthwiseConv2D(3, padding="same", name="dw")(stem)
    )
    branch = layers.Conv2D(8, 1, name="project")(branch)
    merged = layers.Add(name="skip")([branch, stem])
    pooled = layers.GlobalAveragePooling2D(name="pool")(merged)
    outputs = layers.Dense(5, name="head")(pooled)
    model = tf.keras.Model(inputs, outputs)

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((16, 32, 32, 3), seed=(3, 4)),)

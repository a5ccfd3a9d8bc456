"""TF Keras model whose forward pass runs as one XLA cluster: `tf.function(jit_compile=True)`.

Conv2D + ReLU, a residual Dense block with LayerNormalization and a softmax head, called inside a
`jit_compile=True` function: in the profiled steps this work exists only as the XLA executable's
events, which irprof joins to the TF ops through the HLO instructions' `op_name` metadata.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the XLA-compiled forward function and one batch of images."""
    if mode != "infer":
        raise ValueError("tf_jit_compile only supports mode='infer'")
    tf.keras.utils.set_random_seed(11)
    layers = tf.keras.layers
    inputs = tf.keras.Input((16, 16, 3), batch_size=8)
    x = layers.Conv2D(16, 3, padding="same", activation="relu", name="conv")(inputs)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    h = layers.Dense(32, activation="gelu", name="up")(x)
    h = layers.Dense(16, name="down")(h)
    x = layers.LayerNormalization(name="norm")(layers.Add(name="residual")([x, h]))
    outputs = layers.Dense(5, activation="softmax", name="head")(x)
    model = tf.keras.Model(inputs, outputs, name="tf_jit_compile")

    @tf.function(jit_compile=True)
    def infer(images: tf.Tensor) -> tf.Tensor:
        return model(images, training=False)

    return infer, (tf.random.stateless_uniform((8, 16, 16, 3), seed=(11, 12)),)


if __name__ == "__main__":
    fn, batch = irprof_model()
    print(fn(*batch).shape)

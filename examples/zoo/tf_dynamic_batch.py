"""TF `tf.function` with a `None` batch dimension: one graph for every batch size.

The IR's tensors are `tensor<?x128xf32>`, so no FLOP estimate can come from the IR's shapes; the
shapes the profiler recorded for each kernel (host tracer level 3) give them instead.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

FEATURES = 128


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the function (batch dimension unknown) and one batch of 96 rows."""
    if mode != "infer":
        raise ValueError("tf_dynamic_batch only supports mode='infer'")
    tf.keras.utils.set_random_seed(13)
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            layers.Dense(256, activation="gelu", name="up"),
            layers.LayerNormalization(name="norm"),
            layers.Dense(FEATURES, name="down"),
            layers.Dense(10, activation="softmax", name="head"),
        ]
    )
    model.build((None, FEATURES))

    @tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((96, FEATURES), seed=(13, 14)),)

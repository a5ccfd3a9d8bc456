"""TF depthwise-separable stack: SeparableConv2D + BN + ReLU6 twice, pooling, dense with GELU."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the model and one batch of images (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_separable only supports mode='infer'")
    tf.keras.utils.set_random_seed(5)
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((16, 16, 4), batch_size=4),
            layers.SeparableConv2D(8, 3, padding="same", name="sep1"),
            layers.BatchNormalization(name="bn1"),
            layers.ReLU(6.0, name="relu6_1"),
            layers.SeparableConv2D(16, 3, padding="same", name="sep2"),
            layers.BatchNormalization(name="bn2"),
            layers.ReLU(6.0, name="relu6_2"),
            layers.GlobalAveragePooling2D(name="pool"),
            layers.Dense(16, activation="gelu", name="hidden"),
            layers.Dense(3, name="head"),
        ]
    )

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((4, 16, 16, 4), seed=(5, 6)),)

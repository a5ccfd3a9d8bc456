"""TF in bfloat16: convolution and dense layers computing in bf16 (Keras `mixed_bfloat16`).

Weights stay float32 and are cast to bf16 where they are read, so the IR holds `tf.Cast` ops
next to every layer, and the kernels run on bf16 tensors.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the bf16 model and one batch of float32 images (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_bf16 only supports mode='infer'")
    tf.keras.utils.set_random_seed(17)
    layers = tf.keras.layers
    policy = "mixed_bfloat16"
    model = tf.keras.Sequential(
        [
            tf.keras.Input((32, 32, 3), batch_size=16),
            layers.Conv2D(16, 3, padding="same", activation="relu", dtype=policy, name="conv1"),
            layers.Conv2D(32, 3, strides=2, activation="relu", dtype=policy, name="conv2"),
            layers.GlobalAveragePooling2D(dtype=policy, name="pool"),
            layers.Dense(64, activation="relu", dtype=policy, name="hidden"),
            layers.Dense(10, dtype="float32", name="head"),
        ]
    )

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((16, 32, 32, 3), seed=(17, 18)),)

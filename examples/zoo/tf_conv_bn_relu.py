"""TF conv -> Keras BatchNormalization -> ReLU twice, inference: not folded.

Keras's inference batch norm is arithmetic on the statistics variables (`batchnorm/Rsqrt`,
`mul`, `sub`, `add_1`), not a `FusedBatchNormV3`, so grappler's remapper has no pattern for it:
the convolution, each batch-norm op and the ReLU run as kernels of their own.
`tf_conv_bn_relu_folded.py` is the folded case, `tf_conv_bn_relu_train.py` the training step.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def build(seed: int) -> tf.keras.Model:
    """Two conv-BN-ReLU blocks, pooling and a classifier (no conv bias: BN has the shift)."""
    tf.keras.utils.set_random_seed(seed)
    layers = tf.keras.layers
    return tf.keras.Sequential(
        [
            tf.keras.Input((32, 32, 3), batch_size=16),
            layers.Conv2D(16, 3, padding="same", use_bias=False, name="conv1"),
            layers.BatchNormalization(name="bn1"),
            layers.ReLU(name="relu1"),
            layers.Conv2D(32, 3, padding="same", use_bias=False, name="conv2"),
            layers.BatchNormalization(name="bn2"),
            layers.ReLU(name="relu2"),
            layers.GlobalAveragePooling2D(name="pool"),
            layers.Dense(10, name="head"),
        ]
    )


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the model and one batch of images (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_conv_bn_relu only supports mode='infer'; see tf_conv_bn_relu_train")
    model = build(23)

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((16, 32, 32, 3), seed=(23, 24)),)

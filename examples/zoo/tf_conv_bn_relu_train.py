"""TF training step of conv -> BN -> ReLU blocks: batch norm on batch statistics, not folded.

`irprof capture tf --mode train` (the zoo table captures files ending in `_train` that way): one
SGD step with a `GradientTape`. In training the batch norm normalises with the batch's own
statistics and updates its moving averages, so it cannot fold into the convolution; the
gradient ops (`gradient_tape/...`) are linked to the forward ops they differentiate.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tf_conv_bn_relu import build


def irprof_model(mode: str = "train") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: one training step and a batch of images with integer labels."""
    model = build(29)
    images = tf.random.stateless_uniform((16, 32, 32, 3), seed=(29, 30))
    labels = tf.random.stateless_uniform((16,), seed=(29, 31), maxval=10, dtype=tf.int32)
    if mode == "infer":

        @tf.function
        def infer(x: tf.Tensor) -> tf.Tensor:
            return model(x, training=False)

        return infer, (images,)
    if mode != "train":
        raise ValueError(f"mode must be 'infer' or 'train', not {mode!r}")
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step, (images, labels)

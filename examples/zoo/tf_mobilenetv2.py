"""TF `keras.applications.MobileNetV2`, random weights, inference: public library code.

The library's model as a user would run it (`weights=None`, `alpha=0.35`, 64x64 images so the
capture stays quick). Its inverted residual blocks end in `block_<k>_add`; each block's inference
batch norm (`batchnorm/add_1`) and skip `Add` are rewritten by grappler's arithmetic optimizer
into `ArithmeticOptimizer/AddOpsRewrite_*` nodes, which attribution must give back to that
block's own ops from the executed graph's def-use.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

BATCH = 4
SIZE = 64


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the model and one batch of images (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_mobilenetv2 only supports mode='infer'")
    tf.keras.utils.set_random_seed(41)
    model = tf.keras.applications.MobileNetV2(
        input_shape=(SIZE, SIZE, 3), alpha=0.35, weights=None, classes=10
    )

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_uniform((BATCH, SIZE, SIZE, 3), seed=(41, 42)),)

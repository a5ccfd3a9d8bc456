"""TF conv -> fused batch norm (inference) -> ReLU: the pattern grappler folds into one kernel.

`tf.nn.conv2d` followed by `FusedBatchNormV3` with `is_training=False` and `tf.nn.relu` is the
remapper's Conv2D+FusedBatchNorm+Relu pattern: the runtime runs one `_FusedConv2D` (oneDNN:
`_MklNativeFusedConv2D`, `fused_ops = [FusedBatchNorm, Relu]`) named after the Relu, whose time
the IR's Conv2D, FusedBatchNormV3 and Relu share. `tf_conv_bn_relu.py` is the same block with
Keras's batch norm, which is arithmetic on variables that the remapper does not fold.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


class ConvBnRelu(tf.Module):
    """3x3 convolution, inference batch norm with its own statistics, ReLU."""

    def __init__(self, channels_in: int, channels_out: int, seed: int, name: str) -> None:
        super().__init__(name=name)
        shape = (3, 3, channels_in, channels_out)
        self.kernel = tf.Variable(tf.random.stateless_normal(shape, (seed, 1)) * 0.2)
        self.scale = tf.Variable(tf.random.stateless_uniform((channels_out,), (seed, 2)) + 0.5)
        self.offset = tf.Variable(tf.random.stateless_normal((channels_out,), (seed, 3)) * 0.1)
        self.mean = tf.Variable(tf.random.stateless_normal((channels_out,), (seed, 4)) * 0.1)
        self.variance = tf.Variable(tf.random.stateless_uniform((channels_out,), (seed, 5)) + 0.5)

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        with tf.name_scope(self.name):
            y = tf.nn.conv2d(x, self.kernel, 1, "SAME")
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(
                y, self.scale, self.offset, self.mean, self.variance, is_training=False
            )
            return tf.nn.relu(y)


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: two folded blocks, pooling and a classifier; one batch of images."""
    if mode != "infer":
        raise ValueError("tf_conv_bn_relu_folded only supports mode='infer'")
    blocks = [ConvBnRelu(3, 16, 31, "block1"), ConvBnRelu(16, 32, 32, "block2")]
    head = tf.Variable(tf.random.stateless_normal((32, 10), (33, 1)) * 0.2)

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        for block in blocks:
            x = block(x)
        return tf.matmul(tf.reduce_mean(x, axis=(1, 2)), head)

    return infer, (tf.random.stateless_uniform((16, 32, 32, 3), seed=(31, 32)),)

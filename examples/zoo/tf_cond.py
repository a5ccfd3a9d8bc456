"""TF `tf.cond` on the data: one of two dense branches runs per call, chosen by the batch mean.

Inside a `tf.function` the branch is an `If`/`StatelessIf` op whose `then_branch` and
`else_branch` are functions of their own: the IR holds their ops as `node@<function>`, and the
executor runs the taken branch's nodes under the `If` node's name.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the function and one batch (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_cond only supports mode='infer'")
    tf.keras.utils.set_random_seed(11)
    trunk = tf.keras.layers.Dense(256, activation="relu", name="trunk")
    wide = tf.keras.layers.Dense(256, activation="tanh", name="wide")
    narrow = tf.keras.layers.Dense(256, name="narrow")
    head = tf.keras.layers.Dense(8, name="head")

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        hidden = trunk(x)
        branch = tf.cond(
            tf.reduce_mean(hidden) > 0.0,
            lambda: wide(hidden) * 2.0,
            lambda: tf.nn.sigmoid(narrow(hidden)),
        )
        return head(branch)

    return infer, (tf.random.stateless_uniform((512, 128), seed=(11, 12)),)

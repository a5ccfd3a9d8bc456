"""TF sequence model: Conv1D -> max pool -> LSTM (last state) -> dense, inference.

A Keras `LSTM` runs as a `tf.while_loop` whose body reads the kernel, recurrent kernel and bias
variables every time step (`ReadVariableOp` inside the body function); `tf-standard-pipeline`
moves or merges those reads, which attribution must follow back to the op that remains.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

BATCH = 8
SEQUENCE = 32
FEATURES = 6


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the model and one batch of sequences (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_conv1d_lstm only supports mode='infer'")
    tf.keras.utils.set_random_seed(43)
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((SEQUENCE, FEATURES), batch_size=BATCH),
            layers.Conv1D(16, 3, padding="same", activation="relu", name="conv"),
            layers.MaxPooling1D(2, name="pool"),
            layers.LSTM(32, name="lstm"),
            layers.Dense(4, name="head"),
        ]
    )

    @tf.function
    def infer(x: tf.Tensor) -> tf.Tensor:
        return model(x, training=False)

    return infer, (tf.random.stateless_normal((BATCH, SEQUENCE, FEATURES), seed=(43, 44)),)

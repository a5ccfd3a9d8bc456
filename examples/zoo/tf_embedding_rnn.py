"""TF text model: embedding -> GRU (full sequence) -> LSTM (last state) -> dense.

Keras runs each recurrent layer as a `tf.while_loop`: a `While` op whose `cond` and `body` are
functions; the runtime lowers it to Enter/Merge/Switch/NextIteration/Exit nodes and inlines the
body as `<while>/body/_<k>/<node>` once, running it once per time step.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

VOCABULARY = 2000
SEQUENCE = 24
BATCH = 32


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: the model and one batch of token ids (deterministic)."""
    if mode != "infer":
        raise ValueError("tf_embedding_rnn only supports mode='infer'")
    tf.keras.utils.set_random_seed(19)
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input((SEQUENCE,), batch_size=BATCH, dtype="int32"),
            layers.Embedding(VOCABULARY, 64, name="embed"),
            layers.GRU(96, return_sequences=True, name="gru"),
            layers.LSTM(96, name="lstm"),
            layers.Dense(5, name="head"),
        ]
    )

    @tf.function
    def infer(tokens: tf.Tensor) -> tf.Tensor:
        return model(tokens, training=False)

    tokens = tf.random.stateless_uniform(
        (BATCH, SEQUENCE), seed=(19, 20), maxval=VOCABULARY, dtype=tf.int32
    )
    return infer, (tokens,)

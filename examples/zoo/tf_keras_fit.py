"""TF Keras classifier trained with `model.fit` at its defaults: `irprof capture tf --mode fit`.

A grouped Conv2D (`groups=2`), BatchNormalization, pooling and a dense head, compiled with Adam
and a cross-entropy loss, nothing else set. Keras 3 runs grouped convolutions on CPU through a
`tf.function(jit_compile=True)` of its own (they are broken in TF's CPU kernels), so a plain
`fit` already goes through XLA: the convolution's forward and gradient run as XLA clusters inside
Keras' train function, the rest as TF kernels. Each profiled step is one
`model.fit(dataset, epochs=1, verbose=0)` call on a `tf.data` dataset of one batch, built once
(as a training script builds its input pipeline once, not per step).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

BATCH = 32  # fit's default batch size: the data is one batch, a step is one optimizer step


def build_model() -> tf.keras.Model:
    """The classifier, compiled at Keras' defaults (jit_compile="auto", Adam's defaults)."""
    layers = tf.keras.layers
    init = tf.keras.initializers.GlorotUniform(seed=3)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((12, 12, 4)),
            layers.Conv2D(8, 3, groups=2, kernel_initializer=init, name="grouped_conv"),
            layers.BatchNormalization(name="bn"),
            layers.ReLU(name="relu"),
            layers.GlobalAveragePooling2D(name="pool"),
            layers.Dense(5, kernel_initializer=init, name="head"),
        ],
        name="tf_keras_fit",
    )
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def irprof_model(mode: str = "fit") -> tuple[Any, tuple[Any, ...]]:
    """irprof entry: (compiled model, data): for `--mode fit` a dataset of one (images, labels)
    batch, for `--mode predict` one batch of images, for `infer` the images as a tensor."""
    if mode not in ("fit", "predict", "infer"):
        raise ValueError(
            f"tf_keras_fit runs as Keras runs it: mode fit, predict or infer, not {mode!r}"
        )
    rng = np.random.default_rng(3)
    images = rng.random((BATCH, 12, 12, 4), dtype=np.float32)
    labels = rng.integers(0, 5, BATCH)
    if mode == "fit":
        return build_model(), (tf.data.Dataset.from_tensors((images, labels)),)
    return build_model(), (tf.constant(images) if mode == "infer" else images,)


if __name__ == "__main__":
    keras_model, data = irprof_model()
    print(keras_model.fit(*data, epochs=1, verbose=0).history)

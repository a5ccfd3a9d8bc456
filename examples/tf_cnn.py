"""Small TF CNN for irprof: Conv2D -> ReLU -> MaxPool -> Flatten -> Dense -> Dense(softmax).

irprof's TF capture convention: the script defines `irprof_model(mode="infer")` returning
`(callable, example_inputs)`. The callable is a `tf.function` (or a Keras model, which irprof
wraps in one) that irprof traces once, dumps as MLIR and profiles; `example_inputs` is a tuple of
positional arguments. `mode="train"` returns one optimizer step (forward, gradients, SGD update)
instead of inference. Run it alone to check it works: `python examples/tf_cnn.py`.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

SEED = 7
BATCH = 32
IMAGE = (28, 28, 1)
CLASSES = 10


def build_model() -> tf.keras.Model:
    """The CNN with deterministic weights."""
    tf.keras.utils.set_random_seed(SEED)
    return tf.keras.Sequential(
        [
            tf.keras.Input(shape=IMAGE, batch_size=BATCH),
            tf.keras.layers.Conv2D(16, 3, activation="relu", name="conv"),
            tf.keras.layers.MaxPooling2D(2, name="pool"),
            tf.keras.layers.Flatten(name="flatten"),
            tf.keras.layers.Dense(32, activation="relu", name="dense1"),
            tf.keras.layers.Dense(CLASSES, activation="softmax", name="dense2"),
        ],
        name="tf_cnn",
    )


def example_batch() -> tuple[tf.Tensor, tf.Tensor]:
    """A fixed batch of images and integer labels."""
    gen = tf.random.Generator.from_seed(SEED)
    images = gen.uniform((BATCH, *IMAGE))
    labels = gen.uniform((BATCH,), maxval=CLASSES, dtype=tf.int32)
    return images, labels


def irprof_model(mode: str = "infer") -> tuple[Any, tuple[tf.Tensor, ...]]:
    """irprof entry: (callable to profile, example inputs) for `mode` "infer" or "train"."""
    model = build_model()
    images, labels = example_batch()
    if mode == "infer":

        @tf.function
        def infer(x: tf.Tensor) -> tf.Tensor:
            return model(x, training=False)

        return infer, (images,)
    if mode == "train":
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()

        @tf.function
        def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return train_step, (images, labels)
    raise ValueError(f"mode must be 'infer' or 'train', not {mode!r}")


if __name__ == "__main__":
    for run_mode in ("infer", "train"):
        fn, inputs = irprof_model(run_mode)
        print(run_mode, fn(*inputs).shape)

"""A Keras LSTM and GRU under `jit_compile=True`, captured live: XLA compiles each recurrent layer
into a while loop. TensorFlow's XLA module then holds an `mhlo.copy` the MLIR bindings cannot
parse: the capture keeps the TF levels and says why the `xla` level is missing (it failed the
whole capture before), and the loop bodies' kernels find their ops in the While's body
functions (the tf level had 15.9% of its time attributed before)."""

from __future__ import annotations

import pytest

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf, level_failures
from irprof.frameworks.tf.correlate import CORRELATOR

MODEL = """
import tensorflow as tf


def irprof_model():
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.Sequential([
        tf.keras.Input((6, 4)),
        tf.keras.layers.LSTM(8, return_sequences=True),
        tf.keras.layers.GRU(8),
        tf.keras.layers.Dense(2),
    ])

    @tf.function(jit_compile=True)
    def infer(x):
        return model(x, training=False)

    return infer, (tf.random.stateless_normal((2, 6, 4), seed=(1, 2)),)
"""


@pytest.fixture(scope="module")
def rnn_run(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    folder = tmp_path_factory.mktemp("xla_rnn")
    script = folder / "rnn.py"
    script.write_text(MODEL)
    return capture_tf(script, folder / "run", TfCaptureOptions(steps=2, warmup=1))


@pytest.mark.timeout(900)
def test_an_unreadable_xla_module_drops_that_level_with_its_reason(rnn_run: RunBundle) -> None:
    levels = rnn_run.manifest().ir_levels
    assert {"tf", "tf-standard"} <= set(levels)
    if "xla" not in levels:
        (line,) = level_failures(rnn_run)
        assert line.startswith("level xla not captured: XLA module import failed: ")
        assert line.endswith("; the other levels are kept")


@pytest.mark.timeout(900)
def test_kernels_of_the_loop_bodies_find_their_ops(rnn_run: RunBundle) -> None:
    result = CORRELATOR.correlate(rnn_run, "tf", CorrelationOptions())
    coverage = result.coverage
    unnamed = [e for e in coverage.unmatched_events if "not found at this level" in e.reason]
    assert unnamed == []
    listed = sum(e.total_ns for e in coverage.unmatched_events)
    assert coverage.attributed_ns + listed == coverage.profiled_ns
    assert coverage.attributed_ns >= 0.95 * coverage.profiled_ns

"""The tracer-options check that makes a TF capture fail when the profiler ignored its levels."""

from __future__ import annotations

from irprof.frameworks.tf.options import requested_tracer_options, tracer_options_mismatch


def test_honoured_options_pass() -> None:
    requested = requested_tracer_options(3, 1)
    assert tracer_options_mismatch(requested, dict(requested), "x.xplane.pb") is None


def test_the_tf_2_21_downgrade_is_caught() -> None:
    # What `tf.profiler.experimental.start(options=...)` really records in TF 2.21.
    recorded = {"host_tracer_level": 2, "python_tracer_level": 0, "device_tracer_level": 1}
    message = tracer_options_mismatch(requested_tracer_options(3, 1), recorded, "x.xplane.pb")
    assert message is not None
    assert "host_tracer_level asked 3 got 2" in message
    assert "python_tracer_level asked 1 got 0" in message
    assert "device_tracer_level" not in message


def test_missing_options_are_not_trusted() -> None:
    message = tracer_options_mismatch(requested_tracer_options(3, 0), {}, "x.xplane.pb")
    assert message is not None and "no profile_options" in message

"""TensorFlow 2 under the TF profiler (xprof): capture, TF-dialect levels, correlation by node name.

Capture side: `capture`, `runner` and `steps_runner` (the only modules importing TensorFlow, in a
child process), `options`, `paths`. Correlation side: `correlate` and its helpers. See
docs/tensorflow.md.
"""

"""ONNX models under ONNX Runtime's profiler (CPU execution provider); the `onnx` level is the
model imported by iree-import-onnx. Capture side: `capture`, `runner`, `inputs`, `paths`.
Correlation side: `correlate`, `graph` (ORT's fusions mapped back by def-use). See docs/onnx.md.
"""

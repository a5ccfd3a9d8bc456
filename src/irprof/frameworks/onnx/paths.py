"""Where an ONNX bundle keeps its files, shared by the capture child and the correlator."""

from __future__ import annotations

LEVEL = "onnx"  # the model as imported by iree-import-onnx: torch.operator "onnx.*"
SOURCE_MODEL = "ir/model.onnx"  # the model as run, every node named
OPTIMIZED_MODEL = "ir/onnxruntime.optimized.onnx"  # SessionOptions.optimized_model_filepath
GRAPHS_FILE = "ir/onnx.graphs.json"  # both graphs' structure (`frameworks/onnx/graph.py`)
GRAPHS_FORMAT = "irprof-onnx-graphs"
GRAPHS_VERSION = 1
TRACE_FILE = "trace/onnxruntime.json"  # ORT's events of the profiled runs
FULL_TRACE_FILE = "trace/onnxruntime.full.json"  # ORT's profile as written, warm-up included

"""A pre-norm transformer block (attention + GELU MLP) written in PyTorch and exported to ONNX
with `torch.onnx.export` (the TorchScript exporter, `dynamo=False`: the dynamo exporter needs
onnxscript), batch dimension dynamic. ONNX Runtime folds the exporter's shape arithmetic,
fuses the GELU and the Linear layers' MatMul+Add, and keeps the LayerNormalization nodes.

`irprof_model()` returns the ModelProto (seeded weights, no download); `python
examples/onnx_transformer.py OUT.onnx` saves it.
"""

from __future__ import annotations

import io
import math
import sys
import warnings

import onnx
import torch
from torch import nn

WIDTH, HEADS, HIDDEN, TOKENS = 32, 4, 64, 8


class Block(nn.Module):
    """x + attention(norm(x)), then + mlp(norm(x)) with a GELU."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.fc1 = nn.Linear(WIDTH, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, WIDTH)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, count, width = tokens.shape
        head = width // HEADS
        query, key, value = (
            part.reshape(batch, count, HEADS, head).transpose(1, 2)
            for part in self.qkv(self.norm1(tokens)).split(width, dim=-1)
        )
        weights = torch.softmax(query @ key.transpose(-1, -2) / math.sqrt(head), dim=-1)
        attended = (weights @ value).transpose(1, 2).reshape(batch, count, width)
        tokens = tokens + self.proj(attended)
        return tokens + self.fc2(nn.functional.gelu(self.fc1(self.norm2(tokens))))


def irprof_model() -> onnx.ModelProto:
    """The exported block; feed `--dim batch=N` (default 1)."""
    torch.manual_seed(0)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python ints in shapes
        torch.onnx.export(
            Block().eval(),
            (torch.randn(2, TOKENS, WIDTH),),
            buffer,
            dynamo=False,
            input_names=["tokens"],
            output_names=["hidden"],
            dynamic_axes={"tokens": {0: "batch"}, "hidden": {0: "batch"}},
            opset_version=17,
        )
    return onnx.load_from_string(buffer.getvalue())


if __name__ == "__main__":
    onnx.save(irprof_model(), sys.argv[1] if len(sys.argv) > 1 else "onnx_transformer.onnx")

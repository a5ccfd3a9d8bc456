"""PyTorch with dynamic shapes: batch and sequence length exported as symbolic dimensions.

`torch.export` gets `dynamic_shapes` from the entry's dict, so the IR has `?` dimensions (and
`torch.bind_symbolic_shape` ops) while the profiled steps run the example batch. A 1-D conv over
the sequence, a masked softmax pooling over its positions and a classifier.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.export import Dim


class ConvPool(nn.Module):
    """Token embedding, a 1-D conv, attention-weighted pooling over the sequence."""

    def __init__(self, vocab: int = 30, width: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.conv = nn.Conv1d(width, width, 3, padding=1)
        self.score = nn.Linear(width, 1)
        self.head = nn.Linear(width, classes)

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        states = torch.relu(self.conv(self.embed(token_ids).transpose(1, 2))).transpose(1, 2)
        scores = self.score(states).squeeze(-1).masked_fill(mask == 0, -1e4)
        weights = torch.softmax(scores, dim=1).unsqueeze(-1)
        return self.head((weights * states).sum(dim=1))


def irprof_model() -> dict[str, Any]:
    """Model, one batch (3 sequences of 11 tokens, the last padded) and the symbolic dims."""
    torch.manual_seed(0)
    token_ids = torch.randint(1, 30, (3, 11))
    mask = torch.ones(3, 11, dtype=torch.int64)
    mask[2, 7:] = 0
    batch, length = Dim("batch", min=2, max=64), Dim("length", min=4, max=512)
    return {
        "model": ConvPool().eval(),
        "inputs": (token_ids, mask),
        "dynamic_shapes": {"token_ids": {0: batch, 1: length}, "mask": {0: batch, 1: length}},
    }

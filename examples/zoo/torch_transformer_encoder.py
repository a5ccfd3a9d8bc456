"""PyTorch two-layer transformer encoder built from `nn.TransformerEncoderLayer`."""

from __future__ import annotations

import torch
from torch import nn


class Encoder(nn.Module):
    """Embedding, two encoder layers, mean pooling and a classifier."""

    def __init__(self, vocab: int = 40, width: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(token_ids)).mean(dim=1))


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model (eval mode: no dropout) and one batch of token ids (deterministic)."""
    torch.manual_seed(0)
    return Encoder().eval(), (torch.randint(0, 40, (2, 10)),)

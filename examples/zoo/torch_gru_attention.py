"""PyTorch embedding -> GRU -> attention pooling -> LayerNorm -> linear."""

from __future__ import annotations

import torch
from torch import nn


class GruAttention(nn.Module):
    """A GRU over embedded tokens, pooled by learned attention weights."""

    def __init__(self, vocab: int = 50, width: int = 24, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.gru = nn.GRU(width, width, batch_first=True)
        self.score = nn.Linear(width, 1)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        states, _ = self.gru(self.embed(token_ids))
        weights = torch.softmax(self.score(states), dim=1)
        pooled = (weights * states).sum(dim=1)
        return self.head(self.norm(pooled))


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model and one batch of token ids (deterministic)."""
    torch.manual_seed(0)
    return GruAttention(), (torch.randint(0, 50, (2, 12)),)

"""A small self-attention sequence model for `irprof capture torch`.

The forward runs a Python loop over identical encoder blocks, and each block calls its own
projection layers on one source line, so the profile has repeated identical layers that only
their module path and execution order tell apart.
"""

from __future__ import annotations

import torch
from torch import nn


class EncoderBlock(nn.Module):
    """Single-head self-attention and a feed-forward layer, each with a residual and norm."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.norm1 = nn.LayerNorm(width)
        self.ff = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.scale = width**-0.5

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        q, k, v = self.query(tokens), self.key(tokens), self.value(tokens)
        weights = torch.softmax(torch.matmul(q, k.transpose(1, 2)) * self.scale, dim=-1)
        tokens = self.norm1(tokens + torch.matmul(weights, v))
        return self.norm2(tokens + torch.relu(self.ff(tokens)))


class TinyEncoder(nn.Module):
    """Embedding, a loop over identical blocks, mean-pooling and a classifier."""

    def __init__(self, vocab: int = 64, width: int = 32, depth: int = 3, classes: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(EncoderBlock(width) for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(token_ids)
        for block in self.blocks:
            tokens = block(tokens)
        return self.head(tokens.mean(dim=1))


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model and one batch of token ids (deterministic)."""
    torch.manual_seed(0)
    return TinyEncoder(), (torch.randint(0, 64, (2, 16)),)

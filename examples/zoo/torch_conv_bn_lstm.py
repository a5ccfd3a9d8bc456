"""PyTorch: conv -> BatchNorm -> ReLU over a sequence's features, then an LSTM and a classifier."""

from __future__ import annotations

import torch
from torch import nn


class ConvLstm(nn.Module):
    """1-D conv block (not folded: eval-mode BatchNorm stays its own op) feeding an LSTM."""

    def __init__(self, channels: int = 6, width: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv1d(channels, width, 3, padding=1)
        self.bn = nn.BatchNorm1d(width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, signal: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.bn(self.conv(signal))).transpose(1, 2)
        states, _ = self.lstm(features)
        return self.head(states[:, -1])


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model (eval mode) and one batch of signals (deterministic)."""
    torch.manual_seed(0)
    return ConvLstm().eval(), (torch.randn(2, 6, 24),)

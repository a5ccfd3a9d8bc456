"""A small CNN for `irprof capture torch`: conv, relu, max-pool, two linear layers, softmax.

`irprof_model()` returns the module and its example inputs; weights are seeded so runs repeat.
"""

from __future__ import annotations

import torch
from torch import nn


class SmallCnn(nn.Module):
    """conv -> relu -> pool -> flatten -> linear -> relu -> linear -> softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.pool(torch.relu(self.conv(images)))
        hidden = torch.relu(self.fc1(torch.flatten(features, 1)))
        return torch.softmax(self.fc2(hidden), dim=1)


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model and one batch of example inputs (deterministic)."""
    torch.manual_seed(0)
    return SmallCnn(), (torch.randn(4, 3, 16, 16),)

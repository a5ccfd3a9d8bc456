"""PyTorch training step: conv -> BatchNorm (training) -> ReLU -> dropout -> pool -> linear.

`irprof capture torch --mode train` runs forward + cross-entropy loss, backward and an SGD step
with momentum; the entry's dict names the loss, its targets and the optimizer.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class SmallConvNet(nn.Module):
    """Two conv blocks (BatchNorm in training mode, dropout) and a classifier."""

    def __init__(self, channels: int = 3, width: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.drop = nn.Dropout(0.1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(width, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.bn1(self.conv1(images)))
        features = self.drop(torch.relu(self.conv2(features)))
        return self.head(self.pool(features).flatten(1))


def irprof_model() -> dict[str, Any]:
    """Model, one batch with its labels, the loss and the optimizer (deterministic)."""
    torch.manual_seed(0)
    model = SmallConvNet()
    return {
        "model": model,
        "inputs": (torch.randn(4, 3, 12, 12),),
        "targets": (torch.tensor([0, 3, 1, 4]),),
        "loss": nn.CrossEntropyLoss(),
        "optimizer": torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
    }

"""PyTorch in bfloat16: a gated MLP block (LayerNorm, GELU, a sigmoid gate, residual) and a head.

Weights and inputs are `torch.bfloat16`; eager CPU kernels run in bf16 and the IR's tensors are
`bf16`, so the FLOP estimates that split decomposed calls see bf16 element types.
"""

from __future__ import annotations

import torch
from torch import nn


class GatedBlock(nn.Module):
    """x + W2(gelu(W1 norm(x)) * sigmoid(Wg norm(x))), twice, then a classifier."""

    def __init__(self, width: int = 32, hidden: int = 64, classes: int = 5) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(2))
        self.ups = nn.ModuleList(nn.Linear(width, hidden) for _ in range(2))
        self.gates = nn.ModuleList(nn.Linear(width, hidden) for _ in range(2))
        self.downs = nn.ModuleList(nn.Linear(hidden, width) for _ in range(2))
        self.head = nn.Linear(width, classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        for norm, up, gate, down in zip(self.norms, self.ups, self.gates, self.downs, strict=True):
            normed = norm(features)
            mixed = nn.functional.gelu(up(normed)) * torch.sigmoid(gate(normed))
            features = features + down(mixed)
        return self.head(features.mean(dim=1))


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The bf16 model and one bf16 batch (deterministic)."""
    torch.manual_seed(0)
    model = GatedBlock().to(torch.bfloat16).eval()
    return model, (torch.randn(4, 12, 32, dtype=torch.bfloat16),)

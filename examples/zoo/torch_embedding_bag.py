"""PyTorch recommendation-style model: embedding bags over sparse ids, dense MLP, dot products.

Two `nn.EmbeddingBag` tables pool variable-length id lists (flat ids + offsets; `sum` bags:
torch-mlir's linalg lowering refuses `mean`), an `nn.Embedding` with a padding index looks up
one id per row; the embeddings and the dense
features' MLP output interact by pairwise dot products (`bmm`) before the top MLP.
"""

from __future__ import annotations

import torch
from torch import nn


class SparseDense(nn.Module):
    """DLRM-like: bottom MLP, three embedding lookups, pairwise dot products, top MLP."""

    def __init__(self, dense: int = 6, width: int = 8, rows: int = 40) -> None:
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense, 16), nn.ReLU(), nn.Linear(16, width))
        self.items = nn.EmbeddingBag(rows, width, mode="sum")
        self.tags = nn.EmbeddingBag(rows, width, mode="sum")
        self.user = nn.Embedding(rows, width, padding_idx=0)
        self.top = nn.Sequential(nn.Linear(width + 6, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(
        self,
        features: torch.Tensor,
        item_ids: torch.Tensor,
        item_offsets: torch.Tensor,
        tag_ids: torch.Tensor,
        tag_offsets: torch.Tensor,
        user_ids: torch.Tensor,
    ) -> torch.Tensor:
        dense = self.bottom(features)
        vectors = torch.stack(
            [
                dense,
                self.items(item_ids, item_offsets),
                self.tags(tag_ids, tag_offsets),
                self.user(user_ids),
            ],
            dim=1,
        )
        products = torch.bmm(vectors, vectors.transpose(1, 2))
        upper = torch.triu_indices(4, 4, offset=1)
        pairs = products[:, upper[0], upper[1]]
        return torch.sigmoid(self.top(torch.cat([dense, pairs], dim=1)))


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model and one batch of 4 rows (deterministic ids and offsets)."""
    torch.manual_seed(0)
    features = torch.randn(4, 6)
    item_ids = torch.randint(1, 40, (10,))
    item_offsets = torch.tensor([0, 3, 5, 8])
    tag_ids = torch.randint(1, 40, (7,))
    tag_offsets = torch.tensor([0, 2, 4, 6])
    user_ids = torch.tensor([3, 0, 7, 12])
    inputs = (features, item_ids, item_offsets, tag_ids, tag_offsets, user_ids)
    return SparseDense().eval(), inputs

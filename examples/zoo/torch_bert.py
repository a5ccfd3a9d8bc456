"""Hugging Face BERT (`BertModel`, 2 layers) from a small config with random weights.

Library model code (`transformers/models/bert/modeling_bert.py`), no download. BERT registers
`position_ids` as a non-persistent buffer (`register_buffer(..., persistent=False)`), which the
capture lifts into the program like any other constant.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertConfig, BertModel

VOCAB = 64
SEQUENCE = 8


class BertPooled(nn.Module):
    """The encoder's last hidden state as a plain tensor (the library returns a ModelOutput)."""

    def __init__(self) -> None:
        super().__init__()
        config = BertConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=token_ids).last_hidden_state


def irprof_model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model (eval mode) and one sequence of token ids (deterministic)."""
    torch.manual_seed(0)
    return BertPooled().eval(), (torch.randint(0, VOCAB, (1, SEQUENCE)),)

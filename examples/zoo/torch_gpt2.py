"""Hugging Face GPT-2 (`GPT2LMHeadModel`, 2 layers) from a small config with random weights.

Library model code (`transformers/models/gpt2/modeling_gpt2.py`), no download. Its default
attention (SDPA) cannot be decomposed by torch for a batch of sequences: the capture keeps
`aten.scaled_dot_product_attention` whole and records why in the manifest. `--mode train`
adds a language-model loss and an AdamW step: the LM head shares its weight with the token
embedding (`wte.weight` is `lm_head.weight`), so one AccumulateGrad serves both.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB = 64
SEQUENCE = 8
BATCH = 2  # with more than one sequence torch's SDPA decomposition breaks a later view


class GPT2Logits(nn.Module):
    """The LM's logits as a plain tensor (the library returns a ModelOutput)."""

    def __init__(self) -> None:
        super().__init__()
        config = GPT2Config(
            vocab_size=VOCAB,
            n_positions=32,
            n_embd=32,
            n_layer=2,
            n_head=2,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=0,
            eos_token_id=0,
        )
        self.lm = GPT2LMHeadModel(config)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=token_ids, use_cache=False).logits


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every position's logits against the next token."""
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def irprof_model() -> dict[str, Any]:
    """Model, one sequence of token ids with its next tokens, the loss and an AdamW optimizer
    (`--mode infer` uses the model and inputs only; deterministic)."""
    torch.manual_seed(0)
    model = GPT2Logits()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQUENCE + 1))
    return {
        "model": model,
        "inputs": (tokens[:, :-1],),
        "targets": (tokens[:, 1:],),
        "loss": next_token_loss,
        "optimizer": torch.optim.AdamW(model.parameters(), lr=1e-3),
    }

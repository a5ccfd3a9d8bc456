"""A Flax (linen) Transformer encoder: two pre-norm blocks of self-attention and an MLP.

Public library code with random weights and tiny sizes: `flax.linen.MultiHeadDotProductAttention`,
`LayerNorm` and `Dense`, so the ops' locations run through Flax's own files (kept portable in the
bundle as `<sys.path>/flax/...`). Both blocks run the same code: IREE compiles their identical
dispatches once, and each block still gets its own launches' time.
`irprof capture jax --mode train` runs one step of `jax.value_and_grad` + SGD on the
cross-entropy of a linear head.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

BATCH, SEQUENCE, FEATURES, HEADS, HIDDEN, BLOCKS, CLASSES = 2, 16, 32, 4, 64, 2, 8


class EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, each with a residual connection."""

    heads: int
    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        attended = nn.MultiHeadDotProductAttention(num_heads=self.heads, name="attention")(
            nn.LayerNorm(name="attention_norm")(x)
        )
        x = x + attended
        hidden = nn.Dense(self.hidden, name="mlp_up")(nn.LayerNorm(name="mlp_norm")(x))
        return x + nn.Dense(x.shape[-1], name="mlp_down")(nn.gelu(hidden))


class Encoder(nn.Module):
    """`BLOCKS` encoder blocks and a final layer norm."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for index in range(BLOCKS):
            x = EncoderBlock(HEADS, HIDDEN, name=f"block{index}")(x)
        return nn.LayerNorm(name="final_norm")(x)


def irprof_model(mode: str = "infer") -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """irprof entry: `"infer"` gives (forward, (params, tokens)), `"train"` gives
    (loss_fn, (params, tokens, labels))."""
    keys = jax.random.split(jax.random.PRNGKey(17), 4)
    tokens = jax.random.normal(keys[0], (BATCH, SEQUENCE, FEATURES))
    encoder = Encoder()
    head = nn.Dense(CLASSES)
    params = {
        "encoder": encoder.init(keys[1], tokens),
        "head": head.init(keys[2], tokens[:, 0]),
    }

    def forward(params: dict[str, Any], tokens: jax.Array) -> jax.Array:
        return encoder.apply(params["encoder"], tokens)  # type: ignore[no-any-return]

    if mode == "infer":
        return forward, (params, tokens)
    if mode != "train":
        raise ValueError(f"mode must be 'infer' or 'train', not {mode!r}")

    def loss_fn(params: dict[str, Any], tokens: jax.Array, labels: jax.Array) -> jax.Array:
        logits = head.apply(params["head"], forward(params, tokens).mean(axis=1))
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))

    labels = jax.random.randint(keys[3], (BATCH,), 0, CLASSES)
    return loss_fn, (params, tokens, labels)

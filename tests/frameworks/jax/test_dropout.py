"""A Flax block trained with dropout on XLA:CPU: the dropout's random bits are attributed.

`jax.random.bernoulli` lowers to private functions (`@_bernoulli` -> `@_uniform` -> a call of
`@threefry2x32` at `loc("")` -> its loop body), shared by the call sites of every dropout layer.
XLA names the inlined loop `.../jit(_bernoulli)/jit(_uniform)/while`, with no component for the
unnamed call. Before that call counted as no scope, these thunks (22% of this step) were listed
as "op names not found in the IR".
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from irprof.annotation import annotate_bundle
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax

pytest.importorskip("flax")

MODEL = """
import flax.linen as nn
import jax
import jax.numpy as jnp


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        h = nn.LayerNorm()(x)
        attention = nn.MultiHeadDotProductAttention(2, dropout_rate=0.1, deterministic=not train)
        h = attention(h, h)
        x = x + nn.Dropout(0.1, deterministic=not train)(h)
        return x + nn.Dropout(0.1, deterministic=not train)(nn.Dense(16)(x))


def irprof_model(mode="infer"):
    model = Block()
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 8, 16))
    params = model.init(jax.random.PRNGKey(0), x, False)

    def loss_fn(params, x, key):
        y = model.apply(params, x, True, rngs={"dropout": key})
        return jnp.mean(y * y)

    return loss_fn, (params, x, jax.random.PRNGKey(3))
"""


@pytest.mark.slow
def test_dropout_random_bits_are_attributed(tmp_path: Path) -> None:
    script = tmp_path / "dropout_block.py"
    script.write_text(MODEL)
    bundle = capture_jax(
        script, tmp_path / "run", JaxCaptureOptions(steps=2, warmup=1, mode="train")
    )
    stablehlo = bundle.ir_path("stablehlo").read_text()
    hlo = (bundle.root / "ir" / "hlo.txt").read_text()
    # the shapes this test is about: the unnamed call in the IR, the loop's name in XLA's
    assert 'loc("")' in stablehlo and "jit(_uniform)/while" in hlo
    coverage = annotate_bundle(bundle).coverage
    assert coverage.time_coverage >= 0.99, coverage.unmatched_events[:3]
    assert not any("jit(_uniform)" in event.reason for event in coverage.unmatched_events)
    # the loop's ops hold time: some op named in the random bits' body has a profile
    profile = orjson.loads((bundle.root / "opprofile.stablehlo.json").read_bytes())
    timed_in_loop = [
        entry for entry in profile["entries"]
        if "while" in (entry["key"].get("name") or "") and entry["profile"]["total_ns"] > 0
    ]  # fmt: skip
    assert timed_in_loop

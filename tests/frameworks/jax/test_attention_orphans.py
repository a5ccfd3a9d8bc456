"""A real JAX capture of `jax.nn.dot_product_attention`: on CPU, XLA rebuilds the attention's
two batched dots as YNNPACK fusions whose dots carry no op metadata, while a layout copy of
the second dot's result keeps that dot's name. The copy names the dot without computing it, so
the dot is still one XLA's metadata lost, and the metadata-less kernel goes to it (the only
`dot_general` of its size left): no kernel time stays "XLA-inserted"."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.correlate.hlo import parse_hlo_text
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.opprofile import OpProfile

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, pytest.mark.slow]

SCRIPT = textwrap.dedent(
    """
    import jax
    import jax.numpy as jnp


    def irprof_model(mode="infer"):
        keys = jax.random.split(jax.random.PRNGKey(0), 5)
        tokens = jax.random.normal(keys[0], (2, 64, 4))
        wq, wk, wv = (jax.random.normal(key, (4, 8)) for key in keys[1:4])
        proj = jax.random.normal(keys[4], (8, 8, 3))

        def forward(tokens):
            q, k, v = (tokens @ w for w in (wq, wk, wv))
            out = jax.nn.dot_product_attention(
                q[:, :, None, :], k[:, :, None, :], v[:, :, None, :], is_causal=True
            )
            return jnp.einsum("bsd,def,bse->bf", out[:, :, 0, :], proj, q)

        return forward, (tokens,)
    """
)


def test_attention_dots_without_metadata_go_to_their_einsums(tmp_path: Path) -> None:
    script = tmp_path / "attention.py"
    script.write_text(SCRIPT)
    bundle = capture_jax(script, tmp_path / "run", JaxCaptureOptions(steps=2, warmup=1))
    program = parse_hlo_text((tmp_path / "run" / "ir" / "hlo.txt").read_text())
    # GIVEN the program XLA built: a dot without metadata, and an instruction of another kind
    # carrying the name of the attention's second einsum
    lost_dots = [i for i in program.instructions.values() if i.opcode == "dot" and not i.owner]
    named = [i for i in program.instructions.values() if "BNTS,BSNH->BTNH" in i.op_name]
    assert lost_dots, "XLA kept every dot's metadata: this test no longer tests the case"
    assert named and all(i.opcode != "dot" for i in named)
    # THEN every kernel is attributed, and both einsums' dots have time of their own
    outcome = annotate_bundle(bundle)
    reasons = [event.reason for event in outcome.coverage.unmatched_events]
    assert not [reason for reason in reasons if "XLA-inserted" in reason]
    timed = {
        entry.key.name
        for entry in OpProfile.load(outcome.opprofile_path).entries
        if entry.data.count and entry.key.name and entry.key.name.endswith("/dot_general")
    }
    assert any("BTNH,BSNH->BNTS" in name for name in timed)
    assert any("BNTS,BSNH->BTNH" in name for name in timed)

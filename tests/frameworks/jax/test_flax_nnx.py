"""Flax NNX training steps: state with RNG counters and keys, and Shardy's sharding constraints.

An NNX model's state (`nnx.split(model)`) holds, besides its float parameters, its RNG streams'
uint32 counters and keys. `--mode train` differentiated every leaf of `params`, so JAX refused
(`grad requires real- or complex-valued inputs ... got uint32`). NNX also constrains its RNG
keys' sharding (on an empty mesh), which JAX lowers to Shardy's `sdy` ops; the MLIR bindings
irprof parses with have no such dialect, so the capture failed on its own IR level.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from irprof.frameworks.jax.steps_runner import (
    SHARDY_FLAG,
    SHARDY_OP,
    StepSpec,
    sgd_step,
    stablehlo_text,
)
from irprof.mlir.context import make_context
from irprof.mlir.load import parse_module

RATE = 0.1


@pytest.fixture
def shardy_restored() -> Iterator[None]:
    """`stablehlo_text` may switch the process to GSPMD (a capture's own child): switch back."""
    before = getattr(jax.config, SHARDY_FLAG)
    yield
    set_shardy(before)


def set_shardy(enabled: bool) -> None:
    jax.config.update(SHARDY_FLAG, enabled)  # type: ignore[no-untyped-call]


def loss(params: dict[str, Any], x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.tanh(x @ params["w"]) * params["s"])


def test_only_floating_leaves_are_differentiated_and_updated() -> None:
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    s = np.float32(2.0)
    key = jax.random.key(3)
    params: dict[str, Any] = {"w": w, "s": s, "count": np.uint32(7), "flag": np.bool_(True)}
    params["key"] = key

    new, value = jax.jit(sgd_step(loss, RATE))(params, x)

    # The oracle, by hand: d/dw sum(s tanh(xw)) = x^T (s (1 - tanh(xw)^2)); d/ds = sum(tanh(xw)).
    hidden = np.tanh(x.astype(np.float64) @ w)
    np.testing.assert_allclose(float(value), float(np.sum(hidden * s)), rtol=1e-5)
    np.testing.assert_allclose(new["w"], w - RATE * (x.T @ (s * (1 - hidden**2))), rtol=1e-5)
    np.testing.assert_allclose(new["s"], s - RATE * hidden.sum(), rtol=1e-5)
    assert int(new["count"]) == 7 and new["count"].dtype == np.uint32
    assert bool(new["flag"]) is True
    np.testing.assert_array_equal(jax.random.key_data(new["key"]), jax.random.key_data(key))


class Net(nnx.Module):
    def __init__(self, rngs: Any) -> None:
        self.conv = nnx.Conv(3, 8, kernel_size=(3, 3), rngs=rngs)
        self.norm = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.25, rngs=rngs)
        self.head = nnx.Linear(8, 4, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        hidden = nnx.relu(self.norm(self.conv(x)))
        return self.head(self.drop(hidden.mean(axis=(1, 2))))


def nnx_training_spec() -> StepSpec:
    graphdef, state = nnx.split(Net(nnx.Rngs(0)))

    def nnx_loss(state: Any, x: jax.Array, labels: jax.Array) -> jax.Array:
        logits = nnx.merge(graphdef, state)(x)
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))

    x = jax.random.normal(jax.random.PRNGKey(1), (2, 8, 8, 3))
    labels = jnp.array([1, 3])
    return StepSpec(sgd_step(nnx_loss, RATE), (state, x, labels), "train")


def integer_leaves(tree: Any) -> list[tuple[str, np.ndarray]]:
    return [
        (jax.tree_util.keystr(path), np.asarray(leaf))
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
        if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.integer)
    ]


@pytest.mark.usefixtures("shardy_restored")
def test_an_nnx_training_step_lowers_to_parseable_stablehlo_and_runs() -> None:
    spec = nnx_training_spec()
    set_shardy(True)
    # The case this covers: under Shardy, NNX's step holds `sdy` ops.
    shardy = jax.jit(spec.function).lower(*spec.args).as_text(debug_info=True)
    assert SHARDY_OP.search(shardy)

    text, lowered = stablehlo_text(spec)

    assert not SHARDY_OP.search(text)
    assert "@Sharding" in text  # the same constraints, as GSPMD writes them
    module = parse_module(text, make_context())
    assert module.operation.verify()
    new_state, value = lowered.compile()(*spec.args)
    assert np.isfinite(float(value))
    counters = integer_leaves(spec.args[0])
    assert counters  # the RNG streams' counters: the leaves that made grad fail
    for (path, before), (new_path, after) in zip(counters, integer_leaves(new_state), strict=True):
        assert path == new_path
        np.testing.assert_array_equal(after, before)


@pytest.mark.usefixtures("shardy_restored")
def test_a_function_without_sharding_keeps_shardy_on() -> None:
    set_shardy(True)
    spec = StepSpec(
        sgd_step(loss, RATE), ({"w": jnp.ones((3, 2)), "s": 1.0}, jnp.ones((4, 3))), "train"
    )
    text, _ = stablehlo_text(spec)
    assert "@Sharding" not in text and not SHARDY_OP.search(text)
    assert getattr(jax.config, SHARDY_FLAG)

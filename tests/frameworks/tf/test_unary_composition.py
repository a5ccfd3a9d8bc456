"""Grappler's `_UnaryOpsComposition` (a Keras GELU's gradient: `Neg` then `Exp`) gets its time
on the ops it composes, though grappler reassociated the products around it.

The executed `Gelu/mul` reads the composition; the IR's `Gelu/mul` reads another product and a
constant, so the op is not found through the readers of its name: it is the one absent op
computing from the composition's input. The expected ops are read here from the executed
graph (`op_names`, the composition's input node) and the level's IR, not from irprof's join.
The capture gives kernels the reference steps' time (`reference_time`): TensorFlow's timed
level often does not record a kernel this cheap (seen with two intra-op threads).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from iree.compiler import ir

pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.tf, pytest.mark.slow]

from irprof.annotation import AnnotateOutcome  # noqa: E402
from irprof.api import Run  # noqa: E402
from irprof.frameworks.tf.capture import TfCaptureOptions, capture_tf  # noqa: E402

LEVELS = ("tf", "tf-standard")
COMPOSITION = "_UnaryOpsComposition"

MODEL = '''"""A GELU MLP trained under fit."""
import tensorflow as tf


def irprof_model(mode="fit"):
    tf.keras.utils.set_random_seed(2)
    inputs = tf.keras.Input((8,))
    hidden = tf.keras.layers.Dense(16, activation="gelu", name="up")(inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(3, name="head")(hidden))
    model.compile(optimizer="sgd", loss="mse")
    x = tf.random.stateless_uniform((4, 8), seed=(1, 2))
    y = tf.random.stateless_uniform((4, 3), seed=(3, 4))
    return model, (tf.data.Dataset.from_tensors((x, y)),)
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, AnnotateOutcome]]:
    folder = tmp_path_factory.mktemp("gelu_fit")
    script = folder / "gelu_fit.py"
    script.write_text(MODEL)
    captured = Run.of(
        capture_tf(script, folder / "run", TfCaptureOptions(mode="fit", reference_time=True))
    )
    return captured, {level: captured.annotate(level) for level in LEVELS}


def compositions(path: Path) -> dict[str, dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = json.loads(path.read_text())["nodes"]
    return {name: spec for name, spec in nodes.items() if spec["op"] == COMPOSITION}


def node_names(op: ir.Operation) -> set[str]:
    """The graph nodes an op's location names (`<node>@<function>`; TensorFlow fuses them with
    a `Type:` marker, which names no node)."""

    def names(location: ir.Location) -> set[str]:
        if isinstance(location, ir.NameLoc):
            own = location.name_str.split("@")[0]
            return {own} | names(location.child_loc) if not own.endswith(":") else set()
        if isinstance(location, ir.CallSiteLoc):
            return names(location.callee)
        if isinstance(location, ir.FusedLoc):
            return set().union(*map(names, location.locations))
        return set()

    return names(op.location)


def chain_reading(module: ir.Module, input_node: str, length: int) -> list[ir.Operation]:
    """The one-input chain of `length` ops starting at the op that reads the op named
    `input_node`, innermost first (what the composition replaced)."""
    ops: list[ir.Operation] = []

    def collect(op: ir.OpView) -> ir.WalkResult:
        ops.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    named = [op for op in ops if op.name.startswith("tf.") and input_node in node_names(op)]
    assert len(named) == 1, input_node
    chain: list[ir.Operation] = []
    value_of = named[0]
    for _ in range(length):
        readers = {use.owner for result in value_of.results for use in result.uses}
        unary = [r for r in readers if len(r.operands) == 1]
        assert len(unary) == 1, [r.name for r in readers]
        chain.append(unary[0])
        value_of = unary[0]
    return chain


@pytest.mark.timeout(300)
@pytest.mark.parametrize("level", LEVELS)
def test_the_composition_time_goes_to_the_ops_it_composes(
    run: tuple[Run, dict[str, AnnotateOutcome]], level: str
) -> None:
    bundle, outcomes = run
    graph = bundle.root / str(bundle.manifest().options["runtime_graph"])
    found = compositions(graph)
    assert found, "the premise: grappler composed the GELU gradient's unary ops"
    (name, spec), *_ = found.items()
    assert spec["fused_ops"] == ["Neg", "Exp"]  # the node's `op_names`, recorded by the capture
    input_node = spec["inputs"][0].split("/", 1)[1]  # under the function call's scope
    expected = chain_reading(bundle.ir(level), input_node, len(spec["fused_ops"]))
    assert [op.name.removeprefix("tf.") for op in expected] == spec["fused_ops"]
    kernel = f"{name}:{COMPOSITION}"
    holders = [
        ((entry.key.name or "").split("@")[0], entry.op_name)
        for entry in bundle.profile(level).entries
        if kernel in entry.data.kernels
    ]
    assert len(holders) == len(expected)
    for op in expected:
        assert sum(n in node_names(op) and kind == op.name for n, kind in holders) == 1
    coverage = outcomes[level].coverage
    assert all(not event.name.startswith(name) for event in coverage.unmatched_events)

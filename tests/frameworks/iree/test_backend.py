"""`--backend iree|both` on `irprof capture jax` / `capture torch`: the framework's own IR
compiled and profiled by IREE, as a bundle of its own; and the refusals (exit 2, no bundle)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from irprof.bundle import RunBundle
from irprof.cli.main import main

pytestmark = [pytest.mark.iree, pytest.mark.slow]

EXAMPLES = Path(__file__).parents[3] / "examples"
# XLA:CPU runs eigh through a LAPACK custom call; IREE has no lowering for it.
EIGH = """import jax.numpy as jnp


def model(x):
    values, vectors = jnp.linalg.eigh(x @ x.T)
    return values.sum() * vectors


def irprof_model():
    return model, (jnp.ones((4, 4), jnp.float32) + jnp.eye(4),)
"""

# A sharding constraint: GSPMD lowers it to `stablehlo.custom_call @Sharding`, which IREE refuses.
SHARDED = """import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec


def irprof_model():
    mesh = jax.make_mesh((1,), ("x",))

    def forward(w, x):
        h = jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh, PartitionSpec()))
        return jnp.tanh(h) * 2.0

    return forward, (jnp.ones((8, 8)), jnp.ones((4, 8)))
"""


def _coverage(run: Path, level: str) -> dict[str, object]:
    record: dict[str, object] = orjson.loads((run / "coverage.json").read_bytes())["levels"][level]
    return record


def test_jax_backend_iree_attributes_99_percent_of_dispatch_time(tmp_path: Path) -> None:
    # GIVEN the JAX MLP captured with --backend iree
    run = tmp_path / "run"
    script = EXAMPLES / "jax_mlp.py"
    assert main(["capture", "jax", str(script), "-o", str(run), "--backend", "iree"]) == 0
    manifest = RunBundle(run).manifest()
    assert manifest.framework == "iree" and manifest.ir_levels == ("stablehlo", "flow")
    assert manifest.options["compiled_from"]["framework"] == "jax"
    assert not (run / "trace" / "vm.xplane.pb").exists()  # XLA's lowering run is not kept
    # WHEN its StableHLO level is annotated
    assert main(["annotate", str(run), "--level", "stablehlo"]) == 0
    # THEN at least 99% of the dispatch time reaches source ops, and nothing is left unlisted
    record = _coverage(run, "stablehlo")
    profiled, attributed = record["profiled_ns"], record["attributed_ns"]
    assert isinstance(profiled, int) and isinstance(attributed, int)
    assert attributed >= 0.99 * profiled > 0
    listed = sum(event["total_ns"] for event in record["unmatched_events"])  # type: ignore[attr-defined]
    assert abs(profiled - attributed - listed) <= 1


def test_jax_backend_both_keeps_xla_and_iree_runs_of_one_stablehlo(tmp_path: Path) -> None:
    run = tmp_path / "run"
    script = EXAMPLES / "jax_transformer.py"
    args = ["capture", "jax", str(script), "-o", str(run), "--backend", "both", "--steps", "3"]
    assert main(args) == 0
    xla, iree = RunBundle(run), RunBundle(run / "iree")
    assert xla.manifest().framework == "jax" and iree.manifest().framework == "iree"
    assert xla.manifest().options["iree_bundle"] == "iree"
    # The same ops with the same locations on both sides: what lets a diff match them.
    assert xla.ir_path("stablehlo").read_bytes() == iree.ir_path("stablehlo").read_bytes()
    assert main(["annotate", str(run / "iree"), "--level", "stablehlo"]) == 0
    record = _coverage(run / "iree", "stablehlo")
    assert record["attributed_ns"] >= 0.99 * record["profiled_ns"]  # type: ignore[operator]
    # The layer norm is one private function called twice: each call gets its own dispatches.
    calls = [
        entry
        for entry in orjson.loads((run / "iree" / "opprofile.stablehlo.json").read_bytes())[
            "entries"
        ]
        if entry["op"] == "func.call" and "layer_norm" in (entry["key"]["name"] or "")
    ]
    assert len(calls) == 2 and all(call["profile"]["total_ns"] > 0 for call in calls)


def test_a_sharding_constraint_runs_under_iree(tmp_path: Path) -> None:
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED, encoding="utf-8")
    run = tmp_path / "run"
    assert main(["capture", "jax", str(script), "-o", str(run), "--backend", "iree"]) == 0
    # The IR level keeps the annotation as JAX wrote it; IREE ran the program without it.
    assert "@Sharding" in (run / "ir" / "stablehlo.mlir").read_text(encoding="utf-8")
    assert main(["annotate", str(run), "--level", "stablehlo"]) == 0
    record = _coverage(run, "stablehlo")
    assert record["attributed_ns"] == record["profiled_ns"]
    assert isinstance(record["profiled_ns"], int) and record["profiled_ns"] > 0


def test_torch_backend_iree_annotates_the_torch_level(tmp_path: Path) -> None:
    run = tmp_path / "run"
    script = EXAMPLES / "torch_cnn.py"
    assert main(["capture", "torch", str(script), "-o", str(run), "--backend", "iree"]) == 0
    manifest = RunBundle(run).manifest()
    assert manifest.ir_levels == ("torch", "flow")
    assert manifest.options["signature"] == ["4x3x16x16xf32"]  # read from !torch.vtensor
    assert main(["annotate", str(run), "--level", "torch"]) == 0
    record = _coverage(run, "torch")
    assert record["attributed_ns"] >= 0.99 * record["profiled_ns"]  # type: ignore[operator]
    assert record["ops_nontrivial_annotated"] == record["ops_nontrivial"]


def test_an_unknown_backend_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    script = EXAMPLES / "jax_mlp.py"
    assert main(["capture", "jax", str(script), "-o", str(run), "--backend", "tpu"]) == 2
    assert "xla, iree, both" in capsys.readouterr().err
    assert not run.exists()


@pytest.mark.parametrize("backend", ["iree", "both"])
def test_a_model_iree_cannot_compile_leaves_no_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    script = tmp_path / "jax_eigh.py"
    script.write_text(EIGH)
    run = tmp_path / "run"
    assert main(["capture", "jax", str(script), "-o", str(run), "--backend", backend]) == 2
    err = capsys.readouterr().err
    # IREE's own diagnostic, located in the user's script, and the script named first.
    assert str(script) in err and "iree-compile" in err
    assert "lapack" in err and "jax_eigh.py:5" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["jax_eigh.py"]

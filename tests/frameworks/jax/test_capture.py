"""End to end with the real JAX: `irprof capture jax` then `irprof annotate` on both examples.

One session-scoped capture per example (about 5 s each on 2 cores); everything else reads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.annotation import AnnotateOutcome, annotate_bundle
from irprof.bundle import RunBundle
from irprof.errors import CaptureError, UsageError
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.frameworks.jax.hlo import decode_hlo_proto, parse_hlo_text
from irprof.readers import read_trace

pytest.importorskip("jax")
pytestmark = [pytest.mark.jax, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = {
    "mlp": REPO / "examples" / "jax_mlp.py",
    "transformer": REPO / "examples" / "jax_transformer.py",
}


@pytest.fixture(scope="session")
def captured(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[RunBundle, AnnotateOutcome]]:
    """Both examples captured (3 steps) and annotated once for the session."""
    root = tmp_path_factory.mktemp("jax_runs")
    out: dict[str, tuple[RunBundle, AnnotateOutcome]] = {}
    for name, script in EXAMPLES.items():
        bundle = capture_jax(script, root / name, JaxCaptureOptions(steps=3, warmup=1))
        out[name] = (bundle, annotate_bundle(bundle))
    return out


def test_bundle_has_ir_hlo_trace_and_manifest(
    captured: dict[str, tuple[RunBundle, AnnotateOutcome]],
) -> None:
    """GIVEN a capture THEN the manifest lists stablehlo, the XPlane first, the HLO module."""
    bundle, _ = captured["mlp"]
    manifest = bundle.manifest()
    assert manifest.framework == "jax" and manifest.steps == 3
    assert manifest.ir_levels == ("stablehlo",)
    assert manifest.trace_files[0].endswith(".xplane.pb")
    assert all((bundle.root / name).is_file() for name in manifest.trace_files)
    assert manifest.options["hlo_module"] == "jit_mlp"
    assert (bundle.root / "ir" / "hlo.txt").read_text().startswith("HloModule jit_mlp")


def test_source_paths_are_relative_to_the_script_folder(
    captured: dict[str, tuple[RunBundle, AnnotateOutcome]],
) -> None:
    """GIVEN the captured IR, HLO and trace THEN files are named `jax_mlp.py`, never by an
    absolute path, and irprof's own frames do not appear as callers."""
    bundle, _ = captured["mlp"]
    stablehlo = bundle.ir_path("stablehlo").read_text()
    assert '"jax_mlp.py":' in stablehlo
    assert str(REPO) not in stablehlo and "jax_runner" not in stablehlo
    trace = read_trace(bundle.trace_paths()[0])
    (program,) = [p for p in trace.hlo_programs if p.name == "jit_mlp"]
    chains = [i.chain for i in decode_hlo_proto(program.proto).instructions.values() if i.chain]
    assert chains and all(frame.startswith("jax_mlp.py:") for chain in chains for frame in chain)


def test_hlo_text_parser_matches_the_proto_of_a_fresh_run(
    captured: dict[str, tuple[RunBundle, AnnotateOutcome]],
) -> None:
    """GIVEN this jaxlib's printer and protos THEN the text fallback reads the same chains."""
    bundle, _ = captured["transformer"]
    trace = read_trace(bundle.trace_paths()[0])
    (program,) = [p for p in trace.hlo_programs if p.name == "jit_block"]
    from_proto = decode_hlo_proto(program.proto).instructions
    from_text = parse_hlo_text((bundle.root / "ir" / "hlo.txt").read_text()).instructions
    assert {n: i.chain for n, i in from_proto.items()} == {n: i.chain for n, i in from_text.items()}


def test_mlp_coverage_targets(captured: dict[str, tuple[RunBundle, AnnotateOutcome]]) -> None:
    """GIVEN a fresh jax_mlp run THEN >= 95% of thunk time and >= 90% of non-trivial ops."""
    coverage = captured["mlp"][1].coverage
    assert coverage.time_coverage >= 0.95
    assert coverage.nontrivial_coverage >= 0.90


def test_transformer_coverage_target(
    captured: dict[str, tuple[RunBundle, AnnotateOutcome]],
) -> None:
    """GIVEN a fresh jax_transformer run THEN >= 95% of thunk time is attributed."""
    outcome = captured["transformer"][1]
    assert outcome.coverage.time_coverage >= 0.95
    assert outcome.entries_unmatched == 0


def test_capture_cli_writes_a_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GIVEN `irprof capture jax SCRIPT -o RUN` THEN exit 0 and a bundle with a manifest."""
    from irprof.cli.main import main

    script = tmp_path / "tiny.py"
    script.write_text(
        "import jax.numpy as jnp\n\n"
        "def f(x):\n    return jnp.tanh(x @ x)\n\n"
        "def irprof_model():\n    return f, (jnp.ones((8, 8)),)\n"
    )
    code = main(["capture", "jax", str(script), "-o", str(tmp_path / "run"), "--steps", "1"])
    assert code == 0, capsys.readouterr().err
    assert RunBundle(tmp_path / "run").manifest().model.endswith("tiny.py")


def test_script_without_entry_fails_cleanly_without_output(tmp_path: Path) -> None:
    """GIVEN a script with no irprof_model THEN CaptureError naming it, and no bundle left."""
    script = tmp_path / "no_entry.py"
    script.write_text("X = 1\n")
    with pytest.raises(CaptureError, match="irprof_model"):
        capture_jax(script, tmp_path / "run", JaxCaptureOptions(steps=1, warmup=0))
    assert not (tmp_path / "run").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["no_entry.py"]


def test_bad_arguments_are_refused_before_running(tmp_path: Path) -> None:
    """GIVEN a missing script, zero steps, or a non-bundle output folder THEN UsageError."""
    with pytest.raises(UsageError, match="no such script"):
        capture_jax(tmp_path / "missing.py", tmp_path / "run")
    script = tmp_path / "s.py"
    script.write_text("")
    with pytest.raises(UsageError, match="--steps"):
        capture_jax(script, tmp_path / "run", JaxCaptureOptions(steps=0))
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a run bundle"):
        capture_jax(script, tmp_path / "precious")
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"


def test_capture_records_its_overhead(
    captured: dict[str, tuple[RunBundle, AnnotateOutcome]],
) -> None:
    """GIVEN a capture THEN the manifest holds the median step times without profiler, under
    `jax.profiler.trace` at its defaults and in irprof's session, over the profiled steps."""
    overhead = captured["mlp"][0].manifest().options["overhead"]
    assert overhead["steps"] == 3
    assert all(overhead[f] > 0 for f in ("no_profiler_ns", "profiler_ns", "irprof_ns"))


def test_training_needs_an_entry_that_takes_the_mode(tmp_path: Path) -> None:
    """GIVEN --mode train and an entry without a `mode` argument THEN a CaptureError that says
    so, and no bundle; GIVEN a loss and its parameters THEN a training step is profiled."""
    script = tmp_path / "loss.py"
    script.write_text(
        "import jax.numpy as jnp\n\n"
        "def loss(w, x):\n    return jnp.mean(jnp.tanh(x @ w) ** 2)\n\n"
        "def irprof_model():\n    return loss, ({'w': jnp.ones((8, 8))}['w'], jnp.ones((4, 8)))\n"
    )
    options = JaxCaptureOptions(steps=1, warmup=0, mode="train")
    with pytest.raises(CaptureError, match="mode"):
        capture_jax(script, tmp_path / "run", options)
    assert not (tmp_path / "run").exists()
    script.write_text(
        script.read_text().replace("def irprof_model():", "def irprof_model(mode='infer'):")
    )
    bundle = capture_jax(script, tmp_path / "run", options)
    assert bundle.manifest().options["mode"] == "train"
    assert bundle.manifest().options["hlo_module"] == "jit_train_step"

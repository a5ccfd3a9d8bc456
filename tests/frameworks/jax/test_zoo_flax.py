"""The Flax encoder of the zoo (`examples/zoo/jax_flax_encoder.py`, public `flax.linen` code) on
XLA:CPU: a movable bundle (library files as `<sys.path>/...`, never an absolute path), every
thunk attributed, and its training step's parameter layout copies given to their consumers."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from irprof.annotation import AnnotateOutcome, annotate_bundle
from irprof.api import open_run
from irprof.bundle import RunBundle
from irprof.capture.paths import portable_path_mapper
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.frameworks.jax.paths import portable_hlo_text
from tests.zoo_captures import ZooCaptures

pytest.importorskip("flax")

SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "zoo" / "jax_flax_encoder.py"
ABSOLUTE_SOURCE = re.compile(r'"/[^"\s]*\.py')  # a file named by its absolute path
HLO = """HloModule jit_f, is_scheduled=true

FileNames
1 "model.py"
2 "{site}/flax/linen/linear.py"
3 "{elsewhere}/helpers.py"

FunctionNames
1 "f"
"""


def test_hlo_file_table_is_made_portable(tmp_path: Path) -> None:
    # A library under an import root, a file beside the script's folder, a relative name.
    site = tmp_path / "py" / "lib" / "site-packages"
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    mapped = portable_path_mapper(str(project), [str(site)])
    text = portable_hlo_text(HLO.format(site=site, elsewhere=elsewhere), mapped)
    assert '2 "<sys.path>/flax/linen/linear.py"' in text
    assert '3 "../elsewhere/helpers.py"' in text
    assert '1 "model.py"' in text and '1 "f"' in text  # other tables untouched


@pytest.fixture(scope="module")
def inference(zoo_captures: ZooCaptures) -> tuple[RunBundle, AnnotateOutcome]:
    """The encoder captured (2 steps: the e2e zoo test's capture) and annotated once."""
    bundle = zoo_captures(SCRIPT.stem, JaxCaptureOptions(steps=2))
    return bundle, annotate_bundle(bundle)


@pytest.mark.slow
def test_flax_bundle_names_library_files_portably(
    inference: tuple[RunBundle, AnnotateOutcome],
) -> None:
    bundle, _ = inference
    for name in ("ir/stablehlo.mlir", "ir/hlo.txt", "opprofile.stablehlo.json"):
        text = (bundle.root / name).read_text()
        assert "site-packages" not in text and not ABSOLUTE_SOURCE.search(text), name
    stablehlo = bundle.ir_path("stablehlo").read_text()
    assert '"<sys.path>/flax/linen/' in stablehlo and '"jax_flax_encoder.py":' in stablehlo
    manifest = orjson.loads(bundle.manifest_path.read_bytes())
    assert "<sys.path>" in manifest["options"]["source_paths"]
    assert not (bundle.root / "sys_path.json").exists()


@pytest.mark.slow
def test_flax_encoder_on_xla_attributes_every_thunk(
    inference: tuple[RunBundle, AnnotateOutcome],
) -> None:
    bundle, outcome = inference
    coverage = outcome.coverage
    assert coverage.time_coverage >= 0.99
    assert coverage.nontrivial_coverage >= 0.99
    table = open_run(bundle.root).top("stablehlo", limit=None)
    assert sum(row.total_ns for row in table.rows) <= table.profiled_ns
    # Both blocks' attention projections are rows of their own, each measured every step.
    for block in ("block0", "block1"):
        assert any(f"/{block}/attention/query/" in row.key for row in table.rows), block


@pytest.mark.slow
def test_flax_training_step_gives_parameter_copies_to_their_consumers(
    tmp_path: Path,
) -> None:
    # GIVEN the encoder's training step: XLA copies attention kernels to a new layout, and
    # names each copy after the parameter it reads (an entry argument, not an op)
    bundle = capture_jax(
        SCRIPT, tmp_path / "train", JaxCaptureOptions(steps=2, warmup=1, mode="train")
    )
    hlo = (bundle.root / "ir" / "hlo.txt").read_text()
    assert re.search(r"copy\S* = .*metadata=\{op_name=\"params\[", hlo)
    # WHEN it is annotated
    coverage = annotate_bundle(bundle).coverage
    # THEN those copies' time reaches the ops reading them: at least 99% is attributed
    assert coverage.time_coverage >= 0.99, coverage.unmatched_events[:3]
    assert not any("params[" in event.reason for event in coverage.unmatched_events)

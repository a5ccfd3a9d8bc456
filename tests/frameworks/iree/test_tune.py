"""`irprof tune` on a real tiny IREE model: the record, the tuned IR IREE recompiles with the
chosen configuration, equal outputs, a failing candidate listed, and `irprof-apply-tuning` on an
edited copy of the model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from iree.compiler import ir

from irprof.api import annotate, opt, tune
from irprof.frameworks.iree import tune_measure
from irprof.frameworks.iree.capture import IreeCaptureOptions, capture_iree
from irprof.frameworks.iree.tune import TuneOptions, TuneResult, compile_tuned
from irprof.frameworks.iree.tune_measure import compile_variant

pytestmark = [pytest.mark.iree, pytest.mark.slow]

# Two dense layers; NameLocs are what joins the record to an edited copy.
MODEL = """func.func @main(%x: tensor<32x256xf32>, %w1: tensor<256x512xf32>,
                 %w2: tensor<512x256xf32>) -> tensor<32x256xf32> {
  %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0]
       : (tensor<32x256xf32>, tensor<256x512xf32>) -> tensor<32x512xf32> loc("dense1")
  %1 = stablehlo.tanh %0 : tensor<32x512xf32> loc("act1")
  %2 = stablehlo.dot_general %1, %w2, contracting_dims = [1] x [0]
       : (tensor<32x512xf32>, tensor<512x256xf32>) -> tensor<32x256xf32> loc("dense2")
  return %2 : tensor<32x256xf32>
}
"""
# Not a valid configuration for a 3-loop matmul: IREE must refuse to compile it.
BROKEN = "#iree_cpu.lowering_config<distribution = [7, 0, 0, 0, 5], vector_reduction = [3]>"
ROOT_LINE = re.compile(
    r"linalg\.matmul \{lowering_config = (#iree_cpu\.lowering_config<[^>]*>)\} "
    r"ins\([^:]*: ([^)]*)\) outs\([^:]*: ([^)]*)\)"
)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TuneResult]:
    """The model captured, annotated and tuned once (hottest dispatch, no global flags; a
    negative margin keeps the fastest measured candidate so a choice is always made)."""
    with pytest.MonkeyPatch.context() as patch:
        # This model's candidates compile in seconds; a compiler hang is cut at 3 minutes.
        patch.setattr(tune_measure, "COMPILE_TIMEOUT_S", 180.0)
        return tune_once(tmp_path_factory)


def tune_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TuneResult]:
    folder = tmp_path_factory.mktemp("tune")
    model = folder / "model.mlir"
    model.write_text(MODEL)
    run = folder / "run"
    capture_iree(model, run, IreeCaptureOptions(steps=3, warmup=1))
    annotate(run, "stablehlo")
    options = TuneOptions(
        max_dispatches=1,
        rounds=2,
        runs=3,
        margin=-1.0,
        guard=False,
        global_flags=False,
        extra_configs=(BROKEN,),
    )
    return folder, tune(run, folder / "tuned", options=options)


def _hottest_by_trace(run: Path) -> str:
    """The dispatch with most time, summed from IREE's own dispatch events."""
    totals: dict[str, int] = {}
    for line in (run / "trace" / "dispatch.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        if "key" in record and "duration_ns" in record:
            totals[record["key"]] = totals.get(record["key"], 0) + record["duration_ns"]
    return max(totals, key=lambda key: totals[key])


def _root_configs(configs: Path) -> dict[str, tuple[str, str]]:
    """Dispatch symbol -> (operand types, lowering config) of its matmul, read from the text
    IREE dumps; the types identify a matmul across models whose dispatches are renumbered."""
    found: dict[str, tuple[str, str]] = {}
    for path in configs.glob("*.mlir"):
        text = path.read_text()
        symbol = re.search(r"func\.func @(\w+)\(", text)
        match = ROOT_LINE.search(text)
        if symbol and match:
            found[symbol.group(1)] = (f"{match.group(2)} -> {match.group(3)}", match.group(1))
    return found


def _linalg_names(executable: str, names: tuple[str, ...]) -> set[str]:
    """The `names` found in the locations of the executable's linalg ops, parsed by MLIR."""
    found: set[str] = set()
    with ir.Context():
        module = ir.Module.parse(executable)  # owns the ops: keep it alive during the walk
        pending = [module.operation]
        while pending:
            op = pending.pop()
            if op.name.startswith("linalg."):
                found.update(name for name in names if f'"{name}"' in str(op.location))
            for region in op.regions:
                for block in region.blocks:
                    pending.extend(inner.operation for inner in block.operations)
    return found


def _decision(result: TuneResult) -> dict[str, Any]:
    decisions: list[dict[str, Any]] = result.record["dispatches"]
    assert len(decisions) == 1
    return decisions[0]


def test_tune_chooses_a_measured_configuration_for_the_hottest_dispatch(
    tuned: tuple[Path, TuneResult],
) -> None:
    folder, result = tuned
    decision = _decision(result)
    assert decision["dispatch"] == _hottest_by_trace(folder / "run")
    # The ops recorded for it are the source ops whose NameLocs IREE kept on its executable's
    # linalg ops (a binding of an input carries its producer's location: not a member).
    source = next(
        path.read_text()
        for path in (folder / "run" / "executables").glob("*.mlir")
        if f"@{decision['dispatch']} " in path.read_text()
    )
    in_executable = _linalg_names(source, ("dense1", "act1", "dense2"))
    assert {entry["key"] for entry in decision["ops"]} == {f"name:{n}" for n in in_executable}
    chosen = decision["chosen"]
    assert chosen is not None
    assert chosen["lowering_config"] != decision["default"]["lowering_config"]
    measured = [c for c in decision["candidates"] if "speedup" in c]
    assert chosen["speedup"] == max(c["speedup"] for c in measured)
    assert all(set(c) >= {"baseline_ns", "candidate_ns", "interval"} for c in measured)
    saved = orjson.loads(result.files["record"].read_bytes())
    assert saved["dispatches"][0]["chosen"] == chosen


def test_a_candidate_that_fails_to_compile_is_listed_and_not_chosen(
    tuned: tuple[Path, TuneResult],
) -> None:
    _, result = tuned
    decision = _decision(result)
    broken = [c for c in decision["candidates"] if c["lowering_config"] == BROKEN]
    assert len(broken) == 1
    assert broken[0]["status"] == "rejected"
    assert broken[0]["reason"].startswith("compile failed: ") and "error" in broken[0]["reason"]
    assert decision["chosen"]["lowering_config"] != BROKEN


def test_recompiling_the_tuned_ir_uses_the_chosen_configuration(
    tuned: tuple[Path, TuneResult],
) -> None:
    folder, result = tuned
    decision = _decision(result)
    text = result.files["ir"].read_text()
    assert "irprof.tuned" in text and "irprof.tuning" in text
    build = compile_tuned(result.files["ir"], folder / "recompiled")
    assert build.vmfb is not None and build.configs is not None
    used = _root_configs(build.configs)
    assert used[decision["dispatch"]][1] == decision["chosen"]["lowering_config"]
    assert (
        _root_configs(_default_configs(folder))[decision["dispatch"]][1]
        == decision["default"]["lowering_config"]
    )


def _default_configs(folder: Path) -> Path:
    build = compile_variant(folder / "model.mlir", folder / "recompiled", "default")
    assert build.configs is not None
    return build.configs


def _call(vmfb: Path, inputs: list[np.ndarray]) -> np.ndarray:
    import iree.runtime as rt

    module = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-task")
    return np.asarray(module.main(*inputs))


def test_tuned_outputs_equal_the_default_and_numpy(tuned: tuple[Path, TuneResult]) -> None:
    folder, result = tuned
    rng = np.random.default_rng(7)
    x, w1, w2 = (
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((32, 256), (256, 512), (512, 256))
    )
    tuned_build = compile_tuned(result.files["ir"], folder / "outputs")
    default = compile_variant(folder / "model.mlir", folder / "outputs", "default")
    assert tuned_build.vmfb is not None and default.vmfb is not None
    got = _call(tuned_build.vmfb, [x, w1, w2])
    want = _call(default.vmfb, [x, w1, w2])
    reference = np.tanh(x.astype(np.float64) @ w1) @ w2
    scale = float(np.max(np.abs(want)))
    tolerance = result.record["tolerance"]
    assert np.allclose(got, want, rtol=tolerance["rtol"], atol=tolerance["atol"] * scale)
    assert np.allclose(got, reference, rtol=1e-4, atol=1e-4 * scale)


def test_mlgo_log_holds_every_measured_triple(tuned: tuple[Path, TuneResult]) -> None:
    _, result = tuned
    lines = result.files["log"].read_bytes().split(b"\n")
    header = orjson.loads(lines[0])
    names = [spec["name"] for spec in header["features"]]
    assert {"loop_ranges", "distribution", "vector_reduction"} <= set(names)
    observations = [line for line in lines if line.startswith(b'{"observation"')]
    measured = [c for c in _decision(result)["candidates"] if "speedup" in c]
    assert len(observations) == len(measured) + 1  # + the default's own time


def test_apply_tuning_reapplies_the_record_to_an_edited_model(
    tuned: tuple[Path, TuneResult],
) -> None:
    folder, result = tuned
    decision = _decision(result)
    # An extra op before the layers moves every line; the NameLocs stay.
    edited_text = MODEL.replace(
        "  %0 = stablehlo.dot_general %x, %w1",
        '  %e = stablehlo.negate %x : tensor<32x256xf32> loc("extra")\n'
        "  %0 = stablehlo.dot_general %e, %w1",
    )
    edited = folder / "edited.mlir"
    edited.write_text(edited_text)
    record = result.files["record"]
    module = opt(edited, f"builtin.module(irprof-apply-tuning{{record={record}}})")
    tuned_ops = {}
    for op in module.body.operations[0].regions[0].blocks[0].operations:
        if "irprof.tuned" in op.attributes:
            tuned_ops[str(op.location)] = str(op.attributes["irprof.tuned"])
    names = {entry["key"].removeprefix("name:") for entry in decision["ops"]}
    assert {re.sub(r'loc\("(\w+)"\)', r"\1", loc) for loc in tuned_ops} == names
    assert all(decision["chosen"]["lowering_config"] in attr for attr in tuned_ops.values())
    out = folder / "edited.tuned.mlir"
    out.write_text(str(module))
    build = compile_tuned(out, folder / "edited")
    assert build.configs is not None
    types = _root_configs(_default_configs(folder))[decision["dispatch"]][0]
    used = {config for kind, config in _root_configs(build.configs).values() if kind == types}
    assert used == {decision["chosen"]["lowering_config"]}

"""`irprof diff` on real captures: TF with oneDNN on vs off, torch with and without the
decomposition of `linear`, and a JAX run against itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from irprof.analyses.run_diff import DiffRow, RunDiff, diff_runs, load_diff_side
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import derive_op_infos, root_operation
from irprof.renderers.diff_mlir import DIFF_ATTR, DIFF_SUMMARY_ATTR
from irprof.renderers.diff_table import RENDERER as TABLE

FIXTURES = Path(__file__).parents[1] / "fixtures"


def annotated(source: Path, target: Path) -> RunBundle:
    shutil.copytree(source, target)
    bundle = RunBundle(target)
    annotate_bundle(bundle)
    return bundle


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunBundle]:
    """Annotated copies of the shipped captures, once for the module."""
    root = tmp_path_factory.mktemp("diff")
    sources = {
        "onednn": FIXTURES / "tf" / "cnn-infer",
        "eigen": FIXTURES / "tf" / "cnn-infer-eigen",
        "torch": FIXTURES / "torch" / "cnn",
        "torch-whole": FIXTURES / "torch" / "cnn_nodecomp",
        "jax": FIXTURES / "jax" / "mlp_run",
    }
    return {name: annotated(path, root / name) for name, path in sources.items()}


def diff_of(runs: dict[str, RunBundle], a: str, b: str, level: str) -> RunDiff:
    return diff_runs(load_diff_side(runs[a], level, a), load_diff_side(runs[b], level, b))


def test_onednn_against_eigen_matches_every_op_and_names_the_kernel_change(
    runs: dict[str, RunBundle],
) -> None:
    diff = diff_of(runs, "onednn", "eigen", "tf")
    assert diff.match_counts == {"name+source": len(diff.ops)}
    assert diff.method_a == diff.method_b == "step-markers"
    assert (diff.steps_a, diff.steps_b) == (3, 2)  # the trace's markers, as the manifests say
    conv = next(row for row in diff.ops if row.key == "tf_cnn_1/conv_1/convolution")
    profile_a = load_diff_side(runs["onednn"], "tf").profiled.ops[conv.a_index].profile
    assert profile_a is not None
    # Per step, from the trace: A's three steps hold all of the op's time.
    assert conv.a_ns == pytest.approx(profile_a.total_ns / 3, abs=1)
    assert conv.interval is not None
    assert conv.interval[0] <= conv.delta_ns <= conv.interval[1]
    changes = {change.members: change for change in diff.fusion}
    chain = ("tf_cnn_1/conv_1/convolution", "tf_cnn_1/conv_1/BiasAdd", "tf_cnn_1/conv_1/Relu")
    assert changes[chain].change == "kernel changed"
    assert changes[chain].kernels_a == ("tf_cnn_1/conv_1/Relu:_MklNativeFusedConv2D",)
    assert changes[chain].kernels_b == ("tf_cnn_1/conv_1/Relu:_FusedConv2D",)
    # Rollups add their ops on each side.
    scope = next(row for row in diff.scopes if row.key == "tf_cnn_1/conv_1")
    # (its ops and the variable reads named under them: `conv_1/convolution/ReadVariableOp`)
    members = [row for row in diff.ops if row.key.startswith("tf_cnn_1/conv_1/")]
    assert scope.a_ns == pytest.approx(sum(row.a_ns for row in members), abs=2)
    assert scope.b_ns == pytest.approx(sum(row.b_ns for row in members), abs=2)
    assert diff.total.a_ns == pytest.approx(sum(row.a_ns for row in diff.kinds), abs=2)


def test_decomposition_change_matches_nodes_and_reports_the_new_group(
    runs: dict[str, RunBundle],
) -> None:
    diff = diff_of(runs, "torch-whole", "torch", "torch")
    by_key = {row.key: row for row in diff.ops}
    # aten.conv2d became aten.convolution: the same FX node, matched on it.
    conv = by_key["conv|conv2d|aten.convolution.default"]
    assert conv.match == "node" and conv.a_ns > 0 and conv.b_ns > 0
    # linear became permute + addmm: no op to pair with, so each side stands alone ...
    assert by_key["fc1|linear|aten.linear.default"].match == "only in A"
    assert by_key["fc1|linear|aten.addmm.default"].match == "only in B"
    # ... while the layer compares whole, and the new pair shows as a fusion change.
    fc1 = next(row for row in diff.scopes if row.key == "fc1")
    assert fc1.a_ns > 0 and fc1.b_ns > 0
    fused = {change.members: change.change for change in diff.fusion}
    assert fused[("fc1|linear|aten.permute.default", "fc1|linear|aten.addmm.default")] == (
        "fused in B"
    )


def test_a_run_against_itself_changes_nothing(runs: dict[str, RunBundle]) -> None:
    diff = diff_of(runs, "jax", "jax", "stablehlo")
    assert diff.method_a == "occurrence"  # no step markers; each thunk runs once per step
    assert not diff.fusion
    for row in (diff.total, *diff.ops, *diff.scopes, *diff.kinds):
        assert row.delta_ns == 0
        assert not row.significant, row
    assert not diff.slower_by_more_than(0.0)
    text = TABLE.render(diff).decode()
    assert "jit(mlp)/conv_general_dilated" in text and "jax_mlp.py:38:8" in text
    assert "fusion changes: none" in text


def test_cli_writes_json_and_b_ir_with_diff_attributes(
    runs: dict[str, RunBundle], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, out_mlir = tmp_path / "diff.json", tmp_path / "b.mlir"
    args = ["diff", str(runs["onednn"].root), str(runs["eigen"].root), "--json", str(out_json)]
    assert main([*args, "-o", str(out_mlir), "--fail-if-slower", "1e9"]) == 0
    assert "kernel changed" in capsys.readouterr().out
    document = json.loads(out_json.read_text())
    assert document["version"] == 1 and document["samples"] == {
        "a": "step-markers",
        "b": "step-markers",
    }
    module = load_module(out_mlir, make_context())
    infos = derive_op_infos(module)
    rows = {row["b_index"]: row for row in document["ops"] if row["b_index"] >= 0}
    carrying = {i for i, info in enumerate(infos) if DIFF_ATTR in info.op.attributes}
    assert carrying == set(rows)
    for index in carrying:
        attr = infos[index].op.attributes[DIFF_ATTR]
        row = rows[index]
        assert int(str(attr["b_ns"]).split(":")[0]) == round(row["b_ns"])
        assert str(attr["match"]) == f'"{row["match"]}"'
    assert DIFF_SUMMARY_ATTR in root_operation(module).attributes


def test_fail_if_slower_exits_one_only_past_the_threshold(runs: dict[str, RunBundle]) -> None:
    diff = diff_of(runs, "onednn", "eigen", "tf")
    pct = diff.total.delta_pct
    assert pct is not None
    args = ["diff", str(runs["onednn"].root), str(runs["eigen"].root), "-n", "1"]
    expected = 1 if diff.total.significant and pct > 0 else 0
    assert main([*args, "--fail-if-slower", str(max(pct - 1, 0))]) == expected
    assert main([*args, "--fail-if-slower", str(pct + 1)]) == 0
    # The other way round B is faster: never a failure.
    assert main(["diff", args[2], args[1], "-n", "1", "--fail-if-slower", "0"]) == 0


def test_runs_without_a_common_annotated_level_are_refused(
    runs: dict[str, RunBundle], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "never.json"
    code = main(["diff", str(runs["onednn"].root), str(runs["jax"].root), "--json", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "share no annotated level" in err and "stablehlo" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("a_ns", "b_ns", "expected_pct"),
    [(200.0, 300.0, 50.0), (300.0, 200.0, -100.0 / 3), (100.0, 100.0, 0.0), (0.0, 5.0, None)],
)
def test_delta_percent_is_relative_to_a(
    a_ns: float, b_ns: float, expected_pct: float | None
) -> None:
    """+50% means B took half as long again as A: the delta over A's time, never B's."""
    row = DiffRow("op", "k", "", "", a_ns, b_ns, None, "step-markers")
    assert row.delta_ns == b_ns - a_ns
    if expected_pct is None:
        assert row.delta_pct is None
    else:
        assert row.delta_pct == pytest.approx(expected_pct)

"""`irprof top|graph|report|export` in-process: real annotated captures, outputs, bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.cli.main import main
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    HOSTILE,
    fixture_hostile_bundle,
    fixture_jax_bundle,
    fixture_tf_bundle,
    make_bundle,
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one in-process CLI call."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_top_lists_the_hottest_tf_ops_with_script_locations(
    tf_bundle: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "top", str(tf_bundle.root), "-n", "5")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["1", "2", "3", "4", "5"]
    # ranked hottest first: the same order as the data, which is sorted by time
    table = Run(tf_bundle.root).top(limit=5)
    times = [row.total_ns for row in table.rows]
    assert times == sorted(times, reverse=True) and times[0] > times[-1]
    printed = [row.split("│")[2].strip() for row in rows]
    assert printed == [row.key[: len(name)] for row, name in zip(table.rows, printed, strict=True)]
    # an editor-openable file:line:col: the model call in the script (Keras builds the ops)
    assert all("tf_cnn.py:54:1" in row for row in rows)
    code, out, _ = run(capsys, "top", str(tf_bundle.root), "--by", "scope", "-n", "1")
    assert code == 0
    assert "tf_cnn_1/conv_1" in out  # the fused convolution layer dominates this CNN


def test_top_by_type_and_scope_roll_up(
    jax_bundle: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "top", str(jax_bundle.root), "--by", "type", "-n", "3")
    assert code == 0
    assert "stablehlo.convolution" in out
    code, out, _ = run(capsys, "top", str(jax_bundle.root), "--by", "scope")
    assert code == 0
    assert "jit(mlp)/jit(dense)" in out  # callee ops take the scope of their call


@pytest.mark.parametrize("suffix", [".svg", ".dot", ".graphml", ".html"])
def test_graph_writes_each_format(
    jax_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    output = tmp_path / f"graph{suffix}"
    code, _, err = run(
        capsys, "graph", str(jax_bundle.annotated_path("stablehlo")), "-o", str(output)
    )
    assert code == 0, err
    text = output.read_text()
    assert "convolution" in text
    assert "@main" in err


def test_report_is_one_self_contained_file(
    tf_bundle: RunBundle, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "report", str(tf_bundle.root))
    assert code == 0, err
    html = tf_bundle.report_path.read_text()
    assert "<script src" not in html and "<link" not in html
    assert "http://" not in html.replace("http://www.w3.org", "")
    assert "https://" not in html
    assert "Content-Security-Policy" in html


def test_export_perfetto_adds_ir_ops_and_level_tracks(
    jax_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "trace.json"
    code, _, err = run(capsys, "export", str(jax_bundle.root), "--to", "chrome", "-o", str(output))
    assert code == 0, err
    events = json.loads(output.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "IR level stablehlo" in names
    ir_slices = [e for e in events if e.get("cat") == "irprof.op"]
    kernels = [e for e in events if e.get("args", {}).get("irprof")]
    assert ir_slices and kernels
    conv = next(e for e in ir_slices if e["args"]["op"] == "stablehlo.convolution")
    source = next(e for e in kernels if e["name"] == conv["args"]["kernel"])
    assert (conv["ts"], conv["dur"]) == (source["ts"], source["dur"])
    assert conv["args"]["location"].startswith("jax_mlp.py:38:")  # the user's conv line
    assert all(abs(e.get("tid", 0)) < 2**53 for e in events)


def test_export_model_explorer_values(
    jax_bundle: RunBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "node_data.json"
    code, _, _ = run(
        capsys, "export", str(jax_bundle.root), "--to", "model-explorer", "-o", str(output)
    )
    assert code == 0
    data = json.loads(output.read_text())
    assert set(data) >= {"main"}
    assert max(r["value"] for r in data["main"]["results"].values()) > 0
    stops = [g["stop"] for g in data["main"]["gradient"]]
    assert stops[0] == 0 and stops[-1] == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["top", "{missing}"],
        ["top", "{unannotated}"],
        ["report", "{unannotated}", "-o", "{out}"],
        ["report", "{missing}", "-o", "{out}"],
        ["export", "{unannotated}", "--to", "model-explorer", "-o", "{out}"],
        ["export", "{synthetic}", "--to", "perfetto", "-o", "{out}"],  # lists no trace file
        ["export", "{synthetic}", "--to", "svg", "-o", "{out}"],
        ["top", "{synthetic}", "--by", "layer"],
        ["top", "{synthetic}", "--level", "linalg"],
        ["top", "{synthetic}", "-n", "0"],
        ["top", "{synthetic}", "-n", "-3"],
        ["demo", "--framework", "onnx", "-o", "{tmp}/demo", "-n", "0"],
        ["graph", "{missing}/a.mlir", "-o", "{out}"],
        ["graph", "{synthetic}/annotated/tf.mlir", "-o", "{tmp}/g.pdf"],
        ["graph", "{synthetic}/annotated/tf.mlir", "--function", "nope", "-o", "{out}"],
        ["graph", "{synthetic}/manifest.json", "-o", "{out}"],
        ["graph", "{synthetic}", "--level", "linalg", "-o", "{tmp}/g.dot"],
        ["graph", "{synthetic}/annotated/tf.mlir", "--level", "tf", "-o", "{tmp}/g.dot"],
        ["graph", "{unannotated}", "-o", "{tmp}/g.dot"],
        ["graph", "{tmp}", "-o", "{tmp}/g.dot"],  # a folder that is no run
    ],
)
def test_bad_input_exits_2_without_output(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unannotated = make_bundle(tmp_path / "raw", annotate=False)
    synthetic = make_bundle(tmp_path / "ok")
    out = tmp_path / "out.html"
    places = {
        "missing": str(tmp_path / "nowhere"),
        "unannotated": str(unannotated.root),
        "synthetic": str(synthetic.root),
        "out": str(out),
        "tmp": str(tmp_path),
    }
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, _, err = run(capsys, *(arg.format(**places) for arg in argv))
    assert code == 2
    assert "error" in err.lower()
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written, not even tmp


def test_hostile_names_pass_through_top_untouched(
    hostile_bundle: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = run(capsys, "top", str(hostile_bundle.root))
    assert code == 0
    assert HOSTILE in out  # rich markup in names is printed, not interpreted


def test_graph_of_a_run_draws_its_annotated_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`graph RUN` is `graph RUN/annotated/<level>.mlir`, the level `top` shows by default."""
    bundle = make_bundle(tmp_path / "ok")
    (level,) = bundle.annotated_levels()
    by_run, by_file = tmp_path / "run.dot", tmp_path / "file.dot"
    assert run(capsys, "graph", str(bundle.root), "-o", str(by_run))[0] == 0
    assert run(capsys, "graph", str(bundle.root), "--level", level, "-o", str(by_run))[0] == 0
    assert run(capsys, "graph", str(bundle.annotated_path(level)), "-o", str(by_file))[0] == 0
    assert by_run.read_bytes() == by_file.read_bytes()

"""Tampered run bundles (issue 17, items 5-7): refused with exit 2 naming the file and field.

GIVEN a real fixture bundle copied to tmp_path, WHEN one file or manifest field is tampered
with, THEN the command exits 2, names what is wrong, reads nothing outside the bundle and writes
no output.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from irprof.api import open_run
from irprof.bundle import RunBundle, fingerprint_files
from irprof.cli.main import main
from irprof.errors import IrprofError
from irprof.opprofile import OpProfile

FIXTURES = Path(__file__).parents[1] / "fixtures"
BUNDLES = {
    "tf": FIXTURES / "tf" / "cnn-infer",
    "jax": FIXTURES / "jax" / "mlp_run",
    "torch": FIXTURES / "torch" / "cnn",
}

# Every file opened while a command runs, seen through Python's audit hook for `open`; the hook
# stays installed (they cannot be removed) but only records while `_OPENED` is a list.
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(str(Path(str(args[0])).absolute()))
        _OPENED.append(os.path.realpath(str(args[0])))  # where a symlink leads


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Paths opened during the test."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


def copy_bundle(framework: str, tmp_path: Path) -> Path:
    """A writable copy of a fixture bundle."""
    target = tmp_path / framework
    shutil.copytree(BUNDLES[framework], target, symlinks=True)
    return target


def edit_manifest(run: Path, change: dict[str, Any]) -> None:
    """Set top-level or `options.<name>` fields of `run`'s manifest."""
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    for name, value in change.items():
        if name.startswith("options."):
            manifest["options"][name.removeprefix("options.")] = value
        else:
            manifest[name] = value
    (run / "manifest.json").write_bytes(orjson.dumps(manifest))


def annotate_outputs(run: Path) -> list[Path]:
    """What `irprof annotate` would have written."""
    return [p for p in (run / "annotated", run / "coverage.json") if p.exists()] + sorted(
        run.glob("opprofile*.json")
    )


# Item 5 -----------------------------------------------------------------------------------------

PATH_FIELDS = [
    ("jax", "trace_files", "$.trace_files[0]"),
    ("torch", "options.fx_nodes", "$.options.fx_nodes"),
    ("tf", "options.runtime_graph", "$.options.runtime_graph"),
    ("jax", "options.hlo_text", "$.options.hlo_text"),
]


def _point_outside(run: Path, tmp_path: Path, kind: str) -> tuple[str, Path]:
    """A bundle path of `kind` and the outside file it reaches."""
    outside = tmp_path / "outside.json"
    outside.write_text('{"nodes": {}}')
    if kind == "absolute":
        return str(outside), outside
    if kind == "dotdot":
        return "../outside.json", outside
    target = Path("/etc/passwd") if kind == "symlink-passwd" else Path("/dev/zero")
    (run / "trace" / "planted").symlink_to(target)
    return "trace/planted", target


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink-passwd", "symlink-zero"])
@pytest.mark.parametrize(("framework", "field", "place"), PATH_FIELDS)
def test_item5_manifest_paths_outside_the_bundle_are_refused_unread(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    opened: list[str],
    framework: str,
    field: str,
    place: str,
    kind: str,
) -> None:
    run = copy_bundle(framework, tmp_path)
    named, target = _point_outside(run, tmp_path, kind)
    edit_manifest(run, {field: [named] if field == "trace_files" else named})
    opened.clear()
    assert main(["annotate", str(run)]) == 2
    err = capsys.readouterr().err
    assert place in err and "manifest.json" in err
    assert "outside the bundle" in err or "not a regular file" in err
    assert str(target) not in opened and str(run / named) not in opened
    assert annotate_outputs(run) == []


def test_item5_annotated_ir_and_coverage_symlinked_out_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], opened: list[str]
) -> None:
    run = copy_bundle("jax", tmp_path)
    (run / "annotated").mkdir()
    (run / "annotated" / "stablehlo.mlir").symlink_to("/etc/passwd")
    assert main(["top", str(run)]) == 2
    assert "outside the bundle" in capsys.readouterr().err
    (run / "annotated" / "stablehlo.mlir").unlink()
    (run / "coverage.json").symlink_to("/dev/zero")
    assert main(["annotate", str(run)]) == 2
    assert "coverage.json" in capsys.readouterr().err
    (run / "coverage.json").unlink()
    assert main(["annotate", str(run)]) == 0
    (run / "dag.json").symlink_to("/etc/passwd")
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 2
    assert "dag.json" in capsys.readouterr().err and not (tmp_path / "r.html").exists()
    assert "/etc/passwd" not in opened and "/dev/zero" not in opened


# Item 6 -----------------------------------------------------------------------------------------


def fingerprinted_copy(framework: str, tmp_path: Path) -> Path:
    """A fixture bundle whose manifest got the fingerprints `irprof capture` records."""
    run = copy_bundle(framework, tmp_path)
    bundle = RunBundle(run)
    bundle.write_manifest(fingerprint_files(bundle, bundle.manifest()))
    return run


def test_item6_capture_fingerprints_ir_trace_and_side_files(tmp_path: Path) -> None:
    run = fingerprinted_copy("torch", tmp_path)
    recorded = RunBundle(run).manifest().fingerprints
    assert set(recorded) == {
        "ir/torch.mlir",
        "ir/linalg.mlir",
        "trace/torch.pt.trace.json.gz",
        "ir/torch.fx.json",
    }
    assert all(digest.startswith("sha256:") and len(digest) == 71 for digest in recorded.values())


def test_item6_ir_swapped_for_another_models_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fingerprinted_copy("jax", tmp_path)
    other = FIXTURES / "jax" / "transformer_run" / "ir" / "stablehlo.mlir"
    shutil.copyfile(other, run / "ir" / "stablehlo.mlir")
    assert main(["annotate", str(run)]) == 2
    err = capsys.readouterr().err
    assert "ir/stablehlo.mlir" in err and "changed since capture" in err
    assert "--allow-mismatch" in err
    assert annotate_outputs(run) == []
    # Deliberate use: the fingerprint is skipped, the coverage check still refuses the pair.
    assert main(["annotate", str(run), "--allow-mismatch"]) == 2
    assert "matched only" in capsys.readouterr().err
    assert annotate_outputs(run) == []


def test_item6_trace_swapped_is_refused_and_allow_mismatch_hands_over_to_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fingerprinted_copy("jax", tmp_path)
    trace = run / "trace" / "jax_mlp.xplane.pb"
    trace.write_bytes(trace.read_bytes())  # same bytes: still matches
    assert main(["annotate", str(run)]) == 0
    shutil.rmtree(run / "annotated")
    # Another capture of the same script: a different profile, named differently inside.
    shutil.copyfile(FIXTURES / "traces" / "jax_mlp.xplane.pb", trace)
    assert main(["annotate", str(run)]) == 2
    assert "jax_mlp.xplane.pb: changed since capture" in capsys.readouterr().err
    assert not (run / "annotated").exists()
    assert main(["annotate", str(run), "--allow-mismatch"]) == 2
    assert "matched only 0.0% of profiled time" in capsys.readouterr().err
    assert not (run / "annotated").exists()


def test_item6_bundles_without_fingerprints_still_annotate(tmp_path: Path) -> None:
    run = copy_bundle("jax", tmp_path)
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    del manifest["fingerprints"]  # as bundles captured before fingerprints existed
    (run / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert RunBundle(run).manifest().fingerprints == {}
    assert main(["annotate", str(run)]) == 0


def test_item6_a_file_added_to_a_fingerprinted_manifest_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fingerprinted_copy("jax", tmp_path)
    shutil.copyfile(FIXTURES / "traces" / "jax_mlp.xplane.pb", run / "trace" / "other.xplane.pb")
    edit_manifest(run, {"trace_files": ["trace/other.xplane.pb"]})
    assert main(["annotate", str(run)]) == 2
    assert "other.xplane.pb: not fingerprinted at capture" in capsys.readouterr().err


# Item 7 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "place"),
    [
        ({"framework": ["torch"]}, "$.framework"),
        ({"trace_files": [5]}, "$.trace_files[0]"),
        ({"model": 5}, "$.model"),
        ({"ir_levels": "torch"}, "$.ir_levels"),
        ({"options.fx_nodes": 5}, "$.options.fx_nodes"),
        ({"fingerprints": {"ir/torch.mlir": "md5:0"}}, "$.fingerprints"),
    ],
)
def test_item7_mistyped_manifest_fields_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], place: str
) -> None:
    run = copy_bundle("torch", tmp_path)
    edit_manifest(run, change)
    for argv in (["annotate", str(run)], ["top", str(run)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "manifest.json" in err and place in err


def annotated_copy(framework: str, tmp_path: Path) -> Path:
    run = copy_bundle(framework, tmp_path)
    assert main(["annotate", str(run)]) == 0
    return run


def view_commands(run: Path, tmp_path: Path) -> list[list[str]]:
    return [
        ["top", str(run)],
        ["report", str(run), "-o", str(tmp_path / "report.html")],
        ["export", str(run), "--to", "chrome", "-o", str(tmp_path / "trace.json")],
    ]


@pytest.mark.parametrize(
    ("document", "place"),
    [
        ({"version": 1, "levels": {"stablehlo": {"level": "stablehlo"}}}, "profiled_ns"),
        ({"version": 1, "levels": []}, "$.levels"),
        ("truncated", "coverage.json"),
    ],
)
def test_item7_malformed_coverage_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object, place: str
) -> None:
    run = annotated_copy("jax", tmp_path)
    good = (run / "coverage.json").read_bytes()
    (run / "coverage.json").write_bytes(
        good[: len(good) // 2] if document == "truncated" else orjson.dumps(document)
    )
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "coverage.json" in err and place in err
    assert not (tmp_path / "r.html").exists()
    assert main(["annotate", str(run)]) == 2  # annotate merges into it: refused, not crashed
    assert "coverage.json" in capsys.readouterr().err


def test_item7_wrong_coverage_number_type_names_the_field_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = annotated_copy("tf", tmp_path)
    document = orjson.loads((run / "coverage.json").read_bytes())
    document["levels"]["tf"]["profiled_ns"] = "12"
    (run / "coverage.json").write_bytes(orjson.dumps(document))
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 2
    assert "$.levels.tf.profiled_ns" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "place"),
    [
        (lambda doc: doc["entries"][0]["profile"].update(total_ns=-1), "total_ns"),
        (lambda doc: doc["entries"][0]["profile"].update(fraction=1e308 * 10), "fraction"),
        (lambda doc: doc["entries"][0].update(key=5), "$.entries[0].key"),
        (lambda doc: doc.update(entries={}), "$.entries"),
    ],
)
def test_item7_malformed_opprofile_is_named(tmp_path: Path, edit: Any, place: str) -> None:
    run = annotated_copy("jax", tmp_path)
    path = run / "opprofile.stablehlo.json"
    document = orjson.loads(path.read_bytes())
    edit(document)
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY))
    with pytest.raises(IrprofError, match=place.replace("$", r"\$").replace("[", r"\[")):
        open_run(run).profile("stablehlo")
    with pytest.raises(IrprofError, match="opprofile"):
        OpProfile.load(path)


@pytest.mark.parametrize(
    ("document", "place"),
    [
        (b'{"nodes": 5}', "$.nodes"),
        (b'{"nodes": [{"index": "0", "name": "a", "target": "t"}]}', "$.nodes[0].index"),
        (b'{"nodes": [{"index": 0, "name": "a", "target": "t", "modules": [[1]]}]}', "modules"),
        (b'{"nodes": [', "torch.fx.json"),
    ],
)
def test_item7_malformed_fx_nodes_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: bytes, place: str
) -> None:
    run = copy_bundle("torch", tmp_path)
    (run / "ir" / "torch.fx.json").write_bytes(document)
    assert main(["annotate", str(run)]) == 2
    err = capsys.readouterr().err
    assert "torch.fx.json" in err and place in err
    assert annotate_outputs(run) == []


@pytest.mark.parametrize(
    ("tamper", "complaint"),
    [
        (lambda run: edit_manifest(run, {"framework": "nope"}), "unknown framework 'nope'"),
        (lambda run: edit_manifest(run, {"ir_levels": []}), "not among the captured IR levels"),
        (
            lambda run: (run / "annotated" / "stablehlo.mlir").write_text("garbage {{{"),
            "annotated/stablehlo.mlir",
        ),
        (
            lambda run: shutil.copyfile(
                run / "annotated" / "stablehlo.mlir", run / "annotated" / "planted.mlir"
            ),
            "planted",
        ),
    ],
)
def test_item7_views_refuse_unknown_framework_empty_levels_garbage_ir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tamper: Any, complaint: str
) -> None:
    run = annotated_copy("jax", tmp_path)
    tamper(run)
    capsys.readouterr()
    for argv in view_commands(run, tmp_path):
        assert main(argv) == 2, argv
        assert complaint in capsys.readouterr().err
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "trace.json").exists()


def test_item7_annotated_being_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_bundle("jax", tmp_path)
    (run / "annotated").write_text("not a folder")
    assert main(["top", str(run)]) == 2
    assert "annotated: expected a directory" in capsys.readouterr().err

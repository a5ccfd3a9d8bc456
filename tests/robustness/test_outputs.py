"""Outputs never destroy inputs, a failed write never half-updates a bundle (issue 27, 1-2, 4).

GIVEN real fixture traces and bundles copied to tmp_path, WHEN an output names an input (directly,
through a symlink, `..` or a hard link), a dataset partition is a link, or the disk fills up
mid-annotate, THEN the command exits 2 naming the paths and every input is as it was.
"""

from __future__ import annotations

import errno
import gzip
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from irprof import fileio
from irprof.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
CNN = FIXTURES / "tf" / "cnn-infer"
XPLANE = "trace/plugins/profile/2026_11_22_08_46_25/localhost_53411.xplane.pb"
CHROME_GZ = FIXTURES / "traces" / "torch_mlp.trace.json.gz"
RANK_PAIR = [
    FIXTURES / "traces" / "public" / f"trace_filter__sampled_rank-{rank}.json.gz" for rank in (0, 1)
]


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry below `folder`: file bytes, link targets, folders (None)."""
    entries: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink():
            entries[name] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            entries[name] = path.read_bytes()
        else:
            entries[name] = None
    return entries


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main([str(arg) for arg in argv])
    return code, capsys.readouterr().err


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A writable copy of the TF CNN inference bundle."""
    return Path(shutil.copytree(CNN, tmp_path / "run"))


@pytest.fixture
def chrome(tmp_path: Path) -> Path:
    """An uncompressed Chrome trace, `same.json`."""
    path = tmp_path / "same.json"
    path.write_bytes(gzip.decompress(CHROME_GZ.read_bytes()))
    return path


# -- 1. an output onto an input ------------------------------------------------------------


@pytest.mark.parametrize("how", ["same", "symlink", "dotdot", "hardlink"])
def test_trace_convert_onto_its_input_is_refused_and_the_input_kept(
    chrome: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    # GIVEN an output path that is, or resolves to, the input trace
    original = chrome.read_bytes()
    output = {
        "same": lambda: chrome,
        "symlink": lambda: (tmp_path / "link.json").symlink_to(chrome) or tmp_path / "link.json",
        "dotdot": lambda: (tmp_path / "sub").mkdir() or tmp_path / "sub" / ".." / chrome.name,
        "hardlink": lambda: os.link(chrome, tmp_path / "hard.json") or tmp_path / "hard.json",
    }[how]()
    # WHEN converted onto it
    code, err = run(capsys, "trace", "convert", chrome, "-o", output)
    # THEN exit 2 naming both paths, and the Chrome trace is untouched
    assert code == 2
    assert f"-o {output}" in err and f"the input {chrome}" in err
    assert chrome.read_bytes() == original


def test_dag_onto_the_bundle_manifest_is_refused(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(bundle)
    code, err = run(capsys, "dag", bundle, "-o", bundle / "manifest.json")
    assert code == 2 and "manifest.json" in err and "is the input" in err
    assert snapshot(bundle) == before


def test_dag_svg_onto_a_bundle_ir_level_is_refused(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(bundle)
    code, err = run(
        capsys, "dag", bundle, "-o", tmp_path / "dag.json", "--svg", bundle / "ir" / "tf.mlir"
    )
    assert code == 2 and "--svg" in err and "tf.mlir" in err
    assert snapshot(bundle) == before and not (tmp_path / "dag.json").exists()


def test_export_onto_the_profilers_trace_is_refused(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an annotated bundle
    assert run(capsys, "annotate", bundle, "--level", "tf")[0] == 0
    before = snapshot(bundle)
    # WHEN its Chrome export is aimed at the profiler's own XPlane file
    code, err = run(capsys, "export", bundle, "--to", "chrome", "-o", bundle / XPLANE)
    # THEN refused, and the bundle (XPlane included) is byte for byte as it was
    assert code == 2 and "xplane.pb" in err and "is the input" in err
    assert snapshot(bundle) == before


def test_a_folder_output_holding_an_input_is_refused(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(bundle)
    code, err = run(capsys, "trace", "convert", bundle / XPLANE, "-o", bundle / "trace")
    assert code == 2 and "holds the input" in err
    assert snapshot(bundle) == before


def test_outputs_beside_the_inputs_are_still_written(
    bundle: Path, chrome: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bundle's derived files (dag.json) and a sibling of a trace are not inputs.
    assert run(capsys, "dag", bundle, "-o", bundle / "dag.json")[0] == 0
    assert run(capsys, "dag", bundle, "-o", bundle / "dag.json")[0] == 0
    assert run(capsys, "trace", "convert", chrome, "-o", chrome.with_suffix(".parquet"))[0] == 0
    assert (bundle / "dag.json").is_file() and chrome.with_suffix(".parquet").is_file()


# -- 2. dataset partitions that are links ------------------------------------------------------


@pytest.fixture
def ranks(tmp_path: Path) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for path in RANK_PAIR:
        shutil.copy(path, folder / path.name)
    return folder


@pytest.mark.parametrize("link", ["folder", "file"])
def test_a_linked_partition_is_refused_and_nothing_outside_is_deleted(
    ranks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str
) -> None:
    # GIVEN a dataset whose rank=9 partition (a folder, or its file) links outside the dataset
    dataset = tmp_path / "ds"
    assert run(capsys, "trace", "convert", ranks, "-o", dataset, "--workers", "0")[0] == 0
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "events.parquet").write_bytes(b"precious")
    if link == "folder":
        (dataset / "rank=9").symlink_to(outside, target_is_directory=True)
    else:
        (dataset / "rank=9").mkdir()
        (dataset / "rank=9" / "events.parquet").symlink_to(outside / "events.parquet")
    before = snapshot(dataset)
    # WHEN converted into it again (rank 9 is stale: the old code removed it through the link)
    code, err = run(capsys, "trace", "convert", ranks, "-o", dataset, "--workers", "0")
    # THEN exit 2 naming the partition; the file outside and the dataset are untouched
    assert code == 2 and "rank=9" in err
    assert (outside / "events.parquet").read_bytes() == b"precious"
    assert snapshot(dataset) == before


def test_a_stale_real_partition_is_still_removed(
    ranks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "ds"
    assert run(capsys, "trace", "convert", ranks, "-o", dataset, "--workers", "0")[0] == 0
    shutil.copytree(dataset / "rank=1", dataset / "rank=9")
    assert run(capsys, "trace", "convert", ranks, "-o", dataset, "--workers", "0")[0] == 0
    assert sorted(path.name for path in dataset.iterdir()) == ["dataset.json", "rank=0", "rank=1"]


# -- 4. write errors: exit 2 with the errno's words; annotate commits all or nothing ----------


def fail_write_number(
    monkeypatch: pytest.MonkeyPatch, failing: int, code: int = errno.ENOSPC
) -> list[int]:
    """Make the `failing`-th output written (1-based) hit `code` at the write layer."""
    calls: list[int] = []
    real: Callable[[IO[bytes], bytes], None] = fileio._write_handle

    def write(handle: IO[bytes], data: bytes) -> None:
        calls.append(len(data))
        if len(calls) == failing:
            raise OSError(code, os.strerror(code))
        real(handle, data)

    monkeypatch.setattr(fileio, "_write_handle", write)
    return calls


@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_full_disk_during_annotate_leaves_the_bundle_as_it_was(
    bundle: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    # GIVEN a bundle already annotated at one level
    assert run(capsys, "annotate", bundle, "--level", "tf")[0] == 0
    before = snapshot(bundle)
    # WHEN annotating another level, the disk fills up at the `failing`-th of its 3 outputs
    calls = fail_write_number(monkeypatch, failing)
    code, err = run(capsys, "annotate", bundle, "--level", "tf-standard")
    # THEN exit 2 with the errno's words, and the bundle is byte for byte what it was
    assert len(calls) == failing
    assert code == 2 and "No space left on device" in err and str(bundle) in err
    assert snapshot(bundle) == before
    # AND once there is space again, the level is annotated with its coverage record
    monkeypatch.undo()
    assert run(capsys, "annotate", bundle, "--level", "tf-standard")[0] == 0
    coverage = (bundle / "coverage.json").read_text()
    assert '"tf"' in coverage and '"tf-standard"' in coverage


def test_a_full_disk_during_convert_is_exit_2_with_no_output(
    chrome: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fail_write_number(monkeypatch, 1)
    output = tmp_path / "out.json"
    code, err = run(capsys, "trace", "convert", chrome, "-o", output, "--in-memory")
    assert code == 2 and f"{output}: cannot write the output (No space left on device)" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["same.json"]


def test_an_unwritable_output_folder_is_exit_2_naming_the_errno(
    chrome: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # /dev/null is a device, so nothing can be created below it (even as root)
    output = Path("/dev/null/out.parquet")
    code, err = run(capsys, "trace", "convert", chrome, "-o", output)
    assert code == 2 and f"{output}: cannot write the output (" in err
    assert os.strerror(errno.EEXIST) in err or os.strerror(errno.ENOTDIR) in err


def test_a_permission_error_while_writing_is_exit_2(
    chrome: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fail_write_number(monkeypatch, 1, errno.EACCES)
    code, err = run(capsys, "dag", chrome, "-o", tmp_path / "dag.json")
    assert code == 2 and "Permission denied" in err and "dag.json" in err
    assert not (tmp_path / "dag.json").exists()

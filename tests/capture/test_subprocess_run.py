"""A capture hands on only a bundle irprof can read: the staged bundle is checked first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from irprof.bundle import Manifest, RunBundle
from irprof.capture.subprocess_run import staged_bundle
from irprof.errors import CaptureError

FIXTURE_TRACE = Path(__file__).parents[1] / "fixtures" / "traces" / "jax_mlp.xplane.pb"


def _stage(staging: Path, trace_bytes: bytes) -> None:
    (staging / "trace").mkdir()
    (staging / "trace" / "t.xplane.pb").write_bytes(trace_bytes)
    manifest = Manifest("jax", "m.py", "e", 1, "cpu", {}, (), ("trace/t.xplane.pb",))
    RunBundle(staging).write_manifest(manifest)


def test_a_readable_bundle_is_moved_into_place(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with staged_bundle(out) as staging:
        _stage(staging, FIXTURE_TRACE.read_bytes())
    assert RunBundle(out).trace() is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_trace_the_reader_refuses_fails_the_capture_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    data = FIXTURE_TRACE.read_bytes()
    with (
        pytest.raises(CaptureError, match=r"irprof cannot read.*t\.xplane\.pb"),
        staged_bundle(out) as staging,
    ):
        _stage(staging, data[: len(data) // 2])
    assert list(tmp_path.iterdir()) == []


def test_an_earlier_bundle_survives_a_failed_recapture(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with staged_bundle(out) as staging:
        _stage(staging, FIXTURE_TRACE.read_bytes())
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(CaptureError), staged_bundle(out) as staging:
        _stage(staging, b"\x00garbage")
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    shutil.rmtree(out)

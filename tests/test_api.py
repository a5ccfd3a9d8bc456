"""The Python API: the same loop as the CLI, returning plain data (on a real JAX run bundle)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import irprof
from irprof.mlir.profile_attrs import get_summary

MLP_RUN = Path(__file__).parent / "fixtures" / "jax" / "mlp_run"


@pytest.fixture(name="run_dir")
def fixture_run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(MLP_RUN, target)
    return target


def test_open_annotate_top_report_as_data(run_dir: Path) -> None:
    run = irprof.open_run(run_dir)
    assert run.manifest().framework == "jax" and run.annotated_levels() == []
    trace = run.trace()
    assert trace is run.trace()  # read once per loader
    outcome = irprof.annotate(run)
    assert outcome.level == "stablehlo" and outcome.coverage.time_coverage > 0.9
    assert run.annotated_levels() == ["stablehlo"]
    assert run.coverage("stablehlo") == outcome.coverage
    profile = run.profile("stablehlo")
    assert profile.level == "stablehlo" and profile.entries
    table = run.top(limit=3)
    times = [row.total_ns for row in table.rows]
    assert len(times) == 3 and times == sorted(times, reverse=True) and times[0] > 0
    # The hottest row is the hottest op of the written profile.
    assert times[0] == max(entry.data.total_ns for entry in profile.entries)
    report = irprof.report(run)
    assert report == run_dir / "report.html" and report.read_bytes().startswith(b"<!DOCTYPE")
    summary = get_summary(run.ir("stablehlo"))
    assert summary is None  # the source IR is untouched; the annotated copy carries it
    annotated = run_dir / "annotated" / "stablehlo.mlir"
    assert "irprof.summary" in annotated.read_text()


def test_read_trace_and_errors_from_the_package(tmp_path: Path) -> None:
    trace = irprof.read_trace(MLP_RUN / "trace" / "jax_mlp.xplane.pb")
    assert len(trace) > 0
    missing = tmp_path / "nothing"
    with pytest.raises(irprof.BundleError, match="not a run bundle"):
        irprof.open_run(missing)
    with pytest.raises(
        irprof.UsageError, match="unknown framework 'mxnet'; known: iree, jax, tf, torch"
    ):
        irprof.capture_model("mxnet", "model.py", tmp_path / "out")
    with pytest.raises(AttributeError):
        irprof.no_such_function  # noqa: B018


def test_api_names_stay_functions_after_every_subpackage_is_imported() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.walk_packages(irprof.__path__, "irprof."):
        if module.ispkg:
            importlib.import_module(module.name)
    for name in ("read_trace", "capture_model", "open_run", "annotate", "report"):
        assert callable(getattr(irprof, name)) and getattr(irprof, name).__module__ == "irprof.api"


def test_one_command_reads_the_manifest_trace_and_ir_once(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import irprof.bundle
    import irprof.mlir.load
    import irprof.readers
    from irprof.cli.main import main

    calls: dict[str, int] = {"manifest": 0, "trace": 0, "ir": 0}

    def counted(name: str, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        irprof.bundle.Manifest,
        "decode",
        staticmethod(counted("manifest", irprof.bundle.Manifest.decode)),
    )
    monkeypatch.setattr(irprof.readers, "read_trace", counted("trace", irprof.readers.read_trace))
    monkeypatch.setattr(
        irprof.mlir.load, "load_module", counted("ir", irprof.mlir.load.load_module)
    )
    assert main(["annotate", str(run_dir)]) == 0
    # one manifest, one trace; the IR twice: the correlator's copy and the one annotated
    assert calls == {"manifest": 1, "trace": 1, "ir": 2}

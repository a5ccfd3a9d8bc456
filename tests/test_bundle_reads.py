"""One read of each file and one parse of each IR level per command (`irprof annotate`).

Opens are counted with an audit hook (every Python-level `open` of a path, whoever makes it)
and parses by wrapping the bindings' `Module.parse`/`parseFile` where irprof calls them, on
copies of real fixture bundles of each stack.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from irprof.bundle import RunBundle, fingerprint_files
from irprof.cli.main import main
from irprof.mlir import load

FIXTURES = Path(__file__).parent / "fixtures"
BUNDLES = {
    "tf": FIXTURES / "tf" / "cnn-infer",
    "jax": FIXTURES / "jax" / "mlp_run",
    "torch": FIXTURES / "torch" / "cnn",
    "iree": FIXTURES / "iree" / "mlp",
}

_OPENS: Counter[str] | None = None


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if _OPENS is not None and event == "open" and isinstance(args[0], (str, Path)):
        _OPENS[str(Path(args[0]).resolve())] += 1


sys.addaudithook(_count_opens)


class CountingModule:
    """The bindings' `ir.Module`, counting parses by what they parse."""

    def __init__(self, real: Any, parses: Counter[str]) -> None:
        self._real = real
        self._parses = parses

    def parse(self, source: Any, context: Any = None) -> Any:
        self._parses["<text>"] += 1
        return self._real.parse(source, context)

    def parseFile(self, path: str, context: Any = None) -> Any:
        self._parses[str(Path(path).resolve())] += 1
        return self._real.parseFile(path, context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class CountingIr:
    """`iree.compiler.ir` with a counting `Module`."""

    def __init__(self, real: Any, parses: Counter[str]) -> None:
        self._real = real
        self.Module = CountingModule(real.Module, parses)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.mark.parametrize("framework", sorted(BUNDLES))
def test_annotate_reads_each_file_once_and_parses_each_level_once(
    framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    global _OPENS
    run = tmp_path / "run"
    shutil.copytree(BUNDLES[framework], run)
    # Fingerprinted, as `irprof capture` writes bundles now: every named file is hashed first.
    bundle = RunBundle(run)
    bundle.write_manifest(fingerprint_files(bundle, bundle.manifest()))
    parses: Counter[str] = Counter()
    monkeypatch.setattr(load, "ir", CountingIr(load.ir, parses))
    _OPENS = Counter()
    try:
        assert main(["annotate", str(run)]) == 0
        opens = _OPENS
    finally:
        _OPENS = None
    inside = {path: count for path, count in opens.items() if Path(path).is_relative_to(run)}
    inputs = {
        path: count
        for path, count in inside.items()
        if Path(path).is_file() and Path(path).relative_to(run).parts[0] != "annotated"
    }
    read_twice = {Path(p).relative_to(run).as_posix(): n for p, n in inputs.items() if n > 1}
    assert read_twice == {}, "files opened more than once"
    levels = {Path(p).name: n for p, n in parses.items() if Path(p).is_relative_to(run / "ir")}
    assert levels, parses  # the level annotated was parsed, through load_module
    assert all(count == 1 for count in levels.values()), levels
    # The trace and the IR were among the files read: the count saw them.
    read = {Path(p).relative_to(run).parts[0] for p in inputs}
    assert {"ir", "trace", "manifest.json"} <= read


def test_the_counters_see_a_second_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle itself: reading a file twice and parsing twice are counted as such."""
    global _OPENS
    from irprof.mlir.context import make_context

    path = tmp_path / "m.mlir"
    path.write_text("module {}\n")
    parses: Counter[str] = Counter()
    monkeypatch.setattr(load, "ir", CountingIr(load.ir, parses))
    _OPENS = Counter()
    try:
        load.load_module(path, make_context())
        load.load_module(path, make_context())
        opens = _OPENS
    finally:
        _OPENS = None
    assert opens[str(path.resolve())] == 2
    assert parses[str(path.resolve())] == 2


def test_report_against_another_run_reads_each_annotated_level_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    global _OPENS
    runs = []
    for name in ("a", "b"):
        run = tmp_path / name
        shutil.copytree(BUNDLES["jax"], run)
        assert main(["annotate", str(run)]) == 0
        runs.append(run)
    parses: Counter[str] = Counter()
    monkeypatch.setattr(load, "ir", CountingIr(load.ir, parses))
    _OPENS = Counter()
    try:
        argv = ["report", str(runs[1]), "--against", str(runs[0]), "-o", str(tmp_path / "r.html")]
        assert main([*argv, "--peak-gflops", "100", "--peak-gbps", "10"]) == 0
        opens = _OPENS
    finally:
        _OPENS = None
    annotated = [runs[1] / "annotated" / "stablehlo.mlir", runs[0] / "annotated" / "stablehlo.mlir"]
    for path in annotated:
        assert opens[str(path.resolve())] <= 1, path
        assert parses[str(path.resolve())] == 1, (path, parses)

"""Fuzz the bundle-reading commands with mutated copies of the real fixture bundles (issue 17).

Each example copies an annotated fixture bundle (TF, JAX, PyTorch) to a fresh folder, damages
one file (truncation, byte flips, inserted garbage, bad UTF-8, wrong JSON types, huge and
non-finite numbers, deep nesting, path fields pointing outside the bundle) and runs `annotate`,
`top`, `report`, `export --to chrome` and `trace summary` in-process. Every command must exit 0,
or exit 2 naming the damaged file; never raise, never open a file outside the bundle that the
bundle named, never leave an output behind when it fails. The budget is fixed (derandomized,
a set number of examples) so the suite takes the same couple of minutes everywhere.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from irprof.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOURCES = {
    "tf": FIXTURES / "tf" / "cnn-infer",
    "jax": FIXTURES / "jax" / "mlp_run",
    "torch": FIXTURES / "torch" / "cnn",
}


def fuzz_settings(max_examples: int) -> settings:
    """The fixed budget: derandomized, no example database, no deadline (commands parse IR)."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# JSON files whose structure is mutated value by value (traces are fuzzed by their readers' suite).
JSON_FILES = ("manifest.json", "coverage.json", ".fx.json", "runtime_graph.json")
HOSTILE_VALUES: tuple[bytes, ...] = (
    b"null",
    b"true",
    b"[]",
    b"{}",
    b'""',
    b'"x"',
    b"5",
    b"-1",
    b"0.5",
    b"9223372036854775808",  # 2**63
    b"-9223372036854775809",
    b"18446744073709551616",  # 2**64
    b"1" + b"0" * 400,
    b"1e308",
    b"1e400",
    b"-1e400",
    b"NaN",
    b"Infinity",
    b'"\xff\xfe\xa0~\x85Kd\x7f"',  # invalid UTF-8 inside a string, as torch's profiler wrote
    b'"\\ud800"',  # lone surrogate escape
    b'"' + b"A" * 100_000 + b'"',
    b"[" * 3000 + b"]" * 3000,
    b'"/etc/passwd"',
    b'"../../outside.json"',
    b'"trace/../../outside.json"',
)

_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, Path)):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def annotated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fixture bundle, copied and annotated once (the inputs under tests/ stay untouched)."""
    root = tmp_path_factory.mktemp("annotated")
    out = {}
    for name, source in SOURCES.items():
        run = root / name
        shutil.copytree(source, run)
        assert main(["annotate", str(run)]) == 0, name
        out[name] = run
    return out


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A scratch folder per test; each example makes and removes its own subfolder."""
    with tempfile.TemporaryDirectory(prefix="irprof-fuzz-") as folder:
        yield Path(folder)


def bundle_files(run: Path) -> list[str]:
    """Every regular file of a bundle, relative, sorted."""
    return sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())


def snapshot(run: Path) -> dict[str, str]:
    """Relative path -> sha256 of each file (symlinks recorded, not followed)."""
    out = {}
    for path in sorted(run.rglob("*")):
        rel = path.relative_to(run).as_posix()
        if path.is_symlink():
            out[rel] = f"-> {path.readlink()}"
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# -- mutations --------------------------------------------------------------------------------


@st.composite
def byte_mutations(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` truncated, with flipped bytes, with garbage inserted or with invalid UTF-8."""
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "bad-utf8", "empty"]))
    if kind == "empty" or not data:
        return b""
    at = draw(st.integers(0, len(data) - 1))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        flipped = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            spot = draw(st.integers(0, len(data) - 1))
            flipped[spot] ^= draw(st.integers(1, 255))
        return bytes(flipped)
    if kind == "insert":
        garbage = draw(st.binary(min_size=1, max_size=64))
        return data[:at] + garbage + data[at:]
    return data[:at] + b"\xff\xc3\x28\xa0\xe2\x82" + data[at:]


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value of a JSON document (the root included)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:20]):
            yield from json_paths(item, (*prefix, index))


PLACEHOLDER = "@@irprof-fuzz-hostile@@"


@st.composite
def json_mutations(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` (a JSON document) with one value replaced by a hostile one, or a key removed."""
    document = orjson.loads(data)
    paths = list(json_paths(document))
    path = draw(st.sampled_from(paths))
    remove = bool(path) and draw(st.booleans()) and isinstance(_parent(document, path), dict)
    if remove:
        del _parent(document, path)[path[-1]]
        return orjson.dumps(document)
    hostile = draw(st.sampled_from(HOSTILE_VALUES))
    if not path:
        return hostile
    _parent(document, path)[path[-1]] = PLACEHOLDER
    return orjson.dumps(document).replace(f'"{PLACEHOLDER}"'.encode(), hostile, 1)


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        document = document[step]
    return document


def mutate_file(path: Path, data: bytes, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
    """Write a damaged version of `data` to `path` (inside gzip when the file is gzipped)."""
    is_json = path.name.endswith(JSON_FILES) or (
        path.name.startswith("opprofile.") and path.suffix == ".json"
    )
    if path.suffix == ".gz" and draw(st.booleans()):
        inner = gzip.decompress(data)
        path.write_bytes(gzip.compress(draw(byte_mutations(inner)), mtime=0))
    elif is_json and draw(st.booleans()):
        path.write_bytes(draw(json_mutations(data)))
    else:
        path.write_bytes(draw(byte_mutations(data)))


# -- running the commands -----------------------------------------------------------------------


def run_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`irprof argv` in-process: (exit code, stderr). An escaping exception fails the test."""
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out, argv
    return code, captured.err


def check_commands(
    run: Path, outputs: Path, named: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Run the bundle commands on `run`; exit 2 must name one of `named` (file names)."""
    trace = _primary_trace(run)
    commands: list[tuple[list[str], Path | None]] = [
        (["top", str(run)], None),
        (["report", str(run), "-o", str(outputs / "report.html")], outputs / "report.html"),
        (
            ["export", str(run), "--to", "chrome", "-o", str(outputs / "trace.json")],
            outputs / "trace.json",
        ),
    ]
    if trace is not None:
        commands.append((["trace", "summary", str(trace)], None))
    commands.append((["annotate", str(run)], None))
    for argv, output in commands:
        before = snapshot(run)
        code, err = run_command(argv, capsys)
        event(f"{argv[0]} exit {code}")
        assert code in (0, 2), (argv, code, err)
        if code == 2:
            assert any(name in err for name in named), (argv, named, err)
            if output is not None:
                assert not output.exists(), (argv, "partial output left behind")
            assert snapshot(run) == before, (argv, "a failed command changed the bundle")
        if output is not None and output.exists():
            output.unlink()


def _primary_trace(run: Path) -> Path | None:
    """The trace file `trace summary` is run on (from the fixture's own manifest layout)."""
    traces = sorted(p for p in (run / "trace").rglob("*") if p.is_file() and not p.is_symlink())
    xplanes = [p for p in traces if p.name.endswith(".xplane.pb")]
    chosen = xplanes or traces
    return chosen[0] if chosen else None


def fresh_copy(annotated: dict[str, Path], framework: str, workdir: Path) -> tuple[Path, Path]:
    """A new example folder with a copy of the annotated bundle and an empty outputs folder."""
    example = Path(tempfile.mkdtemp(dir=workdir))
    run = example / "run"
    shutil.copytree(annotated[framework], run)
    (example / "out").mkdir()
    return run, example / "out"


# -- the fuzz tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("framework", sorted(SOURCES))
@fuzz_settings(max_examples=30)
@given(data=st.data())
def test_fuzz_one_damaged_file(
    annotated: dict[str, Path],
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    framework: str,
    data: st.DataObject,
) -> None:
    run, outputs = fresh_copy(annotated, framework, workdir)
    victim = run / data.draw(st.sampled_from(bundle_files(run)), label="file")
    mutate_file(victim, victim.read_bytes(), data.draw)
    # A damaged side file can surface through the one that names it (the manifest) and a damaged
    # trace or IR as a correlation that no longer matches (named by the bundle and level).
    named = [victim.name, "manifest.json", "matched only", "nothing to annotate"]
    check_commands(run, outputs, named, capsys)
    shutil.rmtree(run.parent)


PATH_FIELDS = {
    "tf": ["trace_files", "options.runtime_graph"],
    "jax": ["trace_files", "options.hlo_text"],
    "torch": ["trace_files", "options.fx_nodes"],
}


@pytest.mark.parametrize("framework", sorted(SOURCES))
@fuzz_settings(max_examples=15)
@given(data=st.data())
def test_fuzz_manifest_paths_never_leave_the_bundle(
    annotated: dict[str, Path],
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    framework: str,
    data: st.DataObject,
) -> None:
    global _OPENED
    run, outputs = fresh_copy(annotated, framework, workdir)
    secret = run.parent / "secret.json"
    secret.write_text('{"nodes": {}, "traceEvents": []}')
    field = data.draw(st.sampled_from(PATH_FIELDS[framework]), label="field")
    kind = data.draw(st.sampled_from(["absolute", "dotdot", "link-out", "link-zero", "link-dir"]))
    named = {
        "absolute": str(secret),
        "dotdot": data.draw(st.sampled_from(["../secret.json", "ir/../../secret.json"])),
    }.get(kind, "trace/planted")
    if kind.startswith("link"):
        targets = {"link-out": secret, "link-zero": Path("/dev/zero"), "link-dir": run.parent}
        (run / "trace" / "planted").symlink_to(targets[kind])
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    if field == "trace_files":
        manifest["trace_files"].insert(data.draw(st.integers(0, 1)), named)
    else:
        manifest["options"][field.removeprefix("options.")] = named
    (run / "manifest.json").write_bytes(orjson.dumps(manifest))
    _OPENED = []
    try:
        for argv in (
            ["annotate", str(run)],
            ["top", str(run)],
            ["report", str(run), "-o", str(outputs / "r.html")],
        ):
            code, err = run_command(argv, capsys)
            assert code == 2, (argv, err)
            assert "manifest.json" in err and (field.split(".")[-1] in err), err
        opened = {str(Path(p).resolve()) for p in _OPENED if Path(p).exists()}
    finally:
        _OPENED = None
    assert str(secret.resolve()) not in opened and "/dev/zero" not in opened
    assert not (outputs / "r.html").exists()
    shutil.rmtree(run.parent)

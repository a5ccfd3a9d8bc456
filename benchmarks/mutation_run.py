"""Incremental mutation testing: one module at a time, results cached in a committed table.

`make mutation` runs this script. `benchmarks/mutation_results.tsv` holds one row per module
whose bugs change a number or a conclusion users read (the analyses, the event DAG, the
correlators, the MLIR cost model, the readers, the trace model and the renderers that write
numbers), with the sha256 of the module's source when it was last mutated. A run mutates only the
modules whose source no longer matches its row (or never ran), so after a change to one module
only that module is run again; `--module` picks modules by hand, `--all` runs every one.

Each module is mutated on its own (`mutmut run "irprof.pkg.mod.*"` in a fresh `mutants/`), under
`nice -n 19`, with one child by default (other work shares the two cores), and
`IRPROF_MLIR_THREADS=0` (a forked child hangs on MLIR's thread pool otherwise: see
docs/benchmarks.md); `[tool.mutmut]` adds `process_isolation = "forkserver"` (mutants fork from
a process that never ran a test, for the tests that make their own `ir.Context()`) and a
shorter CPU-time limit per mutant. mutmut 3.8.1 reads `only_mutate` and
`pytest_add_cli_args_test_selection` from `[tool.mutmut]` once per process into
`mutmut.configuration._config`; the child process this script starts loads that config,
replaces those two fields for the module and then calls mutmut's own command line, so
`pyproject.toml` is never rewritten. mutmut copies only `src/` and `tests/` into `mutants/`;
the runner first copies README.md, `docs/`, `examples/` and `benchmarks/*.py` there too (tests
find them relative to their own file: the documented outputs, the examples, the benchmarks'
view helpers), without `benchmarks/.cache`.

Which tests run against a module's mutants. mutmut itself runs, for each mutant, only the
selected tests that executed the mutated function in its first (traced) pass, so the selection
decides the cost of that one pass and which tests may kill a mutant. It is derived statically:
the test files that import the module (`import irprof.a.b`, `from irprof.a.b import x`,
`from irprof.a import b`, found by parsing each `tests/**/test_*.py`) plus the test files of the
mirrored folder named for it (`tests/a/test_b*.py` for `src/irprof/a/b.py`); when these are
none, or only files written from survivors (`test_*_mutants.py`), also the test files importing
the nearest modules that import it, breadth first over the import graph (registries'
`"irprof.readers.xplane:READER"` strings count as imports). Coverage
contexts would also find every test that reaches the module through the command line, but
need a traced run of the whole suite first, which on two shared cores costs more than most
module runs; the static selection is cheap, and its score is a lower bound of what the whole
suite detects. `EXTRA_TESTS` adds test files by hand. Tests marked slow, browser or for a
framework (tf, jax, torch, iree, onnx) are deselected by `[tool.mutmut]`'s pytest arguments:
they capture in child processes, which mutmut's tracing does not see.

A mutant counts as detected when a test failed (killed), timed out, crashed or the type checker
rejected it; as missed when every test passed (survived) or no selected test ran its code
(no tests). Target: at least 90% detected in each module; every survivor is listed with the
reason it is equivalent in docs/mutation-survivors.md. The names and diffs of a run's survivors
are written to `mutation-survivors.txt` (not tracked), one section per module.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = Path("src/irprof")
TABLE = Path("benchmarks/mutation_results.tsv")
SURVIVORS = Path("mutation-survivors.txt")
MUTANTS = Path("mutants")
TARGET = 0.90
TEST_INPUTS = ("README.md", "docs", "examples")  # besides benchmarks/*.py: copy_test_inputs
MUTANT_TESTS_SUFFIX = "_mutants.py"  # tests written from survivors: not a module's own tests
LAZY_IMPORT = re.compile(r"irprof(\.\w+)+(:\w+)?")
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}
COLUMNS = (
    "module",
    "sha256",
    "mutants",
    "detected",
    "survived",
    "no_tests",
    "timeouts",
    "score",
    "date",
)

# Folders whose every module is mutated, then single modules (globs relative to src/irprof).
MODULE_GLOBS = (
    "analyses/*.py",
    "event_dag/*.py",
    "correlate/*.py",
    "mlir/cost_*.py",
    "readers/**/*.py",
    "trace/*.py",
    "renderers/perfetto_proto.py",
    "renderers/chrome_trace.py",
    "renderers/mlgo_log.py",
    "renderers/tabular_text.py",
    "renderers/hotspot_table.py",
    "renderers/diff_table.py",
    "renderers/trace_summary_tables.py",
    "renderers/coverage_table.py",
    "renderers/critical_path_table.py",
    "renderers/units.py",
    "renderers/fit.py",
    "coverage.py",
    "mlir/module_coverage.py",
    "mlir/op_index.py",
    "mlir/keys.py",
    "mlir/apply_profile.py",
    "mlir/profile_attrs.py",
    "frameworks/tf/fusion.py",
)

# Test files for modules whose tests reach them through another module (relative to the repo).
EXTRA_TESTS: dict[str, tuple[str, ...]] = {
    "readers/xplane.py": ("tests/e2e/test_public_traces.py", "tests/robustness"),
    "readers/chrome/columns.py": ("tests/e2e/test_public_traces.py",),
    # Reached through `read_trace` by every chrome reader test, which the import graph misses.
    "readers/chrome/reader.py": ("tests/readers/chrome",),
    "mlir/profile_attrs.py": ("tests/passes/test_golden.py",),
    "analyses/hotspots.py": ("tests/analyses/test_private_functions.py",),
    # The JAX tests that decode shipped HLO and thunk traces (no capture: NEEDS_FRAMEWORK = False).
    "correlate/hlo.py": (
        "tests/frameworks/jax/test_hlo.py",
        "tests/frameworks/jax/test_correlate.py",
    ),
    "correlate/xla_thunks.py": ("tests/frameworks/jax/test_correlate.py",),
    # Reached through irprof.trace or the CLI, which the import graph does not follow.
    "trace/builder.py": ("tests/trace/test_model.py",),
    "trace/io.py": (
        "tests/trace/test_errors.py",
        "tests/trace/test_validate_mutants.py",
        "tests/robustness/test_hostile_traces.py",
        "tests/readers/test_detect.py",
    ),
    # Reached through the exporters' registry string and `irprof export`, never imported.
    "analyses/model_explorer_graph.py": ("tests/renderers/test_model_explorer_graph.py",),
    "analyses/mlgo_features.py": (
        "tests/renderers/test_mlgo_log.py",
        "tests/renderers/test_roofline_exports.py",
    ),
}


def is_generated_or_empty(path: Path) -> bool:
    """Protobuf modules and files with no function to mutate (package markers)."""
    if path.name.endswith("_pb2.py"):
        return True
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return not any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(tree)
    )


def modules() -> list[str]:
    """Every module in scope, as paths relative to src/irprof, sorted."""
    found: set[str] = set()
    for pattern in MODULE_GLOBS:
        for path in (REPO / SRC).glob(pattern):
            if not is_generated_or_empty(path):
                found.add(path.relative_to(REPO / SRC).as_posix())
    return sorted(found)


def dotted(module: str) -> str:
    """`analyses/run_diff.py` -> `irprof.analyses.run_diff`."""
    return "irprof." + module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def imported_modules(test_file: Path) -> set[str]:
    """Every dotted name a test file imports, with `from a import b` giving `a` and `a.b`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(test_file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def source_imports(module_file: Path) -> set[str]:
    """The irprof modules a source file imports, relative imports resolved."""
    package = dotted(module_file.relative_to(REPO / SRC).as_posix()).split(".")
    if module_file.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(module_file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            names.add(stem)
            names.update(f"{stem}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # Registries import by name: "irprof.readers.xplane:READER", "irprof.cli.top_cmd".
            found = LAZY_IMPORT.fullmatch(node.value)
            if found:
                names.add(node.value.split(":")[0])
    return {name for name in names if name.startswith("irprof.")}


def importers() -> dict[str, set[str]]:
    """For each irprof module, the irprof modules that import it."""
    found: dict[str, set[str]] = {}
    for path in (REPO / SRC).rglob("*.py"):
        name = dotted(path.relative_to(REPO / SRC).as_posix())
        for imported in source_imports(path):
            found.setdefault(imported, set()).add(name)
    return found


def test_selection(module: str) -> list[str]:
    """Test files (relative to the repo) that run against `module`'s mutants.

    The mirrored test files and those importing the module; when these are only files written
    from survivors (`*_mutants.py`), also those importing the nearest modules that import it
    (breadth first over the import graph).
    """
    parent = Path(module).parent
    stem = Path(module).stem
    mirrored = REPO / "tests" / parent
    tests = {
        test_file.relative_to(REPO).as_posix(): imported_modules(test_file)
        for test_file in sorted((REPO / "tests").rglob("test_*.py"))
    }
    chosen = {
        rel
        for rel in tests
        if (REPO / rel).parent == mirrored and Path(rel).name.startswith(f"test_{stem}")
    }
    graph = importers()
    names = {dotted(module)}
    seen = set(names)
    from_survivors = {rel for rel in tests if rel.endswith(MUTANT_TESTS_SUFFIX)}
    while names:
        chosen.update(rel for rel, imported in tests.items() if imported & names)
        if chosen - from_survivors:
            break
        names = {i for name in names for i in graph.get(name, set())} - seen
        seen |= names
    chosen.update(EXTRA_TESTS.get(module, ()))
    return sorted(chosen)


def source_hash(module: str) -> str:
    """sha256 of the module's source bytes."""
    return hashlib.sha256((REPO / SRC / module).read_bytes()).hexdigest()


def read_table() -> dict[str, dict[str, str]]:
    """The committed results, by module; missing file: no results."""
    path = REPO / TABLE
    if not path.exists():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or tuple(lines[0].split("\t")) != COLUMNS:
        raise SystemExit(f"{TABLE}: header is not {' '.join(COLUMNS)}")
    rows: dict[str, dict[str, str]] = {}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise SystemExit(f"{TABLE}:{number}: {len(cells)} cells, expected {len(COLUMNS)}")
        rows[cells[0]] = dict(zip(COLUMNS, cells, strict=True))
    return rows


def not_run_row(module: str) -> dict[str, str]:
    """A row for a module that has no measurement yet."""
    return {column: "-" for column in COLUMNS} | {"module": module, "score": "not run"}


def write_table(rows: dict[str, dict[str, str]]) -> None:
    """Rewrite the table: every module in scope, sorted; rows of removed modules dropped."""
    lines = ["\t".join(COLUMNS)]
    for module in modules():
        row = rows.get(module, not_run_row(module))
        lines.append("\t".join(row[column] for column in COLUMNS))
    (REPO / TABLE).write_text("\n".join(lines) + "\n", encoding="utf-8")


def print_table(rows: dict[str, dict[str, str]]) -> int:
    """Print the table; return the number of measured modules below the target."""
    below = 0
    print(
        f"{'module':42} {'mutants':>8} {'detected':>9} {'survived':>9} {'no tests':>9} "
        f"{'timeouts':>9} {'score':>8}  date"
    )
    for module in modules():
        row = rows.get(module, not_run_row(module))
        stale = row["sha256"] not in ("-", source_hash(module))
        if row["score"].endswith("%"):
            below += float(row["score"].rstrip("%")) < TARGET * 100
        print(
            f"{module:42} {row['mutants']:>8} {row['detected']:>9} {row['survived']:>9} "
            f"{row['no_tests']:>9} {row['timeouts']:>9} {row['score']:>8}  {row['date']}"
            + ("  (source changed since)" if stale else "")
        )
    return below


def count(meta: Path) -> tuple[Counter[str], list[str]]:
    """Statuses of one module's mutants and the names of those not detected."""
    from mutmut.stats import status_by_exit_code

    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    statuses: Counter[str] = Counter()
    missed: list[str] = []
    for key, code in codes.items():
        status = status_by_exit_code[code]
        statuses[status] += 1
        if status in ("survived", "no tests"):
            missed.append(f"{key}: {status}")
    return statuses, sorted(missed)


def row_for(module: str, statuses: Counter[str]) -> dict[str, str]:
    """A table row from one run's statuses."""
    checked = sum(n for status, n in statuses.items() if status != "not checked")
    detected = sum(statuses[status] for status in DETECTED)
    return {
        "module": module,
        "sha256": source_hash(module),
        "mutants": str(checked),
        "detected": str(detected),
        "survived": str(statuses["survived"]),
        "no_tests": str(statuses["no tests"]),
        "timeouts": str(statuses["timeout"]),
        "score": f"{detected / checked:.1%}" if checked else "no mutants",
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
    }


def write_survivors(module: str, text: str) -> None:
    """Replace `module`'s section of mutation-survivors.txt with `text`."""
    path = REPO / SURVIVORS
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    sections = [s for s in re.split(r"(?m)^(?=## )", old) if s.strip()]
    kept = [s for s in sections if not s.startswith(f"## {module}\n")]
    path.write_text("".join([*kept, f"## {module}\n{text}\n"]), encoding="utf-8")


def copy_test_inputs() -> None:
    """Copy the repository files tests read, besides src/ and tests/, into mutants/.

    mutmut copies only src/ and tests/; tests that find files relative to their own path read
    README.md and docs/ (the documented outputs), examples/ and import benchmarks/*.py (not
    benchmarks/.cache, hundreds of MB of captures).
    """
    for name in TEST_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, REPO / MUTANTS / name)
        elif source.exists():
            shutil.copy2(source, REPO / MUTANTS / name)
    (REPO / MUTANTS / "benchmarks").mkdir()
    for script in sorted((REPO / "benchmarks").glob("*.py")):
        shutil.copy2(script, REPO / MUTANTS / "benchmarks" / script.name)


def run_module(module: str, children: int, tests: list[str] | None) -> dict[str, str] | None:
    """Mutate one module in a fresh mutants/; return its row, or None when mutmut failed."""
    selection = tests or test_selection(module)
    if not selection:
        print(f"{module}: no test file imports it; skipped", file=sys.stderr)
        return None
    shutil.rmtree(REPO / MUTANTS, ignore_errors=True)
    env = os.environ | {"IRPROF_MLIR_THREADS": "0"}
    command = [
        "nice",
        "-n",
        "19",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        module,
        "--children",
        str(children),
        *[f"--tests={test}" for test in selection],
    ]
    print(f"== {module}: {len(selection)} test files", flush=True)
    (REPO / MUTANTS).mkdir()
    copy_test_inputs()
    log = REPO / MUTANTS / "run.log"  # mutmut's own output, kept until the next module
    with log.open("w", encoding="utf-8") as out:
        subprocess.run(command, cwd=REPO, env=env, check=False, stdout=out, stderr=out)
    meta = REPO / MUTANTS / SRC / f"{module}.meta"
    statuses, missed = count(meta) if meta.exists() else (Counter[str](), [])
    if not meta.exists() or statuses["not checked"]:
        tail = log.read_text(encoding="utf-8", errors="replace")[-600:]
        print(f"{module}: mutmut did not finish; its output ends:\n{tail}", file=sys.stderr)
        return None
    shown = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child-show", module, *missed],
        cwd=REPO,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    write_survivors(module, shown.stdout)
    return row_for(module, statuses)


def configure_child(module: str, tests: list[str]) -> None:
    """Point mutmut's loaded config at one module and its tests."""
    from mutmut import configuration

    base = configuration._load_config()
    configuration._config = dataclasses.replace(
        base,
        only_mutate=[(SRC / module).as_posix()],
        pytest_add_cli_args_test_selection=tests,
    )


def child_run(module: str, children: int, tests: list[str]) -> int:
    """In the child: run mutmut on one module's mutants."""
    configure_child(module, tests)
    from mutmut.__main__ import cli

    pattern = dotted(module) + ".*"
    try:
        cli(["run", "--max-children", str(children), pattern], standalone_mode=False)
    except SystemExit as stop:
        return int(stop.code or 0)
    return 0


def child_show(module: str, missed: list[str]) -> int:
    """In the child: print the diff of each missed mutant (mutmut's `show`)."""
    configure_child(module, [])
    from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant

    for line in missed:
        name, status = line.split(": ", 1)
        print(f"# {name}: {status}")
        print(get_diff_for_mutant(name, path=find_mutant(name).path))
    return 0


def main() -> int:
    """Run the stale (or chosen) modules, update the table, print it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--module", action="append", default=[], help="src/irprof-relative path")
    parser.add_argument("--all", action="store_true", help="run every module")
    parser.add_argument("--skip", action="append", default=[], help="glob of modules not to run")
    parser.add_argument("--children", type=int, default=1, help="mutmut --max-children")
    parser.add_argument("--list", action="store_true", help="print modules to run and tests")
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--tests", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-show", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.chdir(REPO)
    if args.child:
        return child_run(args.child, args.children, args.tests)
    if args.child_show:
        return child_show(args.child_show[0], args.child_show[1:])

    rows = read_table()
    in_scope = modules()
    unknown = [m for m in args.module if m not in in_scope]
    if unknown:
        print(f"not a module in scope: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if args.module:
        chosen = list(args.module)
    elif args.all:
        chosen = in_scope
    else:
        chosen = [m for m in in_scope if rows.get(m, {}).get("sha256") != source_hash(m)]
    chosen = [m for m in chosen if not any(Path(m).match(glob) for glob in args.skip)]
    if args.list:
        for module in chosen:
            print(module, *test_selection(module))
        return 0
    if not args.table:
        for module in chosen:
            row = run_module(module, args.children, args.tests or None)
            if row is not None:
                rows[module] = row
                write_table(rows)
                print(f"{module}: {row['score']} ({row['survived']} survived)", flush=True)
        write_table(rows)
    return 1 if print_table(rows) else 0


if __name__ == "__main__":
    sys.exit(main())

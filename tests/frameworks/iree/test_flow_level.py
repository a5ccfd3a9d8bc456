"""IREE's `flow` level counts every dispatch once: launch sites hold their own launches
(inclusively), an executable's ops the time of all its launches, estimated shares are marked,
and only ops that can run are counted. Checked on the fixtures and on a Flax encoder captured
with `--backend iree`, against sums of the IREE profile's own dispatch events."""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from iree.compiler import ir

from irprof.analyses.annotated_level import load_annotated_level
from irprof.api import open_run
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.frameworks.iree.correlate import CORRELATOR
from irprof.frameworks.jax.capture import JaxCaptureOptions, capture_jax
from irprof.opprofile import OpProfileEntry

pytestmark = pytest.mark.jax  # the Flax encoder is captured from JAX (and the iree marker)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "iree"
FLAX = Path(__file__).parents[3] / "examples" / "zoo" / "jax_flax_encoder.py"
STEPS = 3
ABSOLUTE_SOURCE = re.compile(r'"/[^"\s]*\.py')  # a location naming a file by its absolute path
DECLARATIONS = ("flow.executable", "flow.executable.export")
WORKGROUP_COUNT = "iree_tensor_ext.dispatch.workgroup_count"


def _declares(op_name: str) -> bool:
    return op_name in DECLARATIONS or op_name.startswith(WORKGROUP_COUNT)


def _counted(entries: tuple[OpProfileEntry, ...]) -> int:
    """Time of the rows a table sums: every op not marked as repeating others' time."""
    return sum(e.data.total_ns for e in entries if not e.data.source.endswith(":inclusive"))


def _copy(name: str, tmp_path: Path) -> RunBundle:
    shutil.copytree(FIXTURES / name, tmp_path / name)
    return RunBundle(tmp_path / name)


def _site_times(bundle: RunBundle) -> dict[str, list[int]]:
    """Dispatch key -> time of each of its launch sites (program order), from the profile:
    the j-th event of a key in a run is its j-th `flow.dispatch` in the flow IR."""
    by_run: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
    for line in (bundle.root / "trace" / "dispatch.jsonl").read_bytes().splitlines():
        event = orjson.loads(line)
        by_run[(event["submission_id"], event["key"])].append(
            (event["start_host_time_ns"], event["duration_ns"])
        )
    sums: dict[str, list[int]] = defaultdict(list)
    for (_, key), events in by_run.items():
        for index, (_, duration) in enumerate(sorted(events)):
            sites = sums[key]
            sites.extend([0] * (index + 1 - len(sites)))
            sites[index] += duration
    return sums


def _launches(bundle: RunBundle) -> list[tuple[str, str]]:
    """(dispatch key, location text) of each `flow.dispatch` outside initializers, in program
    order."""
    found: list[tuple[str, str]] = []
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(bundle.ir_path("flow").read_text())

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "util.initializer":
                return ir.WalkResult.SKIP
            if op.name == "flow.dispatch":
                key = str(op.attributes["entry_points"][0]).rsplit("::@", 1)[-1]
                found.append((key, str(op.location)))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return found


def _own_launch_times(bundle: RunBundle) -> list[tuple[str, str, int]]:
    """(key, location, time of its own events) of each launch site, in program order."""
    times = _site_times(bundle)
    seen: dict[str, int] = defaultdict(int)
    found = []
    for key, location in _launches(bundle):
        found.append((key, location, times[key][seen[key]]))
        seen[key] += 1
    return found


def _check_launch_sites(bundle: RunBundle, entries: tuple[OpProfileEntry, ...]) -> None:
    launches = [e for e in entries if e.op_name == "flow.dispatch"]
    expected = _own_launch_times(bundle)
    assert [e.data.kernels for e in launches] == [(key,) for key, _, _ in expected]
    for entry, (key, _, own_ns) in zip(launches, expected, strict=True):
        assert entry.data.source.endswith(":inclusive")
        assert entry.data.total_ns == own_ns, key


def test_flow_rows_add_up_to_the_profiled_time_once(tmp_path: Path) -> None:
    # GIVEN two identical layers: one executable, launched from two sites
    run = open_run(_copy("twice", tmp_path).root)
    # WHEN the flow level is annotated and ranked
    run.annotate("flow")
    table = run.top("flow", limit=None)
    profile = run.profile("flow")
    # THEN the rows hold the profiled time once, not once per site and once per executable op
    profiled = profile.totals["profiled_ns"]
    assert _counted(profile.entries) <= profiled
    assert table.total_ns <= table.profiled_ns == profiled
    assert sum(row.total_ns for row in table.rows) <= profiled
    # and each launch site holds exactly its own launches' events
    _check_launch_sites(RunBundle(run.root), profile.entries)


def test_an_executable_op_lists_the_time_of_each_launch_site(tmp_path: Path) -> None:
    bundle = _copy("twice", tmp_path)
    entries = CORRELATOR.correlate(bundle, "flow", CorrelationOptions()).opprofile.entries
    matmul = next(e for e in entries if e.op_name == "linalg.matmul")
    sites = [int(ns) for ns in re.findall(r" (\d+) ns", matmul.data.source.split("launched at")[1])]
    assert sites == _site_times(bundle)[matmul.data.kernels[0]]
    assert matmul.data.total_ns <= sum(sites)


def test_an_op_sharing_its_dispatch_only_with_unstamped_work_is_marked_estimated(
    tmp_path: Path,
) -> None:
    # GIVEN the MLP's conv dispatch whose bias add and ReLU lost their origin stamps
    bundle = _copy("mlp", tmp_path)
    for name in ("flow.mlir", "dispatch-creation.mlir"):
        path = bundle.root / "ir" / name
        text = path.read_text()
        for origin in ("4", "5", "32"):  # the add, the relu call and its max
            text = text.replace(f'"irprof.origin=stablehlo#{origin}"', '"unstamped"')
        path.write_text(text)
    # WHEN the source level is correlated
    entries = CORRELATOR.correlate(bundle, "stablehlo", CorrelationOptions()).opprofile.entries
    # THEN the conv holds an estimated share of its dispatch, not a measurement
    conv = next(e for e in entries if e.op_name == "stablehlo.convolution")
    assert conv.data.estimated and conv.data.share_basis == "flops"
    assert conv.data.total_ns < conv.data.group_total_ns


def _declaration_count(bundle: RunBundle) -> int:
    """Executables, their exports and the ops of the exports' workgroup-count regions."""
    found = 0
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(bundle.ir_path("flow").read_text())

        def visit(op: ir.Operation) -> ir.WalkResult:
            nonlocal found
            found += _declares(op.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return found


def test_flow_coverage_counts_only_ops_that_can_run(tmp_path: Path) -> None:
    # GIVEN the MLP's flow IR: 5 executables, each with its export and workgroup count
    bundle = _copy("mlp", tmp_path)
    declarations = _declaration_count(bundle)
    assert declarations == 15
    # WHEN its flow level is correlated
    coverage = CORRELATOR.correlate(bundle, "flow", CorrelationOptions()).coverage
    # THEN declarations are not ops left unmatched: they cannot run
    assert coverage.ops_not_executed >= declarations
    for op in coverage.unmatched_ops:
        if _declares(op.op_name):
            assert "declaration" in op.reason
    # Left: one host-side `flow.tensor.splat`, real work the HAL profile does not time.
    assert coverage.ops_nontrivial - coverage.ops_nontrivial_annotated == 1


@pytest.fixture(scope="module")
def flax_iree(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The Flax encoder captured with `--backend iree` and annotated at both levels."""
    out = tmp_path_factory.mktemp("flax") / "run"
    capture_jax(FLAX, out, JaxCaptureOptions(backend="iree", steps=STEPS, warmup=1))
    run = open_run(out)
    run.annotate("stablehlo")
    run.annotate("flow")
    return RunBundle(out)


@pytest.mark.slow
def test_flax_encoder_on_iree_counts_each_dispatch_once(flax_iree: RunBundle) -> None:
    run = open_run(flax_iree.root)
    for level in ("stablehlo", "flow"):
        profile = run.profile(level)
        profiled = profile.totals["profiled_ns"]
        assert _counted(profile.entries) <= profiled, level
        assert run.top(level, limit=None).total_ns <= profiled, level
        coverage = orjson.loads((flax_iree.root / "coverage.json").read_bytes())["levels"][level]
        assert coverage["attributed_ns"] >= 0.99 * coverage["profiled_ns"] > 0, level
    _check_launch_sites(flax_iree, run.profile("flow").entries)
    flow = orjson.loads((flax_iree.root / "coverage.json").read_bytes())["levels"]["flow"]
    assert flow["ops_nontrivial_annotated"] == flow["ops_nontrivial"]


@pytest.mark.slow
def test_flax_encoder_on_iree_marks_every_estimated_share(flax_iree: RunBundle) -> None:
    run = open_run(flax_iree.root)
    for level in ("stablehlo", "flow"):
        for entry in run.profile(level).entries:
            if entry.data.group_size > 1 or "absorbed" in entry.data.source:
                assert entry.data.share_basis == "flops", (level, entry.key.name)
    # The softmax IREE raised into one op: its source ops share one dispatch, each marked.
    softmax = [
        e
        for e in run.profile("stablehlo").entries
        if any("softmax" in kernel for kernel in e.data.kernels)
    ]
    assert {"exp", "sub", "div"} <= {e.key.name.rsplit("/", 1)[-1] for e in softmax if e.key.name}
    assert all(e.data.estimated for e in softmax)


@pytest.mark.slow
def test_flax_blocks_get_their_own_launches(flax_iree: RunBundle) -> None:
    # GIVEN two blocks running the same code: IREE compiled one executable per layer kind,
    # named after block 0, and launches it once per block
    entries = {
        e.key.name: e
        for e in open_run(flax_iree.root).profile("stablehlo").entries
        if e.key.name and e.op_name == "stablehlo.dot_general" and not e.data.estimated
    }
    pairs = [(n, n.replace("/block0/", "/block1/")) for n in entries if "/block0/" in n]
    assert len(pairs) >= 4  # query, key, value, scores: each a dispatch of its own
    sites = _own_launch_times(flax_iree)
    for first, second in pairs:
        one, two = entries[first].data, entries[second].data
        # THEN both blocks' matmuls ran the same executable, once per profiled run each
        assert one.kernels == two.kernels and len(one.kernels) == 1
        assert one.count == two.count == STEPS
        # and each holds exactly the events of its own launch site (the site located at it):
        # block 1 does not get block 0's launches nor the reverse. (Their times differ as
        # measured: on this CPU the first launch of a small batch matmul ran ~5x faster.)
        for name, data in ((first, one), (second, two)):
            own = [
                ns for key, where, ns in sites if key == data.kernels[0] and f'"{name}"' in where
            ]
            assert own == [data.total_ns], name


@pytest.mark.slow
def test_flax_iree_bundle_has_no_machine_paths(flax_iree: RunBundle) -> None:
    for path in [*flax_iree.root.glob("ir/*.mlir"), *flax_iree.root.glob("opprofile.*.json")]:
        text = path.read_text()
        assert "site-packages" not in text and not ABSOLUTE_SOURCE.search(text), path
    assert "<sys.path>/flax/linen/" in flax_iree.ir_path("stablehlo").read_text()


def test_rows_of_a_shared_executable_name_the_dispatch_and_its_call_sites(tmp_path: Path) -> None:
    """GIVEN two identical layers (one executable, two `flow.dispatch` sites) WHEN the flow
    level is ranked THEN the executable's rows are named through the dispatch and its number of
    sites (counted here from the flow IR's text), not as the first layer's op alone, which
    holds neither layer's time by itself."""
    run = open_run(_copy("twice", tmp_path).root)
    text = (run.root / "ir" / "flow.mlir").read_text()
    sites: dict[str, int] = defaultdict(int)
    for key in re.findall(r"flow\.dispatch @[\w$.-]+::@([\w$.-]+)", text):
        sites[key] += 1
    shared = {key: count for key, count in sites.items() if count > 1}
    assert shared, "the fixture launches one executable from two sites"
    run.annotate("flow")
    table = run.top("flow", limit=None)
    loaded = load_annotated_level(RunBundle(run.root), "flow").profiled
    for row in table.rows:
        op = loaded.ops[row.op_index]
        if op.function in shared:
            assert f"{op.function}/" in row.key and f"({shared[op.function]} call sites)" in row.key
        else:
            assert "call sites" not in row.key
    assert any(loaded.ops[row.op_index].function in shared for row in table.rows)

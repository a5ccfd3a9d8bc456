"""The JAX correlator on the shipped run bundles (real XLA:CPU captures; fixtures/jax/README)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions, CorrelationResult
from irprof.frameworks.jax.correlate import CORRELATOR, correlate_program, load_program
from irprof.frameworks.jax.hlo import decode_hlo_proto, parse_hlo_text
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module
from irprof.mlir.op_index import OpIndex, derive_op_keys
from irprof.mlir.profile_attrs import get_profile
from irprof.readers import read_trace

FIXTURES = Path(__file__).parents[2] / "fixtures" / "jax"


def bundle_copy(tmp_path: Path, name: str) -> RunBundle:
    """A writable copy of a fixture bundle."""
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return RunBundle(target)


def correlate(name: str, rule: str = "default") -> CorrelationResult:
    """Correlate a fixture bundle in place (correlation writes nothing)."""
    return CORRELATOR.correlate(RunBundle(FIXTURES / name), "stablehlo", CorrelationOptions(rule))


@pytest.mark.parametrize("name", ["mlp_run", "transformer_run", "mlp_train_run"])
def test_hlo_proto_from_trace_and_hlo_text_agree(name: str) -> None:
    """GIVEN the XSpace's HloProto and ir/hlo.txt of one program THEN the same instructions,
    op names, source chains, FLOPs and called computations come out of both."""
    bundle = RunBundle(FIXTURES / name)
    trace = read_trace(bundle.trace_paths()[0])
    module_name = bundle.manifest().options["hlo_module"]
    (program,) = [p for p in trace.hlo_programs if p.name == module_name]
    from_proto = decode_hlo_proto(program.proto)
    from_text = parse_hlo_text((bundle.root / "ir" / "hlo.txt").read_text())
    assert from_proto.name == from_text.name == module_name
    assert from_proto.instructions.keys() == from_text.instructions.keys()
    for instruction, decoded in from_proto.instructions.items():
        parsed = from_text.instructions[instruction]
        assert (parsed.opcode, parsed.op_name, parsed.chain, parsed.called, parsed.operands) == (
            decoded.opcode,
            decoded.op_name,
            decoded.chain,
            decoded.called,
            decoded.operands,
        )
        assert parsed.flops == decoded.flops
    assert any(len(i.chain) > 1 for i in from_proto.instructions.values())


def test_mlp_coverage_meets_the_targets() -> None:
    """GIVEN the conv+MLP+softmax capture THEN >= 95% of thunk time and >= 90% of non-trivial
    ops are attributed, and the ops XLA removed are reported, not counted as misses."""
    coverage = correlate("mlp_run").coverage
    assert coverage.profiled_ns > 0
    assert coverage.time_coverage >= 0.95
    assert coverage.nontrivial_coverage >= 0.90
    # Not counted as misses: ops XLA removed, and a reduce body's ops, whose time is the
    # reduce's (they run in its kernel; the reduce's profile holds their share).
    removed = [
        o
        for o in coverage.unmatched_ops
        if o.reason.startswith("removed by XLA") or o.reason.startswith("in a region")
    ]
    assert len(removed) == coverage.ops_not_executed > 0
    assert coverage.nontrivial_coverage_with_removed < coverage.nontrivial_coverage


def test_transformer_time_coverage_meets_the_target() -> None:
    """GIVEN the transformer block capture THEN >= 95% of thunk time is attributed."""
    coverage = correlate("transformer_run").coverage
    assert coverage.time_coverage >= 0.95


@pytest.mark.parametrize("name", ["mlp_run", "transformer_run"])
def test_kernels_are_exact_trace_event_names(name: str) -> None:
    """GIVEN any annotated op THEN every name in `kernels` is an event name of the trace."""
    result = correlate(name)
    trace = read_trace(RunBundle(FIXTURES / name).trace_paths()[0])
    names = set(trace.names())
    kernels = {k for e in result.opprofile.entries for k in e.data.kernels}
    assert kernels and kernels <= names


def test_private_dense_called_twice_is_one_op_per_function_with_its_own_thunks() -> None:
    """GIVEN `dense` lowered to two private functions whose dot_general ops share name and
    source THEN each gets a different thunk, the big layer (6272x128) the larger time."""
    entries = [
        e
        for e in correlate("mlp_run").opprofile.entries
        if e.op_name == "stablehlo.dot_general" and e.key.name == "dot_general"
    ]
    assert all(e.key.ordinal is not None for e in entries)
    assert sorted(e.key.ordinal or 0 for e in entries) == [0, 1]
    first, second = sorted(entries, key=lambda e: e.key.ordinal or 0)
    assert not set(first.data.kernels) & set(second.data.kernels)
    assert first.data.total_ns > second.data.total_ns


def test_layer_norm_called_twice_gets_time_from_both_call_sites() -> None:
    """GIVEN `layer_norm`, one private function called from two lines THEN its ops get events
    from both inlined copies and each func.call gets its own inclusive time."""
    entries = correlate("transformer_run").opprofile.entries
    calls = [e for e in entries if e.op_name == "func.call" and "layer_norm" in (e.key.name or "")]
    assert len({e.key.source for e in calls}) == 2
    assert all(e.data.total_ns > 0 for e in calls)
    (rsqrt,) = [e for e in entries if e.key.name == "rsqrt"]
    assert len(rsqrt.data.kernels) == 2  # one fusion per inlined copy
    # Each call site reaches at least its own copy (XLA may share a CSE'd constant across both).
    reached = [set(call.data.kernels) & set(rsqrt.data.kernels) for call in calls]
    assert all(reached) and set.union(*reached) == set(rsqrt.data.kernels)


def test_even_rule_changes_shares_but_not_coverage() -> None:
    """GIVEN the even fused-time rule THEN the same ops and time are covered."""
    flops, even = correlate("mlp_run"), correlate("mlp_run", "even")
    assert flops.coverage.attributed_ns == even.coverage.attributed_ns
    assert len(flops.opprofile.entries) == len(even.opprofile.entries)
    assert flops.opprofile.totals["fused_time_rule"] == "flops"
    assert even.opprofile.totals["fused_time_rule"] == "even"


def test_hlo_text_fallback_gives_the_same_correlation() -> None:
    """GIVEN a trace without HloProtos THEN ir/hlo.txt is used, with a warning, same result."""
    bundle = RunBundle(FIXTURES / "mlp_run")
    trace_path = bundle.trace_paths()[0]
    trace = read_trace(trace_path)
    bare = dataclasses.replace(trace, hlo_programs=())
    module_name = bundle.manifest().options["hlo_module"]
    program, warnings = load_program(bare, module_name, bundle, trace_path)
    assert warnings and "hlo.txt" in warnings[0]
    module = load_module(bundle.ir_path("stablehlo"), make_context())
    fallback = correlate_program(module, bare, program, module_name)
    normal = correlate("mlp_run")
    assert fallback.coverage.attributed_ns == normal.coverage.attributed_ns
    assert [e.key for e in fallback.opprofile.entries] == [e.key for e in normal.opprofile.entries]


@pytest.mark.parametrize("name", ["mlp_run", "transformer_run"])
def test_chrome_json_export_correlates_through_hlo_text(name: str) -> None:
    """GIVEN the profiler's perfetto JSON (no HloProtos, no program ids) THEN ir/hlo.txt is used
    and the same ops are annotated as from the XPlane of the same run."""
    bundle = RunBundle(FIXTURES / name)
    json_path = next(p for p in bundle.trace_paths() if p.name.endswith(".json.gz"))
    trace = read_trace(json_path)
    module_name = bundle.manifest().options["hlo_module"]
    program, warnings = load_program(trace, module_name, bundle, json_path)
    assert "hlo.txt" in warnings[0]
    module = load_module(bundle.ir_path("stablehlo"), make_context())
    from_json = correlate_program(module, trace, program, module_name)
    assert from_json.coverage.time_coverage >= 0.95
    assert {e.key for e in from_json.opprofile.entries} == {
        e.key for e in correlate(name).opprofile.entries
    }


def test_annotate_writes_stablehlo_that_reparses_with_profiles(tmp_path: Path) -> None:
    """GIVEN `irprof annotate` on the bundle THEN annotated/stablehlo.mlir parses with the
    bindings and its dot_general ops carry an irprof.profile with positive time."""
    bundle = bundle_copy(tmp_path, "mlp_run")
    outcome = annotate_bundle(bundle)
    assert outcome.entries_unmatched == 0
    module = load_module(bundle.annotated_path("stablehlo"), make_context())
    profiles = {}
    for op, key in derive_op_keys(module):
        data = get_profile(op)
        if data is not None:
            profiles[(op.name, key.name, key.ordinal)] = data
    dots = [d for (op, _, _), d in profiles.items() if op == "stablehlo.dot_general"]
    assert len(dots) == 2 and all(d.total_ns > 0 for d in dots)
    assert bundle.opprofile_level_path("stablehlo").is_file() and bundle.coverage_path.is_file()


@pytest.mark.parametrize("name", ["mlp_run", "transformer_run"])
def test_every_entry_key_designates_exactly_one_op(name: str) -> None:
    """GIVEN the opprofile THEN each entry's key matches one op of the StableHLO, no more."""
    result = correlate(name)
    index = OpIndex.of_module(
        load_module(RunBundle(FIXTURES / name).ir_path("stablehlo"), make_context())
    )
    assert [len(index.match_positions(e.key)) for e in result.opprofile.entries] == [1] * len(
        result.opprofile.entries
    )


def test_annotate_cli_reports_coverage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GIVEN `irprof annotate RUN` THEN exit 0 and the coverage is printed."""
    from irprof.cli.main import main

    bundle = bundle_copy(tmp_path, "transformer_run")
    assert main(["annotate", str(bundle.root)]) == 0
    printed = capsys.readouterr()
    assert "time coverage" in printed.out + printed.err
    assert bundle.annotated_path("stablehlo").is_file()

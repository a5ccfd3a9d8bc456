"""Mixed pipelines: parsing, irprof passes between native ones, errors, debugging options."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from iree.compiler import passmanager

from irprof.errors import PipelineError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, print_module
from irprof.mlir.op_index import derive_op_infos, walk_ops
from irprof.mlir.profile_attrs import get_profile, get_summary
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.passes.base import add_to_pass_manager
from irprof.passes.pipeline import IrprofStep, NativeStep, RunOptions, parse_pipeline, run_pipeline
from irprof.passes.registry import get_all_passes
from irprof.passes.stamp_origin import StampOriginPass
from irprof.registry import Registry

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"


def _profile(path: Path, level: str, keys: list[OpKey]) -> Path:
    entries = tuple(
        OpProfileEntry(key, ProfileData.from_durations([100 * (i + 1)], i, 1000))
        for i, key in enumerate(keys)
    )
    OpProfile(level=level, framework="test", entries=entries, totals={"profiled_ns": 1000}).save(
        path
    )
    return path


def test_pipeline_splits_into_native_runs_and_irprof_steps() -> None:
    steps = parse_pipeline(
        "builtin.module(irprof-stamp-origin{level=a}, canonicalize, func.func(cse,canonicalize),"
        " irprof-strip)",
        make_context(),
    )
    assert [type(s) for s in steps] == [IrprofStep, NativeStep, IrprofStep]
    assert steps[1].label == "canonicalize,func.func(cse,canonicalize)"
    first = steps[0]
    assert isinstance(first, IrprofStep) and first.module_pass == StampOriginPass(level="a")
    with pytest.raises(FrozenInstanceError):
        first.module_pass.level = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("builtin.module(irprof-anotate{profile=p})", "did you mean irprof-annotate"),
        ("builtin.module(canonicalise)", "did you mean canonicalize"),
        ("builtin.module(irprof-annotate{profile=p attr=xml})", "'attr=xml' is invalid"),
        ("builtin.module(irprof-annotate)", "missing required option(s) profile"),
        ("builtin.module(irprof-stamp-origin{lvl=x})", "unknown option 'lvl'"),
        ("builtin.module(irprof-stamp-origin{level})", "not key=value"),
        ("builtin.module(func.func(irprof-strip))", "nested in 'func.func(...)'"),
        ("builtin.module(cse", "expected builtin.module(pass, ...)"),
        ("builtin.module(func.func(cse)", "unbalanced"),
        ("builtin.module(cse,,canonicalize)", "empty pass element"),
        ("", "empty pass pipeline"),
    ],
)
def test_bad_pipelines_name_the_problem(pipeline: str, message: str) -> None:
    with pytest.raises(PipelineError) as caught:
        parse_pipeline(pipeline, make_context())
    assert message in str(caught.value)


def test_irprof_and_native_passes_run_in_order(tmp_path: Path) -> None:
    """Stamp, inline+canonicalize natively, then annotate by the stamped origins."""
    module = load_module(FIXTURES / "jax.stablehlo.mlir", make_context())
    stamped_dots = [i.key for i in derive_op_infos(module) if i.op_name == "stablehlo.dot_general"]
    profile = _profile(tmp_path / "p.json", "shlo", [OpKey(origin=f"shlo#{n}") for n in (1, 3, 9)])
    run_pipeline(
        module,
        f"builtin.module(irprof-stamp-origin{{level=shlo}}, inline, canonicalize, "
        f"func.func(cse), irprof-annotate{{profile={profile}}})",
        RunOptions(verify_each=True),
    )
    assert stamped_dots and all(k.origin is None for k in stamped_dots)
    by_origin = {i.key.origin: i for i in derive_op_infos(module)}
    assert by_origin["shlo#1"].op_name == "stablehlo.dot_general"
    assert get_profile(by_origin["shlo#1"].op).total_ns == 100  # type: ignore[union-attr]
    # The maximum of the inlined private function keeps its own origin (#9).
    assert by_origin["shlo#9"].op_name == "stablehlo.maximum"
    assert get_profile(by_origin["shlo#9"].op).total_ns == 300  # type: ignore[union-attr]
    summary = get_summary(module)
    assert summary is not None and summary["ops_annotated"] == 3


def test_print_ir_after_all_writes_one_file_per_pass(tmp_path: Path) -> None:
    module = load_module(FIXTURES / "torch.fx.mlir", make_context())
    dumps = tmp_path / "dumps"
    run_pipeline(
        module,
        "builtin.module(irprof-stamp-origin{level=t}, canonicalize, cse)",
        RunOptions(print_ir_after_all=dumps),
    )
    names = sorted(p.name for p in dumps.iterdir())
    assert names == ["00-irprof-stamp-origin.mlir", "01-canonicalize.mlir", "02-cse.mlir"]
    assert "irprof.origin=t#" in (dumps / names[0]).read_text()


def test_stamp_origin_is_idempotent_per_level() -> None:
    module = load_module(FIXTURES / "torch.fx.mlir", make_context())
    run_pipeline(module, "builtin.module(irprof-stamp-origin{level=t})")
    once = print_module(module)
    run_pipeline(module, "builtin.module(irprof-stamp-origin{level=t})")
    assert print_module(module) == once
    run_pipeline(module, "builtin.module(irprof-stamp-origin{level=u})")
    origins = [i.keys.origins for i in derive_op_infos(module)]
    assert origins[3] == ("u#3", "t#3")


def test_passes_also_run_inside_a_bindings_pass_manager() -> None:
    context = make_context()
    module = load_module(FIXTURES / "jax.stablehlo.mlir", context)
    pm = passmanager.PassManager.parse("builtin.module(canonicalize)", context)
    add_to_pass_manager(pm, StampOriginPass(level="pm"))
    pm.run(module.operation)
    assert all(str(op.location).startswith('loc("irprof.origin=pm#') for op in walk_ops(module))


def test_registry_lists_core_passes_and_rejects_duplicates() -> None:
    names = get_all_passes().names()
    for name in (
        "irprof-annotate",
        "irprof-strip",
        "irprof-stamp-origin",
        "irprof-copy-loc-to-body",
        "irprof-reattach",
    ):
        assert name in names
    registry: Registry[object] = Registry("pass")
    registry.register("x", "irprof.passes.strip:StripPass")
    with pytest.raises(ValueError, match="duplicate"):
        registry.register("x", "irprof.passes.annotate:AnnotatePass")


def test_annotate_ignores_an_entry_without_key_fields(tmp_path: Path) -> None:
    module = load_module(FIXTURES / "torch.fx.mlir", make_context())
    profile = _profile(tmp_path / "p.json", "torch", [OpKey(), OpKey(name="nope")])
    run_pipeline(module, f"builtin.module(irprof-annotate{{profile={profile}}})")
    assert not any(get_profile(op) for op in walk_ops(module))
    summary = get_summary(module)
    assert summary is not None and summary["entries_unmatched"] == 2

"""Ops of functions reached through `func.call` (JAX private functions) are named and placed
through their call sites: on the shipped JAX bundles, and on small modules parsed in code."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from iree.compiler import ir

from irprof.analyses.annotated_level import AnnotatedLevel, load_annotated_level, model_script
from irprof.analyses.hotspots import hotspots
from irprof.analyses.profiled_ops import ProfiledModule, profiled_ops_of
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.mlir.context import make_context
from irprof.renderers.hotspot_table import editor_location

JAX_FIXTURES = Path(__file__).parents[1] / "fixtures" / "jax"
FILE_LINE = re.compile(r"\.py:\d+:\d+$")


@pytest.fixture(scope="module")
def jax_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[RunBundle, AnnotatedLevel]]:
    """The shipped MLP and transformer bundles, copied and annotated (the fixtures stay as is)."""
    runs: dict[str, tuple[RunBundle, AnnotatedLevel]] = {}
    for name in ("mlp_run", "transformer_run"):
        root = tmp_path_factory.mktemp("jax") / name
        shutil.copytree(JAX_FIXTURES / name, root)
        bundle = RunBundle(root)
        annotate_bundle(bundle)
        runs[name] = (bundle, load_annotated_level(bundle))
    return runs


def _calls_to(profiled: ProfiledModule, callee: str) -> list[str]:
    """User frames of the call ops that call `callee`, in walk order."""
    return [op.user_source for op in profiled.ops if op.callee == callee]


def test_mlp_rows_name_no_bare_primitive_and_place_every_op_in_the_script(
    jax_runs: dict[str, tuple[RunBundle, AnnotatedLevel]],
) -> None:
    bundle, loaded = jax_runs["mlp_run"]
    script = model_script(bundle, bundle.manifest())
    table = hotspots(loaded.profiled.ops)
    assert table.rows
    for row in table.rows:
        assert "/" in row.key, f"bare primitive row name {row.key!r}"
        assert FILE_LINE.search(row.location), f"{row.key}: location {row.location!r}"
        where = editor_location(loaded.profiled, row.op_index, script)
        assert where.startswith(f"{script}:"), f"{row.key}: editor location {where!r}"


def test_mlp_relu_max_is_named_and_placed_by_its_call(
    jax_runs: dict[str, tuple[RunBundle, AnnotatedLevel]],
) -> None:
    _, loaded = jax_runs["mlp_run"]
    profiled = loaded.profiled
    rows = {row.op_index: row for row in hotspots(profiled.ops, expand_groups=True).rows}
    for function in ("relu", "relu_0"):
        (call,) = [op for op in profiled.ops if op.callee == function]
        (maximum,) = [
            op
            for op in profiled.ops
            if op.function == function and op.op_name == "stablehlo.maximum"
        ]
        assert maximum.runtime_name == "max"  # the IR keeps its callee-local name
        row = rows[maximum.index]
        assert row.key == f"{call.runtime_name}/max" == "jit(mlp)/jit(relu)/max"
        assert row.location == call.user_source
    # The two relu calls are different lines of the model: the rows say which one.
    assert len({rows[i].location for i in rows if rows[i].key.endswith("relu)/max")}) == 2


def test_function_called_twice_says_so_and_points_at_the_first_call(
    jax_runs: dict[str, tuple[RunBundle, AnnotatedLevel]],
) -> None:
    _, loaded = jax_runs["transformer_run"]
    profiled = loaded.profiled
    first_call, second_call = _calls_to(profiled, "layer_norm")
    assert first_call != second_call
    layer_norm_rows = [
        row
        for row in hotspots(profiled.ops, expand_groups=True).rows
        if profiled.ops[row.op_index].function == "layer_norm"
    ]
    assert layer_norm_rows
    for row in layer_norm_rows:
        # (the mean's and the variance's reductions share that name: their kernels follow)
        assert re.fullmatch(r".*jit\(layer_norm\)/\w+ \(2 call sites\)( \[.+\])?", row.key), row.key
        assert row.location == first_call


@pytest.mark.parametrize("name", ["mlp_run", "transformer_run"])
def test_call_naming_neither_adds_nor_drops_time(
    name: str, jax_runs: dict[str, tuple[RunBundle, AnnotatedLevel]]
) -> None:
    _, loaded = jax_runs[name]
    ops = loaded.profiled.ops
    table = hotspots(ops)
    assert table.total_ns == sum(op.total_ns for op in ops if not op.inclusive)
    assert table.total_ns == sum(row.total_ns for row in table.rows)
    assert not any(row.op_name == "func.call" for row in table.rows)
    by_scope = {row.key: row.total_ns for row in hotspots(ops, by="scope").rows}
    assert sum(by_scope.values()) == table.total_ns


def test_top_prints_the_call_qualified_names(
    jax_runs: dict[str, tuple[RunBundle, AnnotatedLevel]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bundle, _ = jax_runs["mlp_run"]
    monkeypatch.setenv("COLUMNS", "200")  # names fold at narrower widths
    assert main(["top", str(bundle.root), "-n", "30", "--expand-groups"]) == 0
    out = capsys.readouterr().out
    assert "jit(mlp)/jit(relu)/max" in out
    assert "'max'" not in out


def _module(text: str) -> ProfiledModule:
    context = make_context()
    with context:
        return profiled_ops_of(ir.Module.parse(text))


NESTED = """
module {
  func.func @main(%x: f32) -> f32 {
    %0 = func.call @outer(%x) : (f32) -> f32 loc(#outer_call)
    return %0 : f32
  }
  func.func private @outer(%x: f32) -> f32 {
    %0 = func.call @inner(%x) : (f32) -> f32 loc("jit(inner)")
    return %0 : f32
  }
  func.func private @inner(%x: f32) -> f32 {
    %0 = arith.maximumf %x, %x : f32 loc("max")
    %1 = arith.addf %0, %0 : f32 loc("inner_fn/add@some_tf_function")
    return %1 : f32
  }
}
#outer_call = loc("jit(f)/jit(outer)"("model.py":7:3))
"""


def test_nested_private_functions_chain_up_to_the_outermost_named_call() -> None:
    ops = {op.op_name: op for op in _module(NESTED).ops if op.function == "inner"}
    maximum = ops["arith.maximumf"]
    assert maximum.qualified_name == "jit(f)/jit(outer)/jit(inner)/max"
    assert maximum.site_source == "model.py:7:3"
    assert maximum.scope == "jit(f)/jit(outer)/jit(inner)"
    assert maximum.runtime_name == "max"  # what the IR says is untouched
    # A name that already says where it is (TF node@function) keeps its name and place.
    named = ops["arith.addf"]
    assert named.qualified_name == "inner_fn/add@some_tf_function"
    assert named.call_sites == 0
    assert named.site_chain == named.chain


UNNAMED_CALL = """
module {
  func.func @main(%x: f32) -> f32 {
    %0 = func.call @uniform(%x) : (f32) -> f32 loc(#uniform_call)
    return %0 : f32
  }
  func.func private @uniform(%x: f32) -> f32 {
    %0 = func.call @threefry(%x) : (f32) -> f32 loc("")
    return %0 : f32
  }
  func.func private @threefry(%x: f32) -> f32 {
    %0 = arith.negf %x : f32 loc("while")
    return %0 : f32
  }
}
#uniform_call = loc("jit(f)/Dropout_0/jit(_uniform)"("model.py":9:4))
"""


SHARED_PATH = """
module {
  func.func @main(%x: f32) -> f32 {
    %0 = func.call @uniform(%x) : (f32) -> f32 loc(#dropout0)
    %1 = func.call @uniform(%0) : (f32) -> f32 loc(#dropout1)
    %2 = func.call @uniform(%1) : (f32) -> f32 loc(#dropout2)
    return %2 : f32
  }
  func.func private @uniform(%x: f32) -> f32 {
    %0 = func.call @threefry(%x) : (f32) -> f32 loc("")
    %1 = func.call @threefry(%0) : (f32) -> f32 loc("")
    return %1 : f32
  }
  func.func private @threefry(%x: f32) -> f32 {
    %0 = arith.negf %x : f32 loc("while")
    return %0 : f32
  }
}
#dropout0 = loc("jit(f)/Dropout_0/jit(_uniform)"("model.py":9:4))
#dropout1 = loc("jit(f)/Dropout_1/jit(_uniform)"("model.py":10:4))
#dropout2 = loc("jit(f)/Dropout_2/jit(_uniform)"("model.py":11:4))
"""


def test_call_sites_count_every_path_through_the_callers() -> None:
    """GIVEN `@threefry` called twice by `@uniform`, which main calls three times THEN its op
    runs on 2 x 3 = 6 paths, and its row says so (its time is all of theirs)."""
    (loop,) = [op for op in _module(SHARED_PATH).ops if op.op_name == "arith.negf"]
    assert loop.call_sites == 6
    assert loop.qualified_name == "jit(_uniform)/while (6 call sites)"
    assert loop.site_source == "model.py:9:4"


def test_a_call_at_an_empty_location_adds_no_scope() -> None:
    """GIVEN `jax.random`'s shape, `@_uniform` calling `@threefry2x32` at `loc("")` THEN the loop
    is named as XLA names it, through the named call only, and placed at that call's line."""
    (loop,) = [op for op in _module(UNNAMED_CALL).ops if op.op_name == "arith.negf"]
    assert loop.qualified_name == "jit(f)/Dropout_0/jit(_uniform)/while"
    assert loop.site_source == "model.py:9:4"


RECURSIVE = """
module {
  func.func @main(%x: f32) -> f32 {
    %0 = func.call @loop(%x) : (f32) -> f32 loc("jit(f)/jit(loop)"("model.py":3:1))
    return %0 : f32
  }
  func.func private @loop(%x: f32) -> f32 {
    %0 = func.call @loop(%x) : (f32) -> f32 loc("jit(loop)")
    %1 = arith.negf %0 : f32 loc("neg")
    return %1 : f32
  }
}
"""


def test_recursive_calls_terminate_and_count_every_call_site() -> None:
    (neg,) = [op for op in _module(RECURSIVE).ops if op.op_name == "arith.negf"]
    assert neg.call_sites == 2
    assert neg.qualified_name.endswith("jit(loop)/neg (2 call sites)")
    assert neg.site_source == "model.py:3:1"

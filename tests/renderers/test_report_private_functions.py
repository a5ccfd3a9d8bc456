"""The report names and places ops of JAX private functions like `irprof top` does, on the
shipped JAX bundles: `jit(mlp)/jit(relu)/max` at the call's line, not a bare `max`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.op_graph import OpGraphOptions
from irprof.analyses.report_data import build_report_data
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.renderers.report_html import report_payload

JAX_FIXTURES = Path(__file__).parents[1] / "fixtures" / "jax"
BARE = re.compile(r"^[\w.]+$")  # a name with no scope: what the private function's IR says


def annotated_jax_copy(tmp_path_factory: pytest.TempPathFactory, name: str) -> RunBundle:
    """A copy of the shipped JAX bundle `name`, annotated (the fixture itself stays as is)."""
    root = tmp_path_factory.mktemp("jax") / name
    shutil.copytree(JAX_FIXTURES / name, root)
    bundle = RunBundle(root)
    annotate_bundle(bundle)
    return bundle


@pytest.fixture(scope="module")
def mlp_level(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The MLP report's payload for its one annotated level."""
    payload = report_payload(build_report_data(annotated_jax_copy(tmp_path_factory, "mlp_run")))
    (level,) = payload["levels"]
    return dict(level)


def _relu_max_ops(level: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        op
        for op in level["ops"].values()
        if op["function"].startswith("relu") and op["op_name"] == "stablehlo.maximum"
    ]


def test_hotspot_rows_carry_call_qualified_names(mlp_level: dict[str, Any]) -> None:
    keys = [row["key"] for row in mlp_level["by_op_expanded"]["rows"]]
    assert any(key.startswith("jit(mlp)/jit(relu)/max") for key in keys), keys
    assert not [key for key in keys if BARE.match(key.split("#")[0])], keys
    # Collapsed, the relu max is a member of an XLA fusion row named after its hottest op.
    grouped = [row for row in mlp_level["by_op"]["rows"] if row["group"]]
    assert grouped and all(" +" in row["key"] or row["estimated_ns"] for row in grouped)
    assert not [r["key"] for r in mlp_level["by_op"]["rows"] if BARE.match(r["key"].split("#")[0])]


def test_op_details_name_the_call_and_keep_the_ir_name(mlp_level: dict[str, Any]) -> None:
    maxima = _relu_max_ops(mlp_level)
    assert len(maxima) == 2  # relu is called twice, as two private functions
    for op in maxima:
        assert op["name"] == "jit(mlp)/jit(relu)/max"
        assert op["runtime_name"] == "max"
        assert op["call_sites"] == 1
        assert re.search(r"jax_mlp\.py:\d+:\d+$", op["call_site"]), op
        assert op["source"] == op["call_site"]
    # Each relu call is its own line of the model: the panel says which one.
    assert len({op["call_site"] for op in maxima}) == 2
    # Every op shown is named, and none by a bare primitive.
    for op in mlp_level["ops"].values():
        if op["runtime_name"]:
            assert not BARE.match(op["name"]), op


def test_ops_of_the_traced_function_keep_their_own_names(mlp_level: dict[str, Any]) -> None:
    main_ops = [op for op in mlp_level["ops"].values() if op["function"] == "main"]
    assert main_ops
    for op in main_ops:
        assert op["call_site"] == ""
        assert op["name"] == op["runtime_name"]


def test_embedded_graph_names_private_ops_through_their_call(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    bundle = annotated_jax_copy(tmp_path_factory, "mlp_run")
    data = build_report_data(bundle, graph_options=OpGraphOptions(function="relu"))
    (level,) = report_payload(data)["levels"]
    nodes = [n for n in level["graph"]["nodes"].values() if n["detail"] == "stablehlo.maximum"]
    assert [n["title"] for n in nodes] == ["jit(mlp)/jit(relu)/max"]
    assert nodes[0]["runtime_name"] == "max"
    assert re.search(r"jax_mlp\.py:\d+:\d+$", nodes[0]["location"]), nodes[0]


def test_transformer_function_called_twice_says_so(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    payload = report_payload(
        build_report_data(annotated_jax_copy(tmp_path_factory, "transformer_run"))
    )
    (level,) = payload["levels"]
    layer_norm = [op for op in level["ops"].values() if op["function"] == "layer_norm"]
    assert layer_norm
    for op in layer_norm:
        if op["runtime_name"]:
            assert op["name"].endswith(f"jit(layer_norm)/{op['runtime_name']} (2 call sites)")
            assert op["call_sites"] == 2
    unnamed = [row for row in level["unannotated"] if BARE.match(row["name"] or "x/y")]
    assert not unnamed, unnamed


def test_event_dag_starts_are_offsets_from_the_traces_first_event(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from irprof.readers import read_trace

    bundle = annotated_jax_copy(tmp_path_factory, "mlp_run")
    payload = report_payload(build_report_data(bundle))
    starts = [node["ts_ns"] for node in payload["event_dag"]["nodes"].values()]
    trace = read_trace(bundle.primary_trace_path)
    span = int(trace.end_ns.max() - trace.ts_ns.min())
    assert starts and min(starts) >= 0 and max(starts) <= span  # not epoch nanoseconds

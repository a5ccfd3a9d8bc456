"""ORT's node events joined to the imported ONNX ops, checked against sums the tests take from
ORT's own JSON and graphs read with the onnx library (not from the correlator's files)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import onnx
import pytest

from irprof.cli.main import main

# What `examples/onnx_mlp.py` builds for ORT to fuse (its docstring), by ORT kernel:
# the Gemm of MatMul+Add, the Gelu of the erf arithmetic, the LayerNormalization of reductions.
MLP_FUSIONS = {
    "Gemm": {"fc1.matmul", "fc1.bias_add"},
    "Gelu": {"gelu.div", "gelu.erf", "gelu.add", "gelu.mul", "gelu.half"},
    "LayerNormalization": {
        "ln.mean", "ln.sub", "ln.pow", "ln.var", "ln.add_eps", "ln.sqrt", "ln.div", "ln.mul",
        "ln.add",
    },
}  # fmt: skip


def kernel_events(run: Path) -> list[dict[str, Any]]:
    """ORT's `_kernel_time` events of the profiled runs, read as plain JSON."""
    events = json.loads((run / "trace" / "onnxruntime.json").read_text())
    return [e for e in events if e["cat"] == "Node" and e["name"].endswith("_kernel_time")]


def entries(run: Path) -> dict[str, dict[str, Any]]:
    """Node name -> its opprofile row's profile."""
    document = json.loads((run / "opprofile.onnx.json").read_text())
    return {entry["key"]["name"]: entry["profile"] for entry in document["entries"]}


def coverage(run: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((run / "coverage.json").read_text())["levels"]["onnx"]
    return record


@pytest.mark.parametrize("fixture", ["mlp_run", "transformer_run"])
def test_every_node_event_is_profiled_time_and_coverage_is_complete(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    run: Path = request.getfixturevalue(fixture)
    expected_ns = sum(int(event["dur"]) * 1000 for event in kernel_events(run))
    record = coverage(run)
    assert record["profiled_ns"] == expected_ns > 0
    assert record["attributed_ns"] >= 0.99 * expected_ns
    listed = sum(event["total_ns"] for event in record["unmatched_events"])
    assert record["attributed_ns"] + listed == expected_ns
    assert all(event["reason"] for event in record["unmatched_events"])
    assert sum(row["total_ns"] for row in entries(run).values()) == record["attributed_ns"]


def test_fused_kernels_reach_every_source_node(mlp_run: Path) -> None:
    by_kernel: dict[str, int] = defaultdict(int)
    for event in kernel_events(mlp_run):
        by_kernel[event["args"]["op_name"]] += int(event["dur"]) * 1000
    rows = entries(mlp_run)
    for kernel, members in MLP_FUSIONS.items():
        assert members <= set(rows), kernel
        assert sum(rows[name]["total_ns"] for name in members) == by_kernel[kernel], kernel
        for name in members:
            assert rows[name]["group_size"] == len(members)
            assert set(rows[name]["fused_with"]) == members - {name}


def _initializer_dims(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    return {tensor.name: tuple(tensor.dims) for tensor in model.graph.initializer}


def test_a_fused_matmul_and_bias_are_shared_by_operations(mlp_run: Path) -> None:
    """ORT's Gemm of `fc1.matmul` + `fc1.bias_add`: the MatMul does 2K operations per output
    element and the Add one, whatever the (symbolic) batch; by bytes they were half and half."""
    model = onnx.load(str(mlp_run / "ir" / "model.onnx"))
    matmul = next(node for node in model.graph.node if node.name == "fc1.matmul")
    k = _initializer_dims(model)[matmul.input[1]][0]  # the weight is [K, N]
    gemm = [e for e in kernel_events(mlp_run) if e["args"]["op_name"] == "Gemm"]
    gemm_ns = sum(int(event["dur"]) * 1000 for event in gemm)
    rows = entries(mlp_run)
    assert rows["fc1.matmul"]["share_basis"] == rows["fc1.bias_add"]["share_basis"] == "flops"
    expected = gemm_ns * 2 * k / (2 * k + 1)
    assert abs(rows["fc1.matmul"]["total_ns"] - expected) <= len(gemm)  # ns rounded per event
    assert rows["fc1.matmul"]["total_ns"] + rows["fc1.bias_add"]["total_ns"] == gemm_ns


def test_elementwise_members_of_a_fusion_share_evenly(mlp_run: Path) -> None:
    """The GELU's five elementwise nodes each do one operation per element of one tensor."""
    rows = entries(mlp_run)
    shares = [rows[name]["total_ns"] for name in MLP_FUSIONS["Gelu"]]
    events = sum(1 for e in kernel_events(mlp_run) if e["args"]["op_name"] == "Gelu")
    assert max(shares) - min(shares) <= events  # ns rounded per event


def test_nodes_ort_kept_get_their_own_events(mlp_run: Path) -> None:
    per_node: dict[str, int] = defaultdict(int)
    for event in kernel_events(mlp_run):
        per_node[event["name"].removesuffix("_kernel_time")] += int(event["dur"]) * 1000
    rows = entries(mlp_run)
    for name in ("flatten", "fc2.matmul"):
        assert rows[name]["total_ns"] == per_node[name] > 0
        assert "group" not in rows[name]


def _between(model: onnx.ModelProto, start: str, stop: set[str]) -> set[str]:
    """Names of the nodes on def-use paths from tensor `start` up to (not into) `stop`."""
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            consumers[name].append(node)
    found: set[str] = set()
    pending = [start]
    while pending:
        for node in consumers[pending.pop()]:
            if node.name not in found and node.name not in stop:
                found.add(node.name)
                pending.extend(node.output)
    return found


def test_the_exported_gelu_is_one_group_with_its_bias(transformer_run: Path) -> None:
    model = onnx.load(str(transformer_run / "ir" / "model.onnx"))
    optimized = onnx.load(str(transformer_run / "ir" / "onnxruntime.optimized.onnx"))
    fused = [node for node in optimized.graph.node if node.op_type in ("BiasGelu", "Gelu")]
    assert len(fused) == 1  # ORT's fusion of the exporter's erf GELU
    # Source nodes from fc1's MatMul output to fc2's MatMul: the bias Add and the erf GELU.
    fc1 = next(n for n in model.graph.node if n.name == "/fc1/MatMul")
    fc2 = next(n for n in model.graph.node if n.name == "/fc2/MatMul")
    members = _between(model, fc1.output[0], {fc2.name, "/Add_2"})
    members -= {n.name for n in model.graph.node if n.op_type == "Constant"}
    assert len(members) == 6
    expected = sum(
        int(e["dur"]) * 1000 for e in kernel_events(transformer_run)
        if e["name"] == f"{fused[0].name}_kernel_time"
    )  # fmt: skip
    rows = entries(transformer_run)
    assert sum(rows[name]["total_ns"] for name in members) == expected > 0
    assert {rows[name]["group_size"] for name in members} == {len(members)}


def test_folded_and_merged_nodes_are_listed_as_not_run(transformer_run: Path) -> None:
    model = onnx.load(str(transformer_run / "ir" / "model.onnx"))
    optimized = onnx.load(str(transformer_run / "ir" / "onnxruntime.optimized.onnx"))
    kept = {name for node in optimized.graph.node for name in node.output}
    constants = [n.name for n in model.graph.node if n.op_type == "Constant"]
    assert constants and not any(name in kept for name in constants)
    record = coverage(transformer_run)
    assert record["ops_not_executed"] >= len(constants)
    rows = entries(transformer_run)
    assert not set(constants) & set(rows)


def test_fused_conv_at_the_extended_level_reaches_conv_and_relu(tmp_path: Path) -> None:
    run = tmp_path / "run"
    script = Path(__file__).parents[3] / "examples" / "onnx_mlp.py"
    argv = ["capture", "onnx", str(script), "-o", str(run), "--optimization", "extended"]
    assert main([*argv, "--steps", "2", "--warmup", "1"]) == 0
    assert main(["annotate", str(run)]) == 0
    fused = sum(
        int(e["dur"]) * 1000 for e in kernel_events(run) if e["args"]["op_name"] == "FusedConv"
    )
    rows = entries(run)
    assert rows["conv"]["total_ns"] + rows["relu"]["total_ns"] == fused > 0
    assert rows["conv"]["fused_with"] == ["relu"] and rows["conv"]["group_size"] == 2

"""Models from `torch.onnx.export(dynamo=True)`: node names such as `node_linear_1` say nothing
of the model, so each op is located by the module path and Python stack the exporter keeps in
the node's metadata. Expected scopes and lines are read by the test from the fixture's own
metadata and from the source of the script that exported it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import onnx
import pytest

from irprof.cli.main import main
from irprof.frameworks.onnx.runner import import_mlir
from irprof.frameworks.onnx.torch_export import NAME_SCOPES, STACK_TRACE
from irprof.mlir.context import make_context
from irprof.mlir.keys import innermost_source
from irprof.mlir.load import parse_module
from irprof.mlir.locations import from_ir
from irprof.mlir.op_index import derive_op_infos

FIXTURES = Path(__file__).parents[2] / "fixtures" / "onnx"
MODEL = FIXTURES / "torch_export.onnx"
SCRIPT = FIXTURES / "make_torch_export.py"


def _metadata(node: onnx.NodeProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in node.metadata_props}


def _line_of(text: str) -> int:
    """The line of the exporting script that holds `text` (1-based)."""
    lines = SCRIPT.read_text().splitlines()
    found = [number for number, line in enumerate(lines, 1) if text in line]
    assert len(found) == 1, text
    return found[0]


def _located_ops() -> dict[str, tuple[str, str | None]]:
    """NameLoc name -> (op name, innermost source) of every `torch.operator` op."""
    module = parse_module(import_mlir(onnx.load(str(MODEL))), make_context())
    return {
        info.keys.name: (info.op_name, innermost_source(from_ir(info.op.location)))
        for info in derive_op_infos(module)
        if info.op_name == "torch.operator" and info.keys.name
    }


def test_every_exported_node_is_named_by_its_module_path() -> None:
    model = onnx.load(str(MODEL))
    located = _located_ops()
    # THEN each node's op is named "<module path>|<node>", the path being the exporter's
    # last name scope before the FX node's own name
    for node in model.graph.node:
        scopes = ast.literal_eval(_metadata(node)[NAME_SCOPES])
        assert f"{scopes[-2]}|{node.name}" in located, node.name
    # and by hand, for the model's own forward, a block's layer and a function call in a block
    names = {name.partition("|")[2]: name for name in located if "|" in name}
    assert names["node_softmax"] == "|node_softmax"
    assert names["node_linear_1"] == "blocks.0.fc1|node_linear_1"
    assert names["node_gelu_1"] == "blocks.1|node_gelu_1"


def test_each_op_is_placed_at_the_model_line_making_the_call() -> None:
    located = {name.partition("|")[2]: source for name, (_, source) in _located_ops().items()}
    # torch's own frames (nn.Linear.forward, F.gelu) are dropped: the innermost frame is the
    # script's line calling the layer; files are shown by name (the exporting machine's path
    # means nothing elsewhere)
    block_line = _line_of("return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))")
    for node in ("node_layer_norm", "node_linear_1", "node_gelu", "node_linear_2", "node_add"):
        assert located[node] == f"{SCRIPT.name}:{block_line}:0", node
    assert located["node_linear"] == f"{SCRIPT.name}:{_line_of('h = self.embed(x)')}:0"
    assert located["node_softmax"] == f"{SCRIPT.name}:{_line_of('.softmax(-1)')}:0"
    first = onnx.load(str(MODEL)).graph.node[0]  # the raw stack does hold torch's frames
    assert "torch/nn/modules/linear.py" in _metadata(first)[STACK_TRACE]


def test_a_captured_torch_export_ranks_by_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["capture", "onnx", str(MODEL), "-o", str(run), "--steps", "3"]) == 0
    assert main(["annotate", str(run)]) == 0
    capsys.readouterr()
    assert main(["top", str(run), "--by", "scope", "--format", "json", "-n", "50"]) == 0
    rows = json.loads(capsys.readouterr().out)
    model = onnx.load(str(MODEL))
    expected = {ast.literal_eval(_metadata(node)[NAME_SCOPES])[-2] for node in model.graph.node}
    # every row is one of the model's module paths (the model's own forward: no scope)
    assert {row["key"] for row in rows} - {"(no scope)"} <= expected - {""}
    assert {"blocks.0.fc1", "blocks.1.fc2", "embed", "head"} <= {row["key"] for row in rows}

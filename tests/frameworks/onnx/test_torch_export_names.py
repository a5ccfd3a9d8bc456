"""The exporter's metadata read defensively: a module path only from a well-formed
`name_scopes` list, files shown from their install folder or by name, and the ONNX node an
op's NameLoc names."""

from __future__ import annotations

import pytest

from irprof.frameworks.onnx.torch_export import (
    NAME_SCOPES,
    STACK_TRACE,
    module_path,
    node_name,
    shown_file,
    source_frames,
)
from irprof.mlir.python_frames import SourceFrame

NEEDS_FRAMEWORK = False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("['', 'encoder', 'encoder.fc1', 'linear']", "encoder.fc1"),
        ("['', 'add']", ""),  # the model's own forward
        ("['linear']", None),  # no module before the node's own name
        ("[]", None),
        ("'encoder'", None),  # not a list
        ("['', 3, 'x']", None),
        ("['', 'a|b', 'x']", None),  # would not split back
        ("['', 'enc'", None),  # not a literal
        ("__import__('os').system('true')", None),  # never evaluated
    ],
)
def test_a_module_path_only_from_a_well_formed_scope_list(text: str, expected: str | None) -> None:
    assert module_path({NAME_SCOPES: text}) == expected


def test_no_scope_list_no_module_path() -> None:
    assert module_path({}) is None
    assert module_path({STACK_TRACE: 'File "m.py", line 1, in f'}) is None


@pytest.mark.parametrize(
    ("file", "shown"),
    [
        ("/venv/lib/site-packages/transformers/models/bert/x.py", "transformers/models/bert/x.py"),
        ("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", "torch/nn/modules/linear.py"),
        ("C:\\env\\Lib\\site-packages\\timm\\layers\\mlp.py", "timm/layers/mlp.py"),
        ("/opt/site-packages/env/site-packages/lib/m.py", "lib/m.py"),  # the innermost
        ("/opt/project/model.py", "model.py"),
        ("/srv/site-packages", "site-packages"),  # nothing below: the name
        ("model.py", "model.py"),
    ],
)  # fmt: skip
def test_files_are_shown_from_their_install_folder_or_by_name(file: str, shown: str) -> None:
    assert shown_file(file) == shown


def test_torch_frames_are_dropped_unless_nothing_else_is_left() -> None:
    user = '  File "/p/model.py", line 7, in forward\n    y = self.fc(x)\n'
    torch_frame = (
        '  File "/v/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
    )
    assert source_frames({STACK_TRACE: user + torch_frame}) == (
        SourceFrame("model.py", 7, "forward"),
    )
    assert source_frames({STACK_TRACE: torch_frame}) == (
        SourceFrame("torch/nn/modules/linear.py", 134, "forward"),
    )
    assert source_frames({}) == ()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("enc.fc1|node_linear", "node_linear"),
        ("|node_softmax", "node_softmax"),
        ("a|b", "a|b"),  # a node's own name, when it is one
        ("/enc/MatMul", "/enc/MatMul"),  # the TorchScript exporter's names: unchanged
        ("odd|", "odd|"),
    ],
)
def test_the_node_an_op_names(name: str, expected: str) -> None:
    assert node_name(name, frozenset({"a|b"})) == expected


@pytest.mark.timeout(30)
def test_hostile_scope_lists_are_refused_quickly() -> None:
    assert module_path({NAME_SCOPES: "[" * 100_000 + "]" * 100_000}) is None
    assert module_path({NAME_SCOPES: "(" * 5_000}) is None
    long = "['', " + ", ".join(f"'m.{i}'" for i in range(20_000)) + ", 'add']"
    assert module_path({NAME_SCOPES: long}) == "m.19999"

"""Views replayed by functionalization keep their own FX call's name (real torch.export).

After an in-place op, `run_decompositions` re-creates the views of the mutated tensor at their
first use and torch names them after that use; the capture's `decompose` gives each replayed view
back to the exported call it re-creates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import torch  # noqa: E402
from torch import nn  # noqa: E402

from irprof.frameworks.torch.decomposition import (  # noqa: E402
    NODE_TAG,
    decompose,
    decomposition_table,
)
from irprof.frameworks.torch.runner import describe_nodes  # noqa: E402
from irprof.frameworks.torch.view_replay import REGENERATED, node_tag  # noqa: E402


class ViewIntoLstm(nn.Module):
    """The `Looped` test model's pattern: in-place ReLU, a view, a decomposed consumer."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.lstm = nn.LSTM(16, 16, batch_first=True)

    def forward(self, x: Any) -> Any:
        return self.lstm(self.act(x * 2).unsqueeze(0))[0]


class ViewChain(nn.Module):
    """Two user views replayed together at their first use (by tanh)."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: Any) -> Any:
        return self.act(x * 2).unsqueeze(0).transpose(1, 2).tanh()


class FlattenIntoLinear(nn.Module):
    """A composite view (flatten) that decomposition turns into another target (view)."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU(inplace=True)
        self.fc = nn.Linear(64, 4)

    def forward(self, x: Any) -> Any:
        return self.fc(torch.flatten(self.act(x * 2)))


def _tagged(model: nn.Module, mode: str, repair: bool = True) -> tuple[Any, Any]:
    """(exported, decomposed) programs of `model` on a (4, 16) input, tagged like the capture."""
    exported = torch.export.export(model.eval(), (torch.randn(4, 16),))
    describe_nodes(exported, str(Path(__file__).parent))
    if repair:
        return exported, decompose(exported, mode)
    return exported, exported.run_decompositions(decomposition_table(mode))


def _by_tag(program: Any) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for node in program.graph.nodes:
        if node.op == "call_function":
            grouped.setdefault(node_tag(node, NODE_TAG) or "", []).append(node)
    return grouped


def _live_aten_calls(exported: Any) -> set[str]:
    """Exported ATen call nodes whose value reaches the output (dead ones have no op anyway)."""
    (output,) = [node for node in exported.graph.nodes if node.op == "output"]
    live: set[str] = set()
    pending = list(output.all_input_nodes)
    while pending:
        node = pending.pop()
        if node.name in live:
            continue
        live.add(node.name)
        pending.extend(node.all_input_nodes)
    return {
        node.name
        for node in exported.graph.nodes
        if node.op == "call_function" and node.name in live and hasattr(node.target, "_schema")
    }


def test_torch_itself_names_the_replayed_view_after_its_consumer() -> None:
    """The situation the repair exists for (if torch fixes it, the repair becomes a no-op)."""
    _, raw = _tagged(ViewIntoLstm(), "default", repair=False)
    replayed = [n for n in raw.graph.nodes if n.meta.get(REGENERATED)]
    assert replayed and "unsqueeze" not in _by_tag(raw)


@pytest.mark.parametrize("mode", ["default", "none"])
@pytest.mark.parametrize("build", [ViewIntoLstm, ViewChain, FlattenIntoLinear])
def test_every_live_call_names_a_decomposed_node(build: Callable[[], nn.Module], mode: str) -> None:
    """No exported call loses all its nodes to another call's name."""
    exported, lowered = _tagged(build(), mode)
    assert _live_aten_calls(exported) <= set(_by_tag(lowered))


@pytest.mark.parametrize("mode", ["default", "none"])
def test_replayed_view_takes_its_own_call_frame_and_module(mode: str) -> None:
    """The LSTM input's `unsqueeze`: root module, the forward line (torch gives the LSTM's)."""
    _, lowered = _tagged(ViewIntoLstm(), mode)
    (unsqueeze,) = _by_tag(lowered)["unsqueeze"]
    assert str(unsqueeze.target) == "aten.unsqueeze.default"
    assert [path for path, _ in unsqueeze.meta["nn_module_stack"].values()] == [""]
    assert ".unsqueeze(0)" in unsqueeze.meta["stack_trace"]


def test_a_decomposition_keeps_its_own_replayed_views() -> None:
    """The LSTM decomposition's transpose of its replayed input still belongs to the LSTM."""
    _, lowered = _tagged(ViewIntoLstm(), "default")
    (unsqueeze,) = _by_tag(lowered)["unsqueeze"]
    (consumer_view,) = [n for n in unsqueeze.users if n.meta.get(REGENERATED)]
    assert str(consumer_view.target) == "aten.permute.default"
    assert node_tag(consumer_view, NODE_TAG) == "lstm"


@pytest.mark.parametrize("mode", ["default", "none"])
def test_chain_of_replayed_views_is_split_between_its_calls(mode: str) -> None:
    """unsqueeze then transpose, replayed in one go: each op named after its own call."""
    _, lowered = _tagged(ViewChain(), mode)
    grouped = _by_tag(lowered)
    assert [str(n.target) for n in grouped["unsqueeze"]] == ["aten.unsqueeze.default"]
    assert len(grouped["transpose"]) == 1


def test_composite_view_is_found_through_its_decomposed_target() -> None:
    """flatten replays as aten.view: matched by tensor and shape, not by target."""
    _, lowered = _tagged(FlattenIntoLinear(), "default")
    (flatten,) = _by_tag(lowered)["flatten"]
    assert str(flatten.target) == "aten.view.default"
    assert tuple(flatten.meta["val"].shape) == (64,)

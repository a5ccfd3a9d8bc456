"""Grad-mode regions inlined before the capture reads the graph (real torch.export).

A `@torch.no_grad()` method (HF's rotary embeddings) exported with grad on is one
`wrap_with_set_grad_enabled` call; decomposition used to inline it as generated code, so its
calls shared one node name and a stack trace into `<eval_with_key>`.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import torch  # noqa: E402
from torch import nn  # noqa: E402

from irprof.frameworks.torch.regions import GRAD_REGION, inline_grad_regions  # noqa: E402
from irprof.frameworks.torch.runner import describe_nodes  # noqa: E402


class Tables(nn.Module):
    """HF's rotary embedding: cos and sin tables computed in a `no_grad` forward."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", torch.arange(1, 5, dtype=torch.float32) / 4)

    @torch.no_grad()
    def forward(self, x: Any) -> tuple[Any, Any]:
        freqs = x[..., :4] * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class Rotary(nn.Module):
    """The tables used by a projection, as an attention layer uses them."""

    def __init__(self) -> None:
        super().__init__()
        self.rotary = Tables()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        cos, sin = self.rotary(x)
        return self.proj(x * cos + x * sin)


class Nested(nn.Module):
    """A grad-on region inside a no-grad one, and a region whose result is the output."""

    def forward(self, x: Any) -> Any:
        with torch.no_grad():
            y = x.exp()
            with torch.enable_grad():
                z = y.tanh()
            w = z * 2
        return w + x


class RegionIsTheOutput(nn.Module):
    def forward(self, x: Any) -> Any:
        y = x * 3
        with torch.no_grad():
            return y.sin()


def regions(program: torch.export.ExportedProgram) -> list[Any]:
    return [
        n
        for n in program.graph.nodes
        if n.op == "call_function" and getattr(n.target, "_name", None) == GRAD_REGION
    ]


def source_line(fragment: str) -> int:
    """The line of this file holding `fragment` (the test's own oracle for stack traces)."""
    lines, start = inspect.getsourcelines(Tables)
    return start + next(i for i, text in enumerate(lines) if fragment in text)


def test_a_no_grad_method_becomes_ordinary_calls_with_their_own_lines() -> None:
    torch.manual_seed(0)
    model, x = Rotary(), torch.randn(2, 8)
    program = torch.export.export(model, (x,))
    assert len(regions(program)) == 1  # what torch gives with grad on (the training export)
    assert inline_grad_regions(program) == 1
    assert regions(program) == []
    assert not any(n.op == "get_attr" for n in program.graph.nodes)
    torch.testing.assert_close(program.module()(x), model(x))
    nodes = {n["target"]: n for n in describe_nodes(program, "")}
    for target, fragment in (("cos", "emb.cos()"), ("sin", "emb.cos(), emb.sin()")):
        assert nodes[f"aten.{target}.default"]["frames"][-1][1] == source_line(fragment)
    assert nodes["aten.cat.default"]["frames"][-1][1] == source_line("torch.cat(")
    # the region's calls belong to the module the method is on, not to a generated one
    assert nodes["aten.cos.default"]["modules"][-1] == ["rotary", "Tables"]


def test_decomposition_keeps_the_inlined_calls_names_and_lines() -> None:
    torch.manual_seed(0)
    program = torch.export.export(Rotary(), (torch.randn(2, 8),))
    inline_grad_regions(program)
    lowered = program.run_decompositions()
    traces = {
        str(n.target): n.meta.get("stack_trace", "")
        for n in lowered.graph.nodes
        if n.op == "call_function"
    }
    assert "eval_with_key" not in "".join(traces.values())
    assert f"line {source_line('emb.cos()')}" in traces["aten.cos.default"]


def test_nested_regions_are_inlined_and_compute_the_same() -> None:
    x = torch.randn(3, 4)
    program = torch.export.export(Nested(), (x,))
    assert regions(program)
    assert inline_grad_regions(program) >= 2  # the outer region, then the one it held
    assert regions(program) == []
    torch.testing.assert_close(program.module()(x), Nested()(x))
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert targets == [
        "aten.exp.default",
        "aten.tanh.default",
        "aten.mul.Tensor",
        "aten.add.Tensor",
    ]


def test_a_region_whose_result_is_the_output_stays() -> None:
    """The program's signature names the output node's arguments: that region is kept."""
    x = torch.randn(3)
    program = torch.export.export(RegionIsTheOutput(), (x,))
    before = len(regions(program))
    assert before == 1
    assert inline_grad_regions(program) == 0
    assert len(regions(program)) == before
    torch.testing.assert_close(program.module()(x), RegionIsTheOutput()(x))


def test_an_export_without_grad_has_no_region_to_inline() -> None:
    """The capture exports an inference model with grad off, as its steps run: torch inlines
    the no-grad method itself and keeps each call's own stack trace."""
    with torch.no_grad():
        program = torch.export.export(Rotary(), (torch.randn(2, 8),))
    assert regions(program) == []
    assert inline_grad_regions(program) == 0
    cos = next(n for n in program.graph.nodes if str(n.target) == "aten.cos.default")
    assert f"line {source_line('emb.cos()')}" in cos.meta["stack_trace"]

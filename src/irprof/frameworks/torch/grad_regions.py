"""Grad-mode regions of an exported program inlined, so each call in them keeps its own node.

`torch.export` turns a region whose grad mode differs from the export's (a `@torch.no_grad()`
method: every HF rotary embedding, Llama's, Qwen's, GPT-NeoX's) into one
`wrap_with_set_grad_enabled` call over a submodule. `run_decompositions` inlines it again, but
retraces it as generated code: each op then carries the region's one node name and a stack
trace into `<eval_with_key>.N`, so eight eager calls (`aten::cos`, `aten::sin`, ...) were joined
to one FX node, ranked as one group and placed at no line of the model.

The IR has no grad mode, so nothing is lost by inlining the region before anything reads the
graph: its calls become ordinary nodes with their own `stack_trace` and `nn_module_stack`, and
the eager events of each are joined to it as to any other call. The capture also exports in
the grad mode the profiled steps run in (`steps_runner`), so an inference capture has such
regions only where the model turns grad on.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

GRAD_REGION = "wrap_with_set_grad_enabled"


def _is_grad_region(node: Any) -> bool:
    return node.op == "call_function" and getattr(node.target, "_name", None) == GRAD_REGION


def _inlinable(node: Any) -> bool:
    """Its results are read only through `getitem`, none of them by the graph's output (whose
    names the program's signature holds): then each reader can take the inner value directly."""
    return all(
        user.op == "call_function"
        and user.target is operator.getitem
        and all(reader.op != "output" for reader in user.users)
        for user in node.users
    )


def _fresh_attribute(module: torch.fx.GraphModule, base: str) -> str:
    name, index = base, 0
    while hasattr(module, name):
        index += 1
        name = f"{base}_{index}"
    return name


def _inline(module: torch.fx.GraphModule, region: Any) -> None:
    graph = module.graph
    _, body_attr, *operands = region.args
    body: torch.fx.GraphModule = getattr(module, body_attr.target)
    values: dict[Any, Any] = dict(
        zip(
            (n for n in body.graph.nodes if n.op == "placeholder"),
            operands,
            strict=True,
        )
    )
    results: Any = ()
    with graph.inserting_before(region):
        for inner in body.graph.nodes:
            if inner.op == "placeholder":
                continue
            if inner.op == "output":
                results = torch.fx.node.map_arg(inner.args[0], values.__getitem__)
                break
            copied = graph.node_copy(inner, values.__getitem__)
            if inner.op == "get_attr":  # a constant or a nested region's body
                copied.target = _fresh_attribute(module, str(inner.target))
                setattr(module, copied.target, getattr(body, inner.target))
            values[inner] = copied
    for reader in list(region.users):
        reader.replace_all_uses_with(results[reader.args[1]])
        graph.erase_node(reader)
    graph.erase_node(region)
    if not body_attr.users:
        graph.erase_node(body_attr)


def inline_grad_regions(program: torch.export.ExportedProgram) -> int:
    """Inline every grad-mode region of `program`'s graph (nested ones too), in place; the
    number inlined. A region whose result is a program output directly stays as it is."""
    module = program.graph_module
    inlined = 0
    while True:
        regions = [n for n in module.graph.nodes if _is_grad_region(n) and _inlinable(n)]
        if not regions:
            break
        for region in regions:
            _inline(module, region)
        inlined += len(regions)
    if inlined:
        module.delete_all_unused_submodules()
        module.recompile()
    return inlined

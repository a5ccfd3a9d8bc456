"""Regions of an exported program (higher-order calls over a submodule): grad-mode regions
inlined, so each call in them keeps its own node; the calls of the others (autocast) listed.

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

An autocast region (`with torch.autocast(...)` in `forward`: `wrap_with_autocast`) cannot be
inlined before decomposition, which is what makes its casts explicit. Its ops come out of
decomposition named after the region's node, so the region is one event group: `region_calls`
lists the calls inside it, each under the region's name, so that the eager event of each call
joins the region's ops. Before, no call of the program matched those events by module, and the
join by aten name alone gave a layer's `aten::linear` under autocast to another layer's linear.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
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


def region_calls(node: Any) -> Iterator[Any]:
    """The call nodes a higher-order call runs, in order, through nested regions: those of the
    submodules its arguments name (none for an ordinary call)."""
    owner = node.graph.owning_module
    for argument in node.args:
        if getattr(argument, "op", None) != "get_attr" or owner is None:
            continue
        body = getattr(owner, str(argument.target), None)
        if not isinstance(body, torch.fx.GraphModule):
            continue
        for inner in body.graph.nodes:
            if inner.op != "call_function":
                continue
            nested = list(region_calls(inner))
            yield from nested or [inner]

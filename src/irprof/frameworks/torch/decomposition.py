"""Decomposition of an exported program for the linalg lowering, with a fallback when torch's
own `run_decompositions` fails: the ops it decomposes nearest the failing node kept whole one at
a time, then nothing decomposed; what was done is recorded for the manifest. Runs in the capture
child only (it imports torch).
"""

from __future__ import annotations

import re
from typing import Any

import torch
import torch._decomp

from irprof.frameworks.torch.view_replay import repair_view_replay

NODE_TAG = "irprof_node"  # key in `node.meta["custom"]`, which decompositions propagate


class DecompositionError(Exception):
    """Every table tried failed; the message names the node, the op and the errors."""


# Core ATen ops that torch-mlir's linalg conversion cannot lower but torch can decompose; the
# same ops torch-mlir's own `fx_decomp_util.DEFAULT_DECOMPOSITIONS` decomposes for this reason.
UNLOWERABLE_OPS = (
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit.no_stats",
    "native_group_norm",
    "squeeze.dims",
    "_adaptive_avg_pool2d",
    "_log_softmax",
    "logsumexp",
    "_unsafe_index.Tensor",
    "masked_fill.Tensor",
    "masked_fill.Scalar",
    "unbind",
    "im2col",
    "grid_sampler_2d",
)


def decomposition_table(decompose: str) -> Any:
    """`default`: torch's core ATen table plus the ops torch-mlir cannot lower; `none`: empty.

    An empty table still functionalizes the program but keeps composite ops whole
    (`aten.linear`, `aten.softmax`), which torch-mlir lowers directly.
    """
    if decompose == "none":
        return {}
    table = torch.export.default_decompositions()
    packets = []
    for name in UNLOWERABLE_OPS:
        packet_name, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, packet_name)
        packets.append(getattr(packet, overload) if overload else packet)
    table.update(torch._decomp.get_decompositions(packets))  # type: ignore[no-untyped-call]
    return table


# torch.fx.Interpreter's diagnostic on the exception of a node it was running; the only place
# `run_decompositions` names the node that failed.
_EXECUTING_RE = re.compile(r"While executing %([A-Za-z0-9_]+)")
MAX_KEPT_WHOLE_TRIES = 8
DECOMPOSE_STAGE = "run_decompositions"


def failing_node(graph: torch.fx.Graph, error: BaseException) -> torch.fx.Node | None:
    """The node of `graph` whose re-tracing raised `error` (or one of its causes), if named."""
    nodes: dict[str, torch.fx.Node] = {node.name: node for node in graph.nodes}
    seen: BaseException | None = error
    while seen is not None:
        match = _EXECUTING_RE.search(str(seen))
        if match and match.group(1) in nodes:
            return nodes[match.group(1)]
        seen = seen.__cause__ or seen.__context__
    return None


def keep_whole_candidates(
    graph: torch.fx.Graph, failing: torch.fx.Node | None, table: dict[Any, Any]
) -> list[Any]:
    """Targets the table decomposes, nearest producers of the failing node first.

    A decomposition can give its result other strides than the op's own kernel (SDPA's math
    path after a transpose), so the node that fails is often a later `view` of that result:
    walk its inputs breadth-first. Without a named node, every decomposed target in order.
    """
    order: list[torch.fx.Node] = []
    if failing is None:
        order = [node for node in graph.nodes if node.op == "call_function"]
    else:
        queue, seen = [failing], {failing}
        while queue:
            node = queue.pop(0)
            order.append(node)
            for source in node.all_input_nodes:
                if source not in seen:
                    seen.add(source)
                    queue.append(source)
    targets = [node.target for node in order if node.op == "call_function" and node.target in table]
    return list(dict.fromkeys(targets))[:MAX_KEPT_WHOLE_TRIES]


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:300]}"


def decompose(
    program: torch.export.ExportedProgram, decompose: str
) -> torch.export.ExportedProgram:
    """`decompose_recorded` without its record."""
    return decompose_recorded(program, decompose)[0]


def decompose_recorded(
    program: torch.export.ExportedProgram, decompose: str
) -> tuple[torch.export.ExportedProgram, dict[str, Any]]:
    """Functionalize and decompose `program` (tagged by `describe_nodes`), views retagged; and
    what the decomposition did, for the manifest.

    When torch's own `run_decompositions` fails (GPT-2's SDPA: the decomposed attention's
    strides break a later `view`), the ops it decomposes nearest the failing node are kept
    whole one at a time; then an empty table (`--decompose none`). The failure, its node and
    op and what was kept whole are recorded.

    Functionalization re-creates the views of tensors mutated in place at their first use and
    names them after that use; `repair_view_replay` gives each back to its own call.
    """
    table = decomposition_table(decompose)
    record: dict[str, Any] = {"table": decompose}
    try:
        lowered = program.run_decompositions(table)
    except Exception as error:  # torch raises many types from inside its tracer
        failing = failing_node(program.graph, error)
        record["failure"] = {
            "stage": DECOMPOSE_STAGE,
            "node": failing.name if failing is not None else "",
            "op": str(failing.target) if failing is not None else "",
            "error": _first_line(error),
        }
        lowered = _decompose_keeping_whole(program, table, failing, record)
    repair_view_replay(program.graph, lowered.graph, NODE_TAG)
    return lowered, record


def _decompose_keeping_whole(
    program: torch.export.ExportedProgram,
    table: dict[Any, Any],
    failing: torch.fx.Node | None,
    record: dict[str, Any],
) -> torch.export.ExportedProgram:
    """`run_decompositions` with one op kept whole, then with none decomposed (see `decompose`)."""
    tries: list[tuple[Any, ...] | None] = [
        (target,) for target in keep_whole_candidates(program.graph, failing, table)
    ]
    if table:
        tries.append(None)  # the empty table: every op whole
    last: Exception | None = None
    for kept in tries:
        trial = {} if kept is None else {k: v for k, v in table.items() if k not in kept}
        try:
            lowered: torch.export.ExportedProgram = program.run_decompositions(trial)
        except Exception as error:  # as above
            last = error
            continue
        record["kept_whole"] = sorted(str(target) for target in kept or ())
        record["table"] = "none" if kept is None else f"{record['table']} (ops kept whole)"
        return lowered
    failure = record["failure"]
    raise DecompositionError(
        f"torch's {DECOMPOSE_STAGE} failed at FX node {failure['node'] or '?'} "
        f"({failure['op'] or 'op unknown'}): {failure['error']}; keeping each nearby op whole and "
        f"decomposing nothing failed too ({_first_line(last) if last else 'no other table'})"
    )

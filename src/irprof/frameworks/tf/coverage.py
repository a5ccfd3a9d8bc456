"""Why TF ops received no event, and which of them provably never ran.

Reasons come from the executed graph (`tf_fusion.ExecutedGraph`): an op grappler pruned or folded
"never ran" (only when no fused node absorbed it), one inside a fused node that had no event ran
there, an op of a `tf.cond` branch the profiled steps did not take never ran in them, and an op
the runtime executed without an event is "silent". Ops that provably did not run are counted in
`ops_not_executed`, out of the non-trivial figure.
"""

from __future__ import annotations

from irprof.bundle import RunBundle
from irprof.correlate.ledger import Ledger
from irprof.coverage import is_trivial_op
from irprof.frameworks.tf.fusion import Membership
from irprof.frameworks.tf.graph import TfOpIndex
from irprof.mlir.keys import split_function_suffix

NEVER_RAN = "never ran: "
PRUNED = NEVER_RAN + "not in the graph the runtime executed (grappler pruned or fused it away)"
FOLDED = NEVER_RAN + "grappler folded it into a constant"
SILENT = "in the graph the runtime executed, yet no event in the profiled steps"
CONSTANT_KERNELS = frozenset({"Const", "HostConst"})
NOT_TAKEN = NEVER_RAN + (
    "in the `{label}` function of {owner}, none of whose ops had an event in the profiled "
    "steps (a branch not taken, a loop body run zero times)"
)


def _idle_branches(view: TfOpIndex, ledger: Ledger) -> set[str]:
    """Branch and loop functions none of whose ops received an event while their control-flow
    op ran (it received its lowering's events, or another of its functions did). At host tracer
    level 3 every kernel the executor runs is recorded, so such a function did not run."""
    active: set[str] = {view.function_of[p] for p in ledger.accounts}
    idle = set()
    for function, (owner, _) in view.branch_of_function.items():
        if function in active:
            continue
        siblings = set(view.branches_of[owner].values())
        if owner in ledger.accounts or siblings & active:
            idle.add(function)
    return idle


def _op_reason(
    view: TfOpIndex,
    membership: Membership | None,
    position: int,
    silent: str,
    idle_functions: set[str],
) -> str | None:
    """Why the op at `position` received no event (None: no evidence either way)."""
    info = view.infos[position]
    node = split_function_suffix(info.keys.name or "")[0]
    if position in view.callee_of:
        return (
            f"call inlined by the runtime: the ops of @{view.callee_of[position]} "
            "received its events as `<call>/<node>`"
        )
    function = view.function_of[position]
    if function in idle_functions:
        owner, label = view.branch_of_function[function]
        owner_name = view.infos[owner].keys.name or view.infos[owner].op_name
        return NOT_TAKEN.format(label=label, owner=f"{view.infos[owner].op_name} {owner_name}")
    if membership is None:
        return None
    graph = membership.graph
    fused_into = membership.absorbed_by.get(position)
    if fused_into is not None:
        kernel = graph.nodes[fused_into].op if fused_into in graph.nodes else "?"
        return f"ran inside {fused_into} ({kernel}), which had no event in the profiled steps"
    executed = graph.nodes.get(node)
    if executed is None and node in graph.folded:
        return FOLDED
    if executed is None and position not in membership.present:
        return PRUNED
    if executed is not None and executed.op in CONSTANT_KERNELS and info.op_name != "tf.Const":
        return FOLDED
    return silent


def tf_op_reasons(
    bundle: RunBundle, view: TfOpIndex, ledger: Ledger, membership: Membership | None
) -> tuple[dict[int, str], set[int]]:
    """Why each op without an event got none, and the non-trivial ops that provably never ran
    (they do no work at run time: `Coverage.ops_not_executed`)."""
    silent = SILENT
    options = bundle.manifest().options
    # The reference steps' level when the capture ran them: what was recorded at all.
    recorded = options.get("reference_tracer_options") or options.get("recorded_tracer_options")
    host_level = recorded.get("host_tracer_level", 3) if isinstance(recorded, dict) else 3
    if isinstance(host_level, int) and host_level < 3:
        silent += " (host tracer level below 3 skips cheap kernels: capture with --host-level 3)"
    idle = _idle_branches(view, ledger) if host_level == 3 else set()
    op_reasons: dict[int, str] = {}
    for position in range(len(view.infos)):
        if position in ledger.accounts:
            continue
        reason = _op_reason(view, membership, position, silent, idle)
        if reason is not None:
            op_reasons[position] = reason
    # Ops the executed graph proves absent, and that no fused node ran, do no work at run time.
    never_ran = {
        position
        for position, reason in op_reasons.items()
        if reason.startswith(NEVER_RAN) and not is_trivial_op(view.infos[position].op_name)
    }
    return op_reasons, never_ran

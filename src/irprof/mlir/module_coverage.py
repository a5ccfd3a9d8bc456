"""Build a `Coverage` record from a module's ops and what a correlator matched.

Correlators call `coverage_for` once per level: it counts `ops_total`, `ops_nontrivial` (via
`irprof.coverage.is_trivial_op`) and annotated ops, and explains every unmatched non-trivial op.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from iree.compiler import ir

from irprof.coverage import Coverage, UnmatchedEvent, UnmatchedOp, is_trivial_op
from irprof.mlir.locations import from_ir, render
from irprof.opprofile import OpKey

MAX_UNMATCHED = 25
MAX_LOCATION_CHARS = 160


def default_unmatched_reason(key: OpKey) -> str:
    """Why an op without profile most likely got none, judged from its key alone."""
    if key.name is None and key.source is None:
        return "location has no name and no source position (unknown location)"
    if key.name is not None:
        return f"no profiled event named after '{key.name}'"
    return f"no profiled event attributed to source {key.source}"


def coverage_for(
    keyed_ops: Sequence[tuple[ir.Operation, OpKey]],
    annotated: Iterable[int],
    *,
    level: str,
    profiled_ns: int,
    attributed_ns: int,
    unmatched_events: Iterable[UnmatchedEvent] = (),
    reasons: Mapping[int, str] | None = None,
    not_executed: Collection[int] = (),
    untimed: Collection[int] = (),
    warnings: Iterable[str] = (),
    max_listed: int = MAX_UNMATCHED,
) -> Coverage:
    """Coverage of one level.

    keyed_ops:  `derive_op_keys(module)` (walk order);
    annotated:  positions in `keyed_ops` of the ops that received a profile;
    reasons:    optional position -> why that op is unmatched (else a reason from its key);
    not_executed: positions of ops with no work of their own in the profiled runs (removed by
                the compiler, a region's payload, hoisted to an initializer); counted in
                `ops_not_executed` instead of `ops_nontrivial`, still listed with their reason;
    untimed:    positions of ops seen running only outside the timed steps: counted in
                `ops_nontrivial` and `ops_untimed`, listed with their reason;
    unmatched_events: profiled events no op received (the largest `max_listed` are listed, the
                rest summed into one row, so listed time always adds up).
    """
    annotated_set = set(annotated)
    reasons = reasons or {}
    nontrivial = 0
    nontrivial_annotated = 0
    removed = 0
    untimed_count = 0
    # Listed in walk order within three groups, the ones that lower the coverage first: missed
    # (ran, or may have, with no time found), then seen only untimed, then removed.
    listed: tuple[list[int], list[int], list[int]] = ([], [], [])
    for position, (op, _key) in enumerate(keyed_ops):
        if is_trivial_op(op.name):
            continue
        if position in annotated_set:
            nontrivial += 1
            nontrivial_annotated += 1
            continue
        if position in not_executed:
            removed += 1
            group = listed[2]
        else:
            nontrivial += 1
            is_untimed = position in untimed
            untimed_count += is_untimed
            group = listed[1] if is_untimed else listed[0]
        if len(group) < max_listed:
            group.append(position)
    unmatched_ops: list[UnmatchedOp] = []
    for position in [*listed[0], *listed[1], *listed[2]][:max_listed]:
        op, key = keyed_ops[position]
        location = render(from_ir(op.location))
        if len(location) > MAX_LOCATION_CHARS:
            location = location[: MAX_LOCATION_CHARS - 3] + "..."
        reason = reasons.get(position) or default_unmatched_reason(key)
        unmatched_ops.append(UnmatchedOp(op.name, location, reason))
    ranked = sorted(unmatched_events, key=lambda e: e.total_ns, reverse=True)
    events = ranked[:max_listed]
    rest = ranked[max_listed:]
    if rest:
        # Every unattributed nanosecond stays listed: the tail is summed into one row.
        events.append(
            UnmatchedEvent(
                f"{len(rest)} more event names",
                sum(e.total_ns for e in rest),
                sum(e.count for e in rest),
                "smaller unattributed events, summed: "
                + "; ".join(sorted({e.reason for e in rest}))[:300],
            )
        )
    return Coverage(
        level=level,
        profiled_ns=int(profiled_ns),
        attributed_ns=int(attributed_ns),
        ops_total=len(keyed_ops),
        ops_nontrivial=nontrivial,
        ops_annotated=len(annotated_set),
        ops_nontrivial_annotated=nontrivial_annotated,
        ops_not_executed=removed,
        ops_untimed=untimed_count,
        unmatched_events=tuple(events),
        unmatched_ops=tuple(unmatched_ops),
        warnings=tuple(warnings),
    )

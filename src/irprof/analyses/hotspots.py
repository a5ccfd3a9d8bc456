"""Where the time goes: ops ranked by attributed time, and rollups by op kind or name scope.

Rows are ranked by a per-step statistic of their time (default: the median step times the
steps, which one stalled step cannot move; `analyses/step_stats.py`, docs/views.md).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.step_stats import (
    STAT_LABELS,
    STATS,
    NoiseVerdict,
    Outlier,
    Stat,
    stat_estimate,
    step_outliers,
    step_spread,
)
from irprof.analyses.table import Tabular, dataclass_rows, row_columns
from irprof.errors import UsageError

GroupBy = Literal["op", "type", "scope"]
GROUP_BYS: tuple[GroupBy, ...] = ("op", "type", "scope")


@dataclass(frozen=True)
class HotspotRow:
    """One line of a hotspot table: an op, or a group of ops sharing a kind or a scope."""

    key: str  # qualified runtime name (by op), op kind (by type) or scope (by scope)
    op_name: str  # op kind, or the kinds of a group joined by ", "
    total_ns: int
    share: float  # of all profiled op time
    count: int  # events attributed (summed over the group)
    mean_ns: int  # per event
    ops: int  # number of IR ops in the row
    kernels: tuple[str, ...]
    fused_with: tuple[str, ...]
    location: str  # `file:line:col` of the (hottest) op, else its compact location
    op_index: int  # walk index of the (hottest) op: links a row back to the IR
    # Time in the row that is an estimated share of an event several ops ran (a fused kernel,
    # a decomposed call) rather than a measurement; 0 when the row holds whole events.
    estimated_ns: int = 0
    group: str = ""  # the event group a collapsed row stands for ("" otherwise)
    # The time the row is ranked by (the table's `stat`; `total_ns` for `sum`), and the
    # fastest, median and slowest of its per-step times over `steps` steps (0: no samples).
    stat_ns: int = 0
    step_ns: tuple[int, ...] = ()  # the row's time in each captured step, in time order
    steps: int = 0
    step_min_ns: int = 0
    step_median_ns: int = 0
    step_max_ns: int = 0
    unstable: bool = False  # slowest step > 3x the median step (docs/views.md)


@dataclass(frozen=True)
class HotspotTable(Tabular):
    """Rows sorted by time (hottest first) and what they cover."""

    by: GroupBy
    rows: tuple[HotspotRow, ...]
    total_ns: int  # over all rows, not only the ones kept by `limit`
    profiled_ns: int
    level: str = ""  # the IR level the rows are ops of ("" when built from loose ops)
    stat: str = "sum"  # the statistic rows are ranked, shared and coloured by
    stat_note: str = ""  # why `stat` is not the one asked for ("" when it is)
    outliers: tuple[Outlier, ...] = ()  # op-steps far above their op's median step
    noise: NoiseVerdict | None = None  # how noisy the run's steps were (set by the views)
    oncpu_note: str = ""  # samples of on-CPU time: what was subtracted (set by the views)
    # Op time only the untimed reference steps recorded, scaled to the timed steps: not in
    # the rows or in `profiled_ns` (set by the views).
    untimed_ns: int = 0

    @property
    def stat_label(self) -> str:
        """The statistic in words, for headers and captions."""
        label = STAT_LABELS.get(self.stat, self.stat)
        return f"{label}, on-CPU" if self.oncpu_note and self.stat != "sum" else label

    def table_columns(self) -> tuple[str, ...]:
        """The fields of `HotspotRow`."""
        return row_columns(HotspotRow)

    def table_rows(self) -> list[tuple[Any, ...]]:
        """One tuple per row, hottest first."""
        return dataclass_rows(self.rows, self.table_columns())

    def table_caption(self) -> str:
        """What the rows are and the time they cover."""
        where = f"level {self.level}, " if self.level else ""
        note = f" ({self.stat_note})" if self.stat_note else ""
        return (
            f"{where}by {self.by}, ranked by {self.stat_label}{note}: "
            f"{self.total_ns:,} ns of {self.profiled_ns:,} ns profiled"
        )


def _where(op: ProfiledOp) -> str:
    # A private-function op is placed at its call site: its own location is a bare primitive.
    return op.site_source or op.place


def _estimated_ns(ops: list[ProfiledOp]) -> int:
    """Time of `ops` that is a share of a group not wholly inside `ops`."""
    present: dict[str, int] = {}
    for op in ops:
        if op.profile is not None and op.profile.estimated:
            present[op.profile.group] = present.get(op.profile.group, 0) + 1
    return sum(
        op.total_ns
        for op in ops
        if op.profile is not None
        and op.profile.estimated
        and present[op.profile.group] < op.profile.group_size
    )


def _merge(
    key: str,
    ops: list[ProfiledOp],
    *,
    single: bool,
    samples: _RowSamples,
    stat: Stat,
    group: str = "",
) -> HotspotRow:
    hottest = max(ops, key=lambda op: op.total_ns)
    total = sum(op.total_ns for op in ops)
    count = sum(op.profile.count for op in ops if op.profile)
    kernels = tuple(dict.fromkeys(k for op in ops if op.profile for k in op.profile.kernels))
    fused = tuple(dict.fromkeys(f for op in ops if op.profile for f in op.profile.fused_with))
    # The kinds of a several-op row, the most time first (sorted is stable: ties keep walk
    # order): a narrow column shows the kind that dominates the row, not the first in the IR.
    kind_ns: dict[str, int] = {}
    for op in ops:
        kind_ns[op.op_name] = kind_ns.get(op.op_name, 0) + op.total_ns
    kinds = sorted(kind_ns, key=lambda kind: -kind_ns[kind])
    if group:
        # One event ran every member: the group's count is its events', not their sum.
        count = max(op.profile.count for op in ops if op.profile)
    return HotspotRow(
        key=key,
        op_name=hottest.op_name if single else ", ".join(kinds),
        total_ns=total,
        share=sum(op.share for op in ops),
        count=count,
        mean_ns=total // count if count else 0,
        ops=len(ops),
        kernels=kernels,
        fused_with=fused,
        location=_where(hottest),
        op_index=hottest.index,
        estimated_ns=_estimated_ns(ops),
        group=group,
        **_step_fields(ops, samples, stat, total),
    )


@dataclass(frozen=True)
class _RowSamples:
    """Per-step times by op index, and the typical step (`Samples.typical_ns`) of the ops
    whose events could be matched step to step."""

    values: Mapping[int, Sequence[int]]
    typical: Mapping[int, float]


def _step_fields(
    ops: Sequence[ProfiledOp], samples: _RowSamples, stat: Stat, total: int
) -> dict[str, Any]:
    """A row's per-step times (the elementwise sum of its ops' samples), their spread and the
    row's `stat_ns`; an op without samples adds its attributed total to `stat_ns`. The median
    of a row whose every sampled op has a typical step is the sum of these typical steps (a
    median taken event by event) times the steps."""
    per_step: list[int] = []
    unsampled = 0
    sampled: list[int] = []
    for op in ops:
        values = samples.values.get(op.index)
        if values is None:
            unsampled += op.total_ns
            continue
        sampled.append(op.index)
        per_step = [a + b for a, b in zip(per_step or [0] * len(values), values, strict=True)]
    if not per_step or stat == "sum":
        fields: dict[str, Any] = {"stat_ns": total}
    elif stat == "median" and all(index in samples.typical for index in sampled):
        typical = sum(samples.typical[index] for index in sampled)
        fields = {"stat_ns": round(typical * len(per_step)) + unsampled}
    else:
        fields = {"stat_ns": stat_estimate(per_step, stat, total) + unsampled}
    if per_step:
        spread = step_spread(per_step)
        fields.update(
            step_ns=tuple(per_step),
            steps=spread.steps,
            step_min_ns=spread.min_ns,
            step_median_ns=spread.median_ns,
            step_max_ns=spread.max_ns,
            unstable=spread.unstable,
        )
    return fields


def _op_key(op: ProfiledOp) -> str:
    # Runtime names repeat (JAX reuses `jit(f)/add`), so the walk index keeps rows apart.
    # Ops of called functions are named through their call (`jit(mlp)/jit(relu)/max`).
    return f"{op.qualified_name}#{op.index}"


_KEYS: dict[GroupBy, Callable[[ProfiledOp], str]] = {
    "op": _op_key,
    "type": lambda op: op.op_name,
    "scope": lambda op: op.scope or "(no scope)",
}


def hotspots(
    ops: Iterable[ProfiledOp],
    *,
    by: GroupBy = "op",
    limit: int | None = None,
    profiled_ns: int | None = None,
    expand_groups: bool = False,
    level: str = "",
    samples: Mapping[int, Sequence[int]] | None = None,
    stat: Stat = "median",
    typical: Mapping[int, float] | None = None,
) -> HotspotTable:
    """Annotated ops (or their rollup by kind or scope) ranked by `stat` of their time.

    Inclusive call ops are left out: the ops of their callee carry the same time, and counting
    both would attribute more time than was profiled. By op, the ops that shared one event
    group (a fused kernel, a decomposed call) are one row holding the group's measured time,
    unless `expand_groups` lists each member with its estimated share.

    `samples`: per-step times by op index (`step_stats.load_step_samples`), which give each
    row its spread and `stat` (median, min or mean step times the steps); without them rows
    are ranked by their sum, and the table says so. `total_ns` is always the sum. `typical`:
    the ops' typical steps (`StepSamples.typical`), which the median uses where every op of a
    row has one.
    """
    if by not in _KEYS:
        raise UsageError(f"cannot group hotspots by {by!r}; choose one of {', '.join(GROUP_BYS)}")
    if stat not in STATS:
        raise UsageError(f"cannot rank hotspots by {stat!r}; choose one of {', '.join(STATS)}")
    key_of = _KEYS[by]
    groups: dict[str, list[ProfiledOp]] = {}
    inputs: dict[int, tuple[str, ...]] = {}
    for op in ops:
        if op.profile is not None and not op.inclusive:
            groups.setdefault(key_of(op), []).append(op)
            inputs[op.index] = op.inputs
    row_samples = _RowSamples(samples or {}, typical or {})
    used: Stat = stat if samples else "sum"
    note = "" if used == stat else "no per-step samples (no step markers): the sum instead"
    if by == "op" and not expand_groups:
        rows = _collapsed_rows(groups, row_samples, used)
    else:
        rows = [
            _merge(key, members, single=by == "op", samples=row_samples, stat=used)
            for key, members in groups.items()
        ]
    if by == "op":
        rows = _told_apart([_strip_index(row) for row in rows], inputs)
    total = sum(row.total_ns for row in rows)
    profiled = profiled_ns if profiled_ns is not None else total
    if used != "sum":
        # A share is of the profiled time as the statistic sees it: the rows' `stat_ns` plus
        # the time no op holds (as measured), so shares still add up to the attributed part.
        whole = sum(row.stat_ns for row in rows) + max(profiled - total, 0)
        rows = [replace(row, share=row.stat_ns / whole if whole else 0.0) for row in rows]
    rows.sort(key=lambda row: (-row.stat_ns, row.key))
    outliers = [
        outlier
        for row in rows
        for outlier in step_outliers(row.step_ns, key=row.key, op_index=row.op_index)
    ]
    outliers.sort(key=lambda item: (-item.excess_ns, item.key, item.step))
    kept = rows if limit is None else rows[: max(limit, 0)]
    return HotspotTable(
        by=by,
        rows=tuple(kept),
        total_ns=total,
        profiled_ns=profiled,
        level=level,
        stat=used,
        stat_note=note,
        outliers=tuple(outliers),
    )


def _collapsed_rows(
    groups: dict[str, list[ProfiledOp]], samples: _RowSamples, stat: Stat
) -> list[HotspotRow]:
    """Op rows, with the members of one event group merged into one row."""
    rows: list[HotspotRow] = []
    by_group: dict[str, list[ProfiledOp]] = {}
    for key, members in groups.items():
        op = members[0]
        profile = op.profile
        # An op holding more than its group measured also ran alone (a lowered matmul that
        # took its own torch op's time and a share of a small op folded into several layers):
        # it is its own row, never one of the group's.
        if profile is not None and profile.estimated and op.total_ns <= profile.group_total_ns:
            by_group.setdefault(profile.group, []).append(op)
        else:
            rows.append(_merge(key, members, single=True, samples=samples, stat=stat))
    for group, members in by_group.items():
        hottest = max(members, key=lambda op: op.total_ns)
        if len(members) == 1:
            # The other members are not rows here (trivial, inclusive or at another level):
            # the op keeps its own name, and its time stays marked as an estimated share.
            rows.append(
                _merge(
                    _op_key(hottest), members, single=True, samples=samples, stat=stat, group=group
                )
            )
            continue
        label = f"{_op_key(hottest).rpartition('#')[0]} +{len(members) - 1} ops"
        rows.append(
            _merge(
                f"{label}#{hottest.index}",
                members,
                single=False,
                samples=samples,
                stat=stat,
                group=group,
            )
        )
    return rows


KERNELS_SHOWN = 1  # event names a row of a shared name shows (then `+N`)


def _told_apart(rows: list[HotspotRow], inputs: Mapping[int, tuple[str, ...]]) -> list[HotspotRow]:
    """Rows that share a name (a Flax NNX model's projections: `jit(forward)/dot_general`
    each) get the function arguments their op reads and no other row of that name reads, as
    `[state.attn.query.kernel.value]`. Rows that still share one (the two convolutions of a
    conv's gradient, for the input and for the kernel) get the trace events only they ran, as
    the profiler names them: `[ynn_fusion.18]`, `[convolution.5 +1]`; then event groups whose
    kernels are all shared (two fusions each holding an op of the other's), the kernel the group
    is named after. A row with none of these keeps the name."""
    by_arguments = _labelled(
        rows,
        lambda row: inputs.get(row.op_index, ()),
        lambda own: ", ".join(_argument_label(name) for name in own),
    )
    by_kernels = _labelled(by_arguments, lambda row: row.kernels, _kernels_label)
    # Event groups that ran the same kernels (each holds an op of the other's): their own.
    return _labelled(
        by_kernels, lambda row: [_group_kernel(row.group)] if row.group else [], lambda own: own[0]
    )


def _group_kernel(group: str) -> str:
    """The kernel an event group is named after: `xla:ynn_fusion.1` -> `ynn_fusion.1`."""
    return group.partition(":")[2] or group


def _labelled(
    rows: list[HotspotRow],
    names_of: Callable[[HotspotRow], Sequence[str]],
    label: Callable[[list[str]], str],
) -> list[HotspotRow]:
    """`rows`, each row of a key several rows share with the names (`names_of`) no other row
    of that key has appended as `[label]`."""
    by_key: dict[str, list[int]] = {}
    for position, row in enumerate(rows):
        by_key.setdefault(row.key, []).append(position)
    told = list(rows)
    for positions in by_key.values():
        if len(positions) < 2:
            continue
        named = [names_of(rows[p]) for p in positions]
        holders = Counter(name for names in named for name in set(names))
        for position, names in zip(positions, named, strict=True):
            own = [name for name in names if holders[name] == 1]
            if own:
                told[position] = replace(told[position], key=f"{rows[position].key} [{label(own)}]")
    return told


def _kernels_label(own: list[str]) -> str:
    more = len(own) - KERNELS_SHOWN
    return ", ".join(own[:KERNELS_SHOWN]) + (f" +{more}" if more > 0 else "")


def _argument_label(name: str) -> str:
    """A pytree path as dotted keys: `state['attn']['query']['kernel'].value` ->
    `state.attn.query.kernel.value` (other names unchanged)."""
    return re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", name).lstrip(".")


def _strip_index(row: HotspotRow) -> HotspotRow:
    name, _, _ = row.key.rpartition("#")
    return replace(row, key=name)

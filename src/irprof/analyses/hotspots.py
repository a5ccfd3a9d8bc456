"""Where the time goes: ops ranked by attributed time, and rollups by op kind or name scope."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from irprof.analyses.profiled_ops import ProfiledOp
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


@dataclass(frozen=True)
class HotspotTable(Tabular):
    """Rows sorted by time (hottest first) and what they cover."""

    by: GroupBy
    rows: tuple[HotspotRow, ...]
    total_ns: int  # over all rows, not only the ones kept by `limit`
    profiled_ns: int
    level: str = ""  # the IR level the rows are ops of ("" when built from loose ops)

    def table_columns(self) -> tuple[str, ...]:
        """The fields of `HotspotRow`."""
        return row_columns(HotspotRow)

    def table_rows(self) -> list[tuple[Any, ...]]:
        """One tuple per row, hottest first."""
        return dataclass_rows(self.rows, self.table_columns())

    def table_caption(self) -> str:
        """What the rows are and the time they cover."""
        where = f"level {self.level}, " if self.level else ""
        return f"{where}by {self.by}: {self.total_ns:,} ns of {self.profiled_ns:,} ns profiled"


def _where(op: ProfiledOp) -> str:
    # A private-function op is placed at its call site: its own location is a bare primitive.
    return op.site_source or op.location


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


def _merge(key: str, ops: list[ProfiledOp], *, single: bool, group: str = "") -> HotspotRow:
    hottest = max(ops, key=lambda op: op.total_ns)
    total = sum(op.total_ns for op in ops)
    count = sum(op.profile.count for op in ops if op.profile)
    kernels = tuple(dict.fromkeys(k for op in ops if op.profile for k in op.profile.kernels))
    fused = tuple(dict.fromkeys(f for op in ops if op.profile for f in op.profile.fused_with))
    kinds = tuple(dict.fromkeys(op.op_name for op in ops))
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
    )


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
) -> HotspotTable:
    """Annotated ops (or their rollup by kind or scope) ranked by attributed time.

    Inclusive call ops are left out: the ops of their callee carry the same time, and counting
    both would attribute more time than was profiled. By op, the ops that shared one event
    group (a fused kernel, a decomposed call) are one row holding the group's measured time,
    unless `expand_groups` lists each member with its estimated share.
    """
    if by not in _KEYS:
        raise UsageError(f"cannot group hotspots by {by!r}; choose one of {', '.join(GROUP_BYS)}")
    key_of = _KEYS[by]
    groups: dict[str, list[ProfiledOp]] = {}
    for op in ops:
        if op.profile is not None and not op.inclusive:
            groups.setdefault(key_of(op), []).append(op)
    if by == "op" and not expand_groups:
        rows = _collapsed_rows(groups)
    else:
        rows = [_merge(key, members, single=by == "op") for key, members in groups.items()]
    if by == "op":
        rows = [_strip_index(row) for row in rows]
    rows.sort(key=lambda row: (-row.total_ns, row.key))
    total = sum(row.total_ns for row in rows)
    kept = rows if limit is None else rows[: max(limit, 0)]
    return HotspotTable(
        by=by,
        rows=tuple(kept),
        total_ns=total,
        profiled_ns=profiled_ns if profiled_ns is not None else total,
        level=level,
    )


def _collapsed_rows(groups: dict[str, list[ProfiledOp]]) -> list[HotspotRow]:
    """Op rows, with the members of one event group merged into one row."""
    rows: list[HotspotRow] = []
    by_group: dict[str, list[ProfiledOp]] = {}
    for key, members in groups.items():
        profile = members[0].profile
        if profile is not None and profile.estimated:
            by_group.setdefault(profile.group, []).append(members[0])
        else:
            rows.append(_merge(key, members, single=True))
    for group, members in by_group.items():
        hottest = max(members, key=lambda op: op.total_ns)
        if len(members) == 1:
            # The other members are not rows here (trivial, inclusive or at another level):
            # the op keeps its own name, and its time stays marked as an estimated share.
            rows.append(_merge(_op_key(hottest), members, single=True, group=group))
            continue
        label = f"{_op_key(hottest).rpartition('#')[0]} +{len(members) - 1} ops"
        rows.append(_merge(f"{label}#{hottest.index}", members, single=False, group=group))
    return rows


def _strip_index(row: HotspotRow) -> HotspotRow:
    name, _, _ = row.key.rpartition("#")
    return HotspotRow(**{**row.__dict__, "key": name})

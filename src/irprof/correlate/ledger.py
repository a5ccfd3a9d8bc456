"""One attribution ledger for every correlator: events in, per-op profiles and coverage out.

Design notes: docs/attribution.md, "Module notes", `correlate/ledger.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from irprof.coverage import UnmatchedEvent
from irprof.errors import CorrelationError
from irprof.mlir.op_index import OpInfo
from irprof.opprofile import OpProfileEntry, ProfileData

SHARE_BASES = ("flops", "bytes", "even")


def split_exact(duration: int, weights: Sequence[float]) -> list[int]:
    """`duration` split in proportion to `weights` into integers that add up to it exactly.

    Largest remainders get the leftover nanoseconds; all-zero weights split evenly.
    """
    if not weights:
        return []
    if duration <= 0:
        return [0] * len(weights)
    total = float(sum(weights))
    if total <= 0:
        weights, total = [1.0] * len(weights), float(len(weights))
    exact = [duration * float(w) / total for w in weights]
    shares = [int(x) for x in exact]
    leftover = duration - sum(shares)
    order = sorted(range(len(exact)), key=lambda i: exact[i] - shares[i], reverse=True)
    for index in order[:leftover]:
        shares[index] += 1
    return shares


@dataclass
class GroupRecord:
    """One multi-op group: events of one kernel/call shared over the same members."""

    members: tuple[int, ...]
    basis: str
    total_ns: int = 0
    count: int = 0


@dataclass
class OpAccount:
    """What one op received: its shares, events, partners and groups."""

    durations: list[int] = field(default_factory=list)
    first_ts_ns: int | None = None
    kernels: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # each event's start, as `kernels`
    partners: dict[int, None] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)  # group id -> ns received from it
    source: str = ""


@dataclass
class InclusiveAccount:
    """What one op contains without running it: per event instance (a trace row), the time of
    the work reached through it, in float ns until read (a view of shares, not a share)."""

    by_instance: dict[int, float] = field(default_factory=dict)
    first_ts_ns: int | None = None
    kernels: dict[str, None] = field(default_factory=dict)


@dataclass
class Ledger:
    """Event -> ops with shares, op -> events, unattributed events with reasons."""

    accounts: dict[int, OpAccount] = field(default_factory=lambda: defaultdict(OpAccount))
    inclusive: dict[int, InclusiveAccount] = field(
        default_factory=lambda: defaultdict(InclusiveAccount)
    )
    groups: dict[str, GroupRecord] = field(default_factory=dict)
    unattributed_events: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    reasons: dict[str, str] = field(default_factory=dict)
    # Events given to the ledger per name, attributed or not: an op that received fewer than
    # all of its names' events lists its own (`ProfileData.event_ts`).
    events_by_name: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    attributed_ns: int = 0
    unattributed_ns: int = 0
    estimated_ns: int = 0  # time given to ops as a share of a multi-op event

    @property
    def accounted_ns(self) -> int:
        """Every nanosecond the ledger was given, attributed or not."""
        return self.attributed_ns + self.unattributed_ns

    def record(
        self,
        event: str,
        ts_ns: int,
        dur_ns: int,
        members: Sequence[int],
        *,
        weights: Sequence[float] | None = None,
        basis: str = "even",
        group: str = "",
        source: str = "",
    ) -> list[int]:
        """Give one event's time to `members` (weights by `basis`); returns the shares."""
        if not members:
            raise CorrelationError(f"event {event!r}: recorded with no ops (use unattributed)")
        if basis not in SHARE_BASES:
            raise CorrelationError(f"unknown share basis {basis!r}; known: {SHARE_BASES}")
        members = list(dict.fromkeys(members))
        weights = list(weights) if weights is not None else [1.0] * len(members)
        if len(weights) != len(members):
            raise CorrelationError(f"event {event!r}: {len(members)} ops, {len(weights)} weights")
        shares = split_exact(int(dur_ns), weights)
        group_id = group or event
        if len(members) > 1:
            record = self.groups.setdefault(group_id, GroupRecord(tuple(members), basis))
            record.total_ns += int(dur_ns)
            record.count += 1
            self.estimated_ns += int(dur_ns)
        for position, share in zip(members, shares, strict=True):
            account = self.accounts[position]
            account.durations.append(share)
            if account.first_ts_ns is None or ts_ns < account.first_ts_ns:
                account.first_ts_ns = int(ts_ns)
            account.kernels.append(event)
            account.starts.append(int(ts_ns))
            if len(members) > 1:
                account.groups[group_id] = account.groups.get(group_id, 0) + share
                account.partners.update((p, None) for p in members if p != position)
            account.source = account.source or source
        self.events_by_name[event] += 1
        self.attributed_ns += int(dur_ns)
        return shares

    def record_with_rest(
        self,
        event: str,
        ts_ns: int,
        dur_ns: int,
        members: Sequence[int],
        weights: Sequence[float],
        rest: tuple[float, str, str],
        *,
        basis: str = "even",
        group: str = "",
        source: str = "",
    ) -> list[int]:
        """Give the part of one event that reached `members` to them and the rest to no op.

        `rest` is (weight of the work no op can be named for, event name, reason): the event is
        split once over the members' weights and that weight, so the parts add up exactly.
        """
        rest_weight, rest_event, rest_reason = rest
        shares = split_exact(int(dur_ns), [*weights, max(rest_weight, 0.0)])
        rest_ns = shares.pop()
        self.unattributed(rest_event, rest_ns, rest_reason)
        # Integer weights that add up to the duration split back into themselves.
        return self.record(
            event, ts_ns, int(dur_ns) - rest_ns, members, weights=shares, basis=basis,
            group=group, source=source,
        )  # fmt: skip

    def include(self, position: int, instance: int, event: str, ts_ns: int, ns: float) -> None:
        """Show op `position` `ns` of event `instance` (its trace row) inclusively: the op holds
        work it does not run itself (a call op, a dispatch's launch site). Not attributed time."""
        account = self.inclusive[position]
        account.by_instance[instance] = account.by_instance.get(instance, 0.0) + ns
        if account.first_ts_ns is None or ts_ns < account.first_ts_ns:
            account.first_ts_ns = int(ts_ns)
        account.kernels[event] = None

    def inclusive_data(
        self, position: int, profiled_ns: int, *, source: str, with_own: bool = False
    ) -> ProfileData:
        """The op's inclusive view as ProfileData: one duration per event instance, rounded to
        the nearest ns (half to even); `with_own` adds the op's own shares."""
        account = self.inclusive[position]
        durations = [round(account.by_instance[i]) for i in sorted(account.by_instance)]
        if with_own and position in self.accounts:
            durations += self.accounts[position].durations
        return ProfileData.from_durations(
            durations,
            account.first_ts_ns or 0,
            profiled_ns,
            kernels=sorted(account.kernels),
            source=source,
        )

    def unattributed(self, event: str, dur_ns: int, reason: str) -> None:
        """An event (or a share of one) that reached no op, and why."""
        self.unattributed_events[event].append(int(dur_ns))
        self.events_by_name[event] += 1
        self.reasons.setdefault(event, reason)
        self.unattributed_ns += int(dur_ns)

    def close(self, profiled_ns: int, where: str) -> None:
        """Refuse a ledger that lost or invented time: attributed + unattributed == profiled."""
        if self.accounted_ns != int(profiled_ns):
            raise CorrelationError(
                f"{where}: time not conserved: attributed {self.attributed_ns} ns + "
                f"unattributed {self.unattributed_ns} ns != profiled {profiled_ns} ns "
                f"(off by {self.accounted_ns - int(profiled_ns)} ns); this is a correlator bug"
            )

    @property
    def annotated(self) -> set[int]:
        """Positions of ops that received at least one event."""
        return set(self.accounts)

    def unmatched_events(self) -> list[UnmatchedEvent]:
        """Unattributed event names with their summed time, count and reason."""
        return [
            UnmatchedEvent(name, sum(durs), len(durs), self.reasons[name])
            for name, durs in self.unattributed_events.items()
        ]

    def shares_names(self, account: OpAccount) -> bool:
        """Whether events of the op's names went elsewhere too (to other ops or to none)."""
        counts: dict[str, int] = defaultdict(int)
        for name in account.kernels:
            counts[name] += 1
        return any(self.events_by_name[name] > mine for name, mine in counts.items())

    def group_of(self, position: int) -> tuple[str, GroupRecord] | None:
        """The op's main group: the one it received the most time from (None when alone)."""
        groups = self.accounts[position].groups if position in self.accounts else {}
        if not groups:
            return None
        group_id = max(groups, key=lambda g: (groups[g], g))
        return group_id, self.groups[group_id]

    def profile_data(
        self, position: int, profiled_ns: int, name_of: Callable[[int], str]
    ) -> ProfileData:
        """The op's ProfileData, with its main group's id, measured total, size and basis."""
        account = self.accounts[position]
        data = ProfileData.from_durations(
            account.durations,
            account.first_ts_ns or 0,
            profiled_ns,
            kernels=account.kernels,
            fused_with=[name_of(p) for p in account.partners],
            source=account.source,
            event_ts=account.starts if self.shares_names(account) else (),
        )
        found = self.group_of(position)
        if found is None:
            return data
        group_id, record = found
        return ProfileData(
            **{
                **data.__dict__,
                "group": group_id,
                "group_total_ns": record.total_ns,
                "group_size": len(record.members),
                "share_basis": record.basis,
            }
        )

    def entries(
        self,
        infos: Sequence[OpInfo],
        profiled_ns: int,
        *,
        location_of: Callable[[OpInfo], str],
        name_of: Callable[[int], str] | None = None,
        skip: Iterable[int] = (),
    ) -> dict[int, OpProfileEntry]:
        """Position -> OpProfile entry of every annotated op, in walk order."""
        skipped = set(skip)

        def default_name(position: int) -> str:
            info = infos[position]
            return info.keys.name or info.op_name

        name = name_of or default_name
        return {
            position: OpProfileEntry(
                infos[position].key,
                self.profile_data(position, profiled_ns, name),
                infos[position].op_name,
                location_of(infos[position]),
            )
            for position in sorted(self.accounts)
            if position not in skipped
        }

    def totals(self) -> dict[str, int]:
        """Ledger figures for `OpProfile.totals` and `Coverage.extra`."""
        return {
            "attributed_ns": self.attributed_ns,
            "unattributed_ns": self.unattributed_ns,
            "estimated_ns": self.estimated_ns,
            "groups": len(self.groups),
        }

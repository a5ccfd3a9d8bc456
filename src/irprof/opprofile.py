"""Per-op profiles: what correlators produce and the annotate pass consumes (`opprofile.json`).

An entry pairs an `OpKey` (how to find the op again from its location) with `ProfileData`
(what was measured). Keeping this file framework-free lets passes be tested on their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec
import orjson

from irprof.errors import IrprofError
from irprof.fileio import read_input_file, write_bytes_atomic

OPPROFILE_VERSION = 1
OPPROFILE_LIMIT_BYTES = 1 << 30  # far above any real profile; refuse a device or a planted one


@dataclass(frozen=True)
class OpKey:
    """Identifies an op through its location; an op matches when every non-None field equals.

    name:    the op's runtime name from its location (TF node name, JAX op_name path, FX node)
    source:  innermost source position `file:line:col`
    origin:  stable origin id stamped by `irprof-stamp-origin` (`<level>#<index>`)
    ordinal: index among the module's ops with the same (name, source), in walk order; a key
             with an ordinal names that pair exactly (an unset name or source: the op has none)
    """

    name: str | None = None
    source: str | None = None
    origin: str | None = None
    ordinal: int | None = None

    @property
    def is_empty(self) -> bool:
        """True when no field is set (such a key would vacuously match every op)."""
        return (
            self.name is None
            and self.source is None
            and self.origin is None
            and (self.ordinal is None)
        )

    def to_json(self) -> dict[str, Any]:
        """Non-None fields only."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @staticmethod
    def from_json(obj: dict[str, Any]) -> OpKey:
        """Inverse of `to_json`."""
        return OpKey(
            name=obj.get("name"),
            source=obj.get("source"),
            origin=obj.get("origin"),
            ordinal=obj.get("ordinal"),
        )


@dataclass(frozen=True)
class ProfileData:
    """Measurements of one op, the payload of the `irprof.profile` attribute."""

    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    first_ts_ns: int
    fraction: float  # share of all profiled op time
    kernels: tuple[str, ...] = ()
    fused_with: tuple[str, ...] = ()
    source: str = ""  # where the data came from, e.g. "xplane:sequential/conv/Conv2D"
    # When the op's time is a share of events that ran several ops (a fused kernel, a
    # decomposed call, an XLA fusion): the group's id, the measured total of its events, its
    # member count and how the time was split (`flops`, `bytes`, `even`). Empty when measured.
    group: str = ""
    group_total_ns: int = 0
    group_size: int = 0
    share_basis: str = ""
    # The starts of the op's own events, when the names in `kernels` also ran other ops (torch's
    # `aten::linear` of every linear layer): what picks the op's events out of the trace for
    # per-step samples. Empty when every event of those names is the op's. Not written to IR.
    event_ts: tuple[int, ...] = ()

    @property
    def estimated(self) -> bool:
        """The time is an estimated share of a group's measured time, not a measurement."""
        return self.group_size > 1

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (lists for tuples)."""
        out = asdict(self)
        out["kernels"] = list(self.kernels)
        out["fused_with"] = list(self.fused_with)
        if not self.group:
            for name in ("group", "group_total_ns", "group_size", "share_basis"):
                del out[name]
        if self.event_ts:
            out["event_ts"] = list(self.event_ts)
        else:
            del out["event_ts"]
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> ProfileData:
        """Inverse of `to_json`."""
        return ProfileData(
            count=int(obj["count"]),
            total_ns=int(obj["total_ns"]),
            mean_ns=int(obj["mean_ns"]),
            min_ns=int(obj["min_ns"]),
            max_ns=int(obj["max_ns"]),
            first_ts_ns=int(obj["first_ts_ns"]),
            fraction=float(obj["fraction"]),
            kernels=tuple(obj.get("kernels", ())),
            fused_with=tuple(obj.get("fused_with", ())),
            source=str(obj.get("source", "")),
            group=str(obj.get("group", "")),
            group_total_ns=int(obj.get("group_total_ns", 0)),
            group_size=int(obj.get("group_size", 0)),
            share_basis=str(obj.get("share_basis", "")),
            event_ts=tuple(int(ts) for ts in obj.get("event_ts", ())),
        )

    @staticmethod
    def from_durations(
        durations_ns: Iterable[int],
        first_ts_ns: int,
        profiled_ns: int,
        *,
        kernels: Iterable[str] = (),
        fused_with: Iterable[str] = (),
        source: str = "",
        event_ts: Iterable[int] = (),
    ) -> ProfileData:
        """Aggregate event durations (already shared out for fused kernels) into one record."""
        durs = [int(d) for d in durations_ns]
        if not durs:
            raise ValueError("ProfileData needs at least one duration")
        total = sum(durs)
        return ProfileData(
            count=len(durs),
            total_ns=total,
            mean_ns=total // len(durs),
            min_ns=min(durs),
            max_ns=max(durs),
            first_ts_ns=int(first_ts_ns),
            fraction=(total / profiled_ns) if profiled_ns > 0 else 0.0,
            kernels=tuple(dict.fromkeys(kernels)),
            fused_with=tuple(dict.fromkeys(fused_with)),
            source=source,
            event_ts=tuple(sorted(int(ts) for ts in event_ts)),
        )


@dataclass(frozen=True)
class OpProfileEntry:
    """One op's key and measurements, plus its IR op name and location text for humans."""

    key: OpKey
    data: ProfileData
    op_name: str = ""
    location: str = ""


@dataclass(frozen=True)
class OpProfile:
    """All per-op measurements for one IR level of one run."""

    level: str
    framework: str
    entries: tuple[OpProfileEntry, ...]
    totals: dict[str, Any] = field(default_factory=dict)  # profiled_ns, attributed_ns, steps...
    source_trace: str = ""

    def to_json(self) -> dict[str, Any]:
        """Versioned JSON form."""
        return {
            "version": OPPROFILE_VERSION,
            "level": self.level,
            "framework": self.framework,
            "source_trace": self.source_trace,
            "totals": self.totals,
            "entries": [
                {
                    "key": e.key.to_json(),
                    "op": e.op_name,
                    "loc": e.location,
                    "profile": e.data.to_json(),
                }
                for e in self.entries
            ],
        }

    @staticmethod
    def from_json(obj: dict[str, Any], *, path: str = "<opprofile>") -> OpProfile:
        """Inverse of `to_json`; rejects unknown versions with a clear message."""
        version = obj.get("version")
        if version != OPPROFILE_VERSION:
            raise IrprofError(
                f"{path}: opprofile version {version!r} is not supported "
                f"(expected {OPPROFILE_VERSION})"
            )
        try:
            entries = tuple(
                OpProfileEntry(
                    key=OpKey.from_json(e["key"]),
                    data=ProfileData.from_json(e["profile"]),
                    op_name=e.get("op", ""),
                    location=e.get("loc", ""),
                )
                for e in obj["entries"]
            )
            return OpProfile(
                level=str(obj["level"]),
                framework=str(obj.get("framework", "")),
                entries=entries,
                totals=dict(obj.get("totals", {})),
                source_trace=str(obj.get("source_trace", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IrprofError(f"{path}: malformed opprofile entry ({exc!r})") from exc

    def save(self, path: str | Path) -> None:
        """Write atomically as indented JSON."""
        write_bytes_atomic(path, orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2))

    @staticmethod
    def load(path: str | Path) -> OpProfile:
        """Read and validate an `opprofile.json`; a malformed one is an error naming the field."""
        if not os.path.lexists(path):
            raise IrprofError(f"{path}: no such opprofile file")
        data = read_input_file(path, OPPROFILE_LIMIT_BYTES)
        try:
            version = msgspec.json.decode(data, type=_VersionSchema).version
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            raise IrprofError(f"{path}: malformed opprofile: {exc}") from exc
        if version != OPPROFILE_VERSION:
            raise IrprofError(
                f"{path}: opprofile version {version!r} is not supported "
                f"(expected {OPPROFILE_VERSION})"
            )
        try:
            parsed = msgspec.json.decode(data, type=_OpProfileSchema, strict=True)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            raise IrprofError(f"{path}: malformed opprofile: {exc}") from exc
        return parsed.to_profile()


_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1e6)]  # finite; shares may exceed 1


class _VersionSchema(msgspec.Struct):
    version: Any = None


class _KeySchema(msgspec.Struct, forbid_unknown_fields=True):
    name: str | None = None
    source: str | None = None
    origin: str | None = None
    ordinal: _Count | None = None


class _ProfileSchema(msgspec.Struct, forbid_unknown_fields=True):
    count: _Count
    total_ns: _Count
    mean_ns: _Count
    min_ns: _Count
    max_ns: _Count
    first_ts_ns: _Int64
    fraction: _Fraction
    kernels: list[str] = []
    fused_with: list[str] = []
    source: str = ""
    group: str = ""
    group_total_ns: _Count = 0
    group_size: _Count = 0
    share_basis: str = ""
    event_ts: list[_Int64] = []

    def to_data(self) -> ProfileData:
        return ProfileData(
            count=self.count,
            total_ns=self.total_ns,
            mean_ns=self.mean_ns,
            min_ns=self.min_ns,
            max_ns=self.max_ns,
            first_ts_ns=self.first_ts_ns,
            fraction=self.fraction,
            kernels=tuple(self.kernels),
            fused_with=tuple(self.fused_with),
            source=self.source,
            group=self.group,
            group_total_ns=self.group_total_ns,
            group_size=self.group_size,
            share_basis=self.share_basis,
            event_ts=tuple(self.event_ts),
        )


class _EntrySchema(msgspec.Struct, forbid_unknown_fields=True):
    key: _KeySchema
    profile: _ProfileSchema
    op: str = ""
    loc: str = ""


class _OpProfileSchema(msgspec.Struct):
    """The JSON schema of `opprofile.json`; field types and ranges are checked on decode."""

    level: str
    entries: list[_EntrySchema]
    version: int = OPPROFILE_VERSION
    framework: str = ""
    source_trace: str = ""
    totals: dict[str, Any] = {}

    def to_profile(self) -> OpProfile:
        entries = tuple(
            OpProfileEntry(
                key=OpKey(e.key.name, e.key.source, e.key.origin, e.key.ordinal),
                data=e.profile.to_data(),
                op_name=e.op,
                location=e.loc,
            )
            for e in self.entries
        )
        return OpProfile(
            level=self.level,
            framework=self.framework,
            entries=entries,
            totals=dict(self.totals),
            source_trace=self.source_trace,
        )

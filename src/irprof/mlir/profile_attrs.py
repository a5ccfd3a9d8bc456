"""A profiled-op interface in Python: attach, read, test and strip per-op profiles.

Two attribute layouts:
- `irprof` (default): `irprof.profile = {count, total_ns, mean_ns, min_ns, max_ns, first_ts_ns,
  fraction, kernels = [...], fused_with = [...], source}`; integers i64, fraction f64, strings as
  StringAttr, lists as ArrayAttr of StringAttr (docs/architecture.md). When the op's time is a
  share of an event that ran several ops, also `group`, `group_total_ns`, `group_size` and
  `share_basis` (absent otherwise, so measured profiles print as before).
- `ts-dur`: `profiler_data = {ts, dur}` (i64 ns), the layout of the C++ TF-dialect pass this project
  started from, where one op had one event. Here `ts` = `first_ts_ns` (start of the op's first
  event) and `dur` = `total_ns` (all time attributed to the op), so `dur` sums to the attributed
  time over a module. Reading a `ts-dur` attribute back gives a ProfileData with count 1 (the layout
  keeps nothing else).
- `compact`: `irprof.row = N : i32` on the op, its profile in row N of the module's columnar
  `irprof.profile_table` (`irprof.mlir.profile_table`); reads back exactly as `irprof` does.

The module carries `irprof.summary = {source_trace, framework, level, profiled_ns, attributed_ns,
time_coverage, ops_total, ops_annotated, nontrivial_coverage}`.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from iree.compiler import ir

from irprof.coverage import Coverage
from irprof.errors import MlirError
from irprof.mlir.op_index import root_operation
from irprof.mlir.profile_table import ROW_ATTR, TABLE_ATTR, append_row, table_profile
from irprof.opprofile import ProfileData

PROFILE_ATTR = "irprof.profile"
TS_DUR_ATTR = "profiler_data"
SUMMARY_ATTR = "irprof.summary"
PROFILE_ATTRS = (PROFILE_ATTR, TS_DUR_ATTR, ROW_ATTR)  # per-op attributes of the layouts

Layout = Literal["irprof", "ts-dur", "compact"]
LAYOUTS: tuple[Layout, ...] = ("irprof", "ts-dur", "compact")

_INT_FIELDS = ("count", "total_ns", "mean_ns", "min_ns", "max_ns", "first_ts_ns")

# Profiles parsed per `Attribute.parse` call: one call per op costs a parser set-up each time,
# one call for 100k ops holds a ~25 MB string; a few thousand amortise the set-up.
_PARSE_BATCH = 4096

# MLIR string literals accept `\"`, `\\`, `\n`, `\t` and `\XX` escapes and reject raw
# newlines; escaping every control character, quote and backslash as `\XX` is always valid.
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\\x7f]')
_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def attribute_name(layout: Layout) -> str:
    """The op attribute a layout writes (`irprof.profile`, `profiler_data` or `irprof.row`)."""
    if layout == "irprof":
        return PROFILE_ATTR
    if layout == "ts-dur":
        return TS_DUR_ATTR
    if layout == "compact":
        return ROW_ATTR
    raise ValueError(f"unknown annotation layout {layout!r}; expected one of {LAYOUTS}")


def _escape(match: re.Match[str]) -> str:
    return f"\\{ord(match.group()):02X}"


def string_literal(value: str) -> str:
    """`value` as MLIR string-literal text (parses back to exactly `value`)."""
    # str methods run in C; the regex only runs on the rare string that needs escapes.
    if value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return f'"{_NEEDS_ESCAPE.sub(_escape, value)}"'


def _strings_literal(values: tuple[str, ...]) -> str:
    if not values:
        return "[]"
    return f"[{', '.join(map(string_literal, values))}]"


def float_literal(value: float) -> str:
    """`value` as f64 attribute text that parses back to the same bits (inf/nan as bit patterns)."""
    if not math.isfinite(value):
        return f"0x{_U64.unpack(_F64.pack(value))[0]:016X} : f64"
    # shortest text that round-trips; `float()` first: an int (or a numpy float, whose repr
    # names its type) would print as something that is not an f64 literal
    text = repr(float(value))
    if "e" in text and "." not in text:
        # MLIR float literals need a '.' ("1e-05" would lex as the integer 1 then `e`).
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0e{exponent}"
    return text  # an untyped float literal is f64, an untyped integer i64


def _check_i64(*values: int) -> None:
    # The parser would wrap 2**63..2**64-1 into negative i64 where the builder raises.
    if min(values) < _I64_MIN or max(values) > _I64_MAX:
        raise OverflowError(f"a value of {values} does not fit in i64")


def profile_text(data: ProfileData) -> str:
    """The `irprof.profile` dictionary of `data` as attribute text (keys in sorted order)."""
    _check_i64(data.count, data.first_ts_ns, data.max_ns, data.mean_ns, data.min_ns, data.total_ns)
    if data.group:
        _check_i64(data.group_total_ns, data.group_size)
        group = f"group = {string_literal(data.group)}, group_size = {data.group_size}, "
        group += f"group_total_ns = {data.group_total_ns}, "
        basis = f"share_basis = {string_literal(data.share_basis)}, "
    else:
        group = basis = ""
    return (
        f"{{count = {data.count}, first_ts_ns = {data.first_ts_ns}, "
        f"fraction = {float_literal(data.fraction)}, "
        f"fused_with = {_strings_literal(data.fused_with)}, {group}"
        f"kernels = {_strings_literal(data.kernels)}, max_ns = {data.max_ns}, "
        f"mean_ns = {data.mean_ns}, min_ns = {data.min_ns}, {basis}"
        f"source = {string_literal(data.source)}, total_ns = {data.total_ns}}}"
    )


def ts_dur_text(data: ProfileData) -> str:
    """The `profiler_data = {ts, dur}` dictionary of `data` as attribute text."""
    _check_i64(data.total_ns, data.first_ts_ns)
    return f"{{dur = {data.total_ns}, ts = {data.first_ts_ns}}}"


class AttributeBuilder:
    """Builds profile attributes in one context, reusing types and repeated strings."""

    def __init__(self, context: ir.Context) -> None:
        self.context = context
        self.i64 = ir.IntegerType.get_signless(64, context)
        self.f64 = ir.F64Type.get(context)
        self._strings: dict[str, ir.Attribute] = {}
        self._empty = ir.ArrayAttr.get([], context)
        self._loc = ir.Location.unknown(context)

    def integer(self, value: int) -> ir.Attribute:
        """An i64 IntegerAttr."""
        return ir.IntegerAttr.get(self.i64, value)

    def string(self, value: str) -> ir.Attribute:
        """A StringAttr, cached: kernel and source names repeat across ops."""
        found = self._strings.get(value)
        if found is None:
            found = ir.StringAttr.get(value, self.context)
            self._strings[value] = found
        return found

    def strings(self, values: tuple[str, ...]) -> ir.Attribute:
        """An ArrayAttr of StringAttr."""
        if not values:
            return self._empty
        return ir.ArrayAttr.get([self.string(v) for v in values], self.context)

    def profile(self, data: ProfileData) -> ir.Attribute:
        """The `irprof.profile` dictionary of `data`."""
        fields: dict[str, ir.Attribute] = {
            name: self.integer(getattr(data, name)) for name in _INT_FIELDS
        }
        fields["fraction"] = ir.FloatAttr.get(self.f64, data.fraction, self._loc)
        fields["kernels"] = self.strings(data.kernels)
        fields["fused_with"] = self.strings(data.fused_with)
        fields["source"] = self.string(data.source)
        if data.group:
            fields["group"] = self.string(data.group)
            fields["group_total_ns"] = self.integer(data.group_total_ns)
            fields["group_size"] = self.integer(data.group_size)
            fields["share_basis"] = self.string(data.share_basis)
        return ir.DictAttr.get(fields, self.context)

    def ts_dur(self, data: ProfileData) -> ir.Attribute:
        """The `profiler_data = {ts, dur}` dictionary of `data`."""
        return ir.DictAttr.get(
            {"ts": self.integer(data.first_ts_ns), "dur": self.integer(data.total_ns)},
            self.context,
        )

    def profiles(
        self, datas: Sequence[ProfileData], layout: Layout = "irprof"
    ) -> list[ir.Attribute]:
        """The attributes of many profiles, equal to `profile`/`ts_dur` of each, in order.

        Built by parsing one attribute text per batch instead of ~10 bindings calls per profile.
        In a fresh context both ways cost the same within noise (MLIR creating and uniquing the
        ~10 attributes per profile dominates, ~1.2 s per 100k); the text way keeps ~1M
        short-lived Python handles out of the heap.
        """
        if attribute_name(layout) == ROW_ATTR:  # also rejects an unknown layout
            raise ValueError("the compact layout has no per-op profile attribute")
        build, text = (
            (self.profile, profile_text) if layout == "irprof" else (self.ts_dur, ts_dur_text)
        )
        out: list[ir.Attribute] = []
        for start in range(0, len(datas), _PARSE_BATCH):
            batch = datas[start : start + _PARSE_BATCH]
            try:
                parsed = ir.Attribute.parse(f"[{', '.join(map(text, batch))}]", self.context)
            except (ir.MLIRError, OverflowError, TypeError):
                # Out-of-range integers, strings the bindings cannot encode (lone surrogates make
                # nanobind refuse the argument): the builder raises as it always did.
                out.extend(build(data) for data in batch)
                continue
            out.extend(ir.ArrayAttr(parsed))
        return out

    def value(self, value: Any) -> ir.Attribute:
        """A plain JSON-like value (int, float, str, list of str) as an attribute."""
        if isinstance(value, bool):
            return ir.BoolAttr.get(value, self.context)
        if isinstance(value, int):
            return self.integer(value)
        if isinstance(value, float):
            return ir.FloatAttr.get(self.f64, value, self._loc)
        if isinstance(value, (list, tuple)):
            return self.strings(tuple(str(v) for v in value))
        return self.string(str(value))


def attach_profile(
    op: ir.Operation,
    data: ProfileData,
    *,
    layout: Layout = "irprof",
    builder: AttributeBuilder | None = None,
) -> None:
    """Attach `data` to `op` in the chosen layout (replacing a previous profile).

    `compact` rebuilds the module's table on each call: to annotate many ops, use
    `irprof.mlir.profile_table.attach_table` (or `apply_opprofile`) once."""
    operation = op.operation
    name = attribute_name(layout)
    attributes = operation.attributes
    for other in PROFILE_ATTRS:
        if other != name and other in attributes:
            del attributes[other]
    if layout == "compact":
        append_row(operation, data)
        return
    builder = builder or AttributeBuilder(operation.context)
    build = builder.profile if layout == "irprof" else builder.ts_dur
    attributes[name] = build(data)


def _field(attr: ir.DictAttr, name: str) -> Any:
    # DictAttr.get is the static constructor here, not Mapping.get.
    return attr[name] if name in attr else None  # noqa: SIM401


def _int(attr: ir.Attribute | None) -> int:
    return int(ir.IntegerAttr(attr).value) if attr is not None else 0


def _strs(attr: ir.Attribute | None) -> tuple[str, ...]:
    if attr is None:
        return ()
    return tuple(ir.StringAttr(item).value for item in ir.ArrayAttr(attr))


# Fields that count events or nanoseconds: a negative value can only be a forged or damaged
# annotation, and summing it would subtract time (`first_ts_ns` is a time stamp, any sign).
_NON_NEGATIVE_FIELDS = ("count", "total_ns", "mean_ns", "min_ns", "max_ns", "group_total_ns",
                        "group_size")  # fmt: skip


def get_profile(op: ir.Operation) -> ProfileData | None:
    """The profile attached to `op` (any layout), or None; an MlirError naming the op and
    the field when a field has the wrong type or a count or time is negative, or the op's
    compact row is missing from its table."""
    try:
        data = _read_profile(op)
    except ValueError as exc:  # the bindings' cast of an attribute of another type
        raise MlirError(f"{_describe(op)}: profile attribute is malformed ({exc})") from exc
    if data is None:
        return None
    for name in _NON_NEGATIVE_FIELDS:
        value = getattr(data, name)
        if value < 0:
            raise MlirError(f"{_describe(op)}: profile field '{name}' = {value} is negative")
    if not math.isfinite(data.fraction) or data.fraction < 0:
        raise MlirError(
            f"{_describe(op)}: profile field 'fraction' = {data.fraction} is not a share"
        )
    return data


def _describe(op: ir.Operation) -> str:
    operation = op.operation
    return f"op '{operation.name}' at {operation.location}"


def _read_profile(op: ir.Operation) -> ProfileData | None:
    attributes = op.operation.attributes
    if PROFILE_ATTR in attributes:
        attr = ir.DictAttr(attributes[PROFILE_ATTR])
        fraction = _field(attr, "fraction")
        source = _field(attr, "source")
        group, basis = _field(attr, "group"), _field(attr, "share_basis")
        count, total, mean, low, high, first = (_int(_field(attr, n)) for n in _INT_FIELDS)
        return ProfileData(
            count=count,
            total_ns=total,
            mean_ns=mean,
            min_ns=low,
            max_ns=high,
            first_ts_ns=first,
            fraction=float(ir.FloatAttr(fraction).value) if fraction is not None else 0.0,
            kernels=_strs(_field(attr, "kernels")),
            fused_with=_strs(_field(attr, "fused_with")),
            source=ir.StringAttr(source).value if source is not None else "",
            group=ir.StringAttr(group).value if group is not None else "",
            group_total_ns=_int(_field(attr, "group_total_ns")),
            group_size=_int(_field(attr, "group_size")),
            share_basis=ir.StringAttr(basis).value if basis is not None else "",
        )
    if ROW_ATTR in attributes:
        return table_profile(op.operation)
    if TS_DUR_ATTR in attributes:
        attr = ir.DictAttr(attributes[TS_DUR_ATTR])
        ts, dur = _int(_field(attr, "ts")), _int(_field(attr, "dur"))
        return ProfileData(
            count=1, total_ns=dur, mean_ns=dur, min_ns=dur, max_ns=dur, first_ts_ns=ts,
            fraction=0.0, source="profiler_data",
        )  # fmt: skip
    return None


def has_profile(op: ir.Operation) -> bool:
    """True when `op` carries a profile in any layout (for `compact`: a row index)."""
    attributes = op.operation.attributes
    return PROFILE_ATTR in attributes or ROW_ATTR in attributes or TS_DUR_ATTR in attributes


def strip_profiles(module: ir.Module | ir.Operation) -> int:
    """Remove every profile attribute, profile table and module summary; returns how many
    were removed."""
    removed = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal removed
        attributes = op.attributes
        for name in (*PROFILE_ATTRS, TABLE_ATTR, SUMMARY_ATTR):
            if name in attributes:
                del attributes[name]
                removed += 1
        return ir.WalkResult.ADVANCE

    root_operation(module).walk(visit, ir.WalkOrder.PRE_ORDER)
    return removed


@dataclass(frozen=True)
class ModuleSummary:
    """What `irprof.summary` records on the module op (one layout, whoever annotated)."""

    source_trace: str
    framework: str
    level: str
    profiled_ns: int
    attributed_ns: int
    ops_total: int
    ops_annotated: int
    entries_unmatched: int
    time_coverage: float
    nontrivial_coverage: float
    reattached_from: str  # the upper level a lowered level was annotated from, else ""

    @staticmethod
    def of(
        coverage: Coverage,
        *,
        source_trace: str,
        framework: str,
        entries_unmatched: int = 0,
        reattached_from: str = "",
    ) -> ModuleSummary:
        """The summary of one annotate step from its coverage record."""
        return ModuleSummary(
            source_trace=source_trace,
            framework=framework,
            level=coverage.level,
            profiled_ns=coverage.profiled_ns,
            attributed_ns=coverage.attributed_ns,
            ops_total=coverage.ops_total,
            ops_annotated=coverage.ops_annotated,
            entries_unmatched=entries_unmatched,
            time_coverage=coverage.time_coverage,
            nontrivial_coverage=coverage.nontrivial_coverage,
            reattached_from=reattached_from,
        )


def attach_summary(
    module: ir.Module | ir.Operation, summary: ModuleSummary | Mapping[str, Any]
) -> None:
    """Set the module-level `irprof.summary` dictionary."""
    root = root_operation(module)
    builder = AttributeBuilder(root.context)
    fields = summary.__dict__ if isinstance(summary, ModuleSummary) else dict(summary)
    root.attributes[SUMMARY_ATTR] = ir.DictAttr.get(
        {name: builder.value(value) for name, value in fields.items()}, root.context
    )


def get_summary(module: ir.Module | ir.Operation) -> dict[str, Any] | None:
    """The module's `irprof.summary` as plain values, or None."""
    attributes = root_operation(module).attributes
    if SUMMARY_ATTR not in attributes:
        return None
    out: dict[str, Any] = {}
    for named in ir.DictAttr(attributes[SUMMARY_ATTR]):
        out[named.name] = _plain(named.attr)
    return out


def _plain(attr: ir.Attribute) -> Any:
    if isinstance(attr, ir.BoolAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.ArrayAttr):
        return [_plain(item) for item in attr]
    return str(attr)

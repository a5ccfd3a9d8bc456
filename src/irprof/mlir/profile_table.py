"""The `compact` annotation layout: one columnar profile table on the module, a row index per op.

The annotated op carries `irprof.row = N : i32`; the op `annotate` ran on (the module) carries
`irprof.profile_table = {version, rows, <one dense column per ProfileData field>, strings,
string_ends}`: each column printed once, in the narrowest integer type its values fit; string
fields index the distinct strings, kept as UTF-8 bytes and end offsets. A 100k-op module costs
~30 bytes per op plus its table instead of a ~300-byte dictionary per op. An op's row resolves
through its nearest enclosing table (decoded once per table). Docs: docs/mlir.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain, pairwise
from operator import attrgetter

import numpy as np
import numpy.typing as npt
from iree.compiler import ir

from irprof.errors import MlirError
from irprof.opprofile import ProfileData

TABLE_ATTR = "irprof.profile_table"
ROW_ATTR = "irprof.row"
TABLE_VERSION = 1

# Integer columns, named as the ProfileData fields they hold.
INT_COLUMNS = ("count", "total_ns", "mean_ns", "min_ns", "max_ns", "first_ts_ns",
               "group_total_ns", "group_size")  # fmt: skip
# String fields, stored as indices into the table's `strings` (index 0 is always "").
STRING_COLUMNS = ("source", "group", "share_basis")
# List-of-string fields: `<field>_end[r]` ends row r's slice of `<field>_ids` (CSR offsets).
LIST_COLUMNS = ("kernels", "fused_with")

IntArray = npt.NDArray[np.int64]
_WIDTHS = ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64))


@dataclass(frozen=True)
class ProfileTable:
    """Decoded profile rows: Python lists per column, so reading a row costs no numpy call."""

    ints: dict[str, list[int]]
    fraction: list[float]
    strings: tuple[str, ...]
    string_ids: dict[str, list[int]]
    lists: dict[str, tuple[list[int], list[int]]]  # field -> (end offsets, string ids)

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.fraction)

    def profile(self, row: int) -> ProfileData:
        """Row `row` as ProfileData (the caller checks the range)."""
        ints, strings, ids = self.ints, self.strings, self.string_ids
        return ProfileData(
            count=ints["count"][row],
            total_ns=ints["total_ns"][row],
            mean_ns=ints["mean_ns"][row],
            min_ns=ints["min_ns"][row],
            max_ns=ints["max_ns"][row],
            first_ts_ns=ints["first_ts_ns"][row],
            fraction=self.fraction[row],
            kernels=self._strings_of("kernels", row),
            fused_with=self._strings_of("fused_with", row),
            source=strings[ids["source"][row]],
            group=strings[ids["group"][row]],
            group_total_ns=ints["group_total_ns"][row],
            group_size=ints["group_size"][row],
            share_basis=strings[ids["share_basis"][row]],
        )

    def _strings_of(self, name: str, row: int) -> tuple[str, ...]:
        ends, ids = self.lists[name]
        start, end = ends[row - 1] if row else 0, ends[row]
        if start == end:
            return ()
        strings = self.strings
        return tuple([strings[i] for i in ids[start:end]])


def _narrowest(values: IntArray) -> npt.NDArray[np.integer]:
    """`values` in the narrowest signed integer type that holds them (i8 .. i64)."""
    if values.size == 0:
        return values.astype(np.int8)
    low, high = int(values.min()), int(values.max())
    for bits, dtype in _WIDTHS:
        if -(2 ** (bits - 1)) <= low and high < 2 ** (bits - 1):
            return values.astype(dtype)
    return values  # unreachable: the values are int64 already


def _column_attr(values: npt.NDArray[np.generic], context: ir.Context) -> ir.Attribute:
    """A 1-D dense tensor of `values`; a column of one repeated value prints as a splat."""
    if values.size > 1 and bool((values == values[0]).all()):
        element = ir.DenseElementsAttr.get(values[:1], context=context)
        shaped = ir.RankedTensorType.get([values.size], ir.ShapedType(element.type).element_type)
        return ir.DenseElementsAttr.get_splat(
            shaped, ir.DenseElementsAttr(element).get_splat_value()
        )
    return ir.DenseElementsAttr.get(values, context=context)


def table_attribute(datas: Sequence[ProfileData], context: ir.Context) -> ir.Attribute:
    """The `irprof.profile_table` dictionary holding `datas`, row r = datas[r]."""
    count = len(datas)
    # One C-level pass per kind of field (attrgetter, np.fromiter), not one per field and row.
    # np.fromiter raises OverflowError for a value outside i64, as the per-op layouts do.
    ints = np.fromiter(
        chain.from_iterable(map(attrgetter(*INT_COLUMNS), datas)),
        dtype=np.int64,
        count=count * len(INT_COLUMNS),
    ).reshape(count, len(INT_COLUMNS))
    fraction = np.fromiter(map(attrgetter("fraction"), datas), dtype=np.float64, count=count)
    named = list(chain.from_iterable(map(attrgetter(*STRING_COLUMNS), datas)))
    lists = {name: list(map(attrgetter(name), datas)) for name in LIST_COLUMNS}
    flat = {name: list(chain.from_iterable(values)) for name, values in lists.items()}
    unique = list(dict.fromkeys(chain(("",), named, *flat.values())))
    index = dict(zip(unique, range(len(unique)), strict=True))
    ids = np.fromiter(map(index.__getitem__, named), dtype=np.int64, count=len(named))
    ids = ids.reshape(count, len(STRING_COLUMNS))
    # Group fields mean nothing without a group; the per-op layout drops them too.
    no_group = ids[:, STRING_COLUMNS.index("group")] == 0
    for name in ("group_total_ns", "group_size"):
        ints[no_group, INT_COLUMNS.index(name)] = 0
    ids[no_group, STRING_COLUMNS.index("share_basis")] = 0
    fields: dict[str, ir.Attribute] = {}
    with ir.Location.unknown(context):
        for position, name in enumerate(INT_COLUMNS):
            fields[name] = _column_attr(_narrowest(ints[:, position]), context)
        fields["fraction"] = _column_attr(fraction, context)
        for position, name in enumerate(STRING_COLUMNS):
            fields[name] = _column_attr(_narrowest(ids[:, position]), context)
        for name in LIST_COLUMNS:
            ends = np.cumsum(np.fromiter(map(len, lists[name]), dtype=np.int64, count=count))
            list_ids = np.fromiter(map(index.__getitem__, flat[name]), dtype=np.int64)
            fields[f"{name}_end"] = _column_attr(_narrowest(ends), context)
            fields[f"{name}_ids"] = _column_attr(_narrowest(list_ids), context)
        i64 = ir.IntegerType.get_signless(64, context)
        fields["version"] = ir.IntegerAttr.get(i64, TABLE_VERSION)
        fields["rows"] = ir.IntegerAttr.get(i64, count)
        fields["strings"], fields["string_ends"] = _strings_attrs(unique, context)
    return ir.DictAttr.get(fields, context)


def _strings_attrs(strings: list[str], context: ir.Context) -> tuple[ir.Attribute, ir.Attribute]:
    """The UTF-8 bytes of all strings as one i8 tensor, and the byte offset where each ends.

    Not an ArrayAttr of StringAttr (the printer visits each element, ~1 s per 100k) nor one
    StringAttr (printed a character at a time, ~0.2 s per 2 MB): a dense tensor prints as hex
    in ~0.02 s, for twice the bytes."""
    try:
        joined = "".join(strings).encode("utf-8")
        # ASCII (one byte per character, the usual case): the ends are the character counts.
        lengths = map(len, strings if len(joined) == sum(map(len, strings)) else _encoded(strings))
    except UnicodeEncodeError as exc:
        raise ValueError(f"a profile string cannot be written as UTF-8: {exc}") from None
    ends = np.cumsum(np.fromiter(lengths, dtype=np.int64, count=len(strings)))
    blob = np.frombuffer(joined, dtype=np.int8)
    return _column_attr(blob, context), _column_attr(_narrowest(ends), context)


def _encoded(strings: list[str]) -> list[bytes]:
    return [value.encode("utf-8") for value in strings]


def row_attributes(rows: int, context: ir.Context) -> list[ir.Attribute]:
    """`irprof.row` values 0 .. rows-1 (i32), one builder call each (~1 us; parsing them from
    text in batches costs ~2 us per row)."""
    i32 = ir.IntegerType.get_signless(32, context)
    get = ir.IntegerAttr.get
    return [get(i32, row) for row in range(rows)]


class TableError(ValueError):
    """A malformed `irprof.profile_table` (the caller names the op that holds it)."""


def _column(table: ir.DictAttr, name: str, length: int) -> npt.NDArray[np.generic]:
    if name not in table:
        raise TableError(f"column '{name}' is missing")
    attr = table[name]
    try:
        values = np.asarray(
            ir.DenseFPElementsAttr(attr) if name == "fraction" else ir.DenseIntElementsAttr(attr)
        )
    except ValueError:
        kind = "f64" if name == "fraction" else "integer"
        raise TableError(f"column '{name}' is not a dense {kind} tensor ({_brief(attr)})") from None
    expected = np.float64 if name == "fraction" else np.signedinteger
    if values.ndim != 1 or not np.issubdtype(values.dtype, expected):
        raise TableError(f"column '{name}' is not a 1-D tensor of signed integers or f64")
    if length >= 0 and values.shape[0] != length:
        raise TableError(f"column '{name}' has {values.shape[0]} values, expected {length}")
    return values


def _brief(attr: ir.Attribute) -> str:
    """The start of an attribute's text: a damaged table may hold megabytes."""
    text = str(attr)
    return text if len(text) <= 60 else f"{text[:60]}..."


def _ids(values: npt.NDArray[np.generic], name: str, limit: int) -> list[int]:
    if values.size and (int(values.min()) < 0 or int(values.max()) >= limit):
        raise TableError(f"column '{name}' indexes outside the {limit} strings")
    return [int(v) for v in values.tolist()]


def decode_table(attr: ir.Attribute) -> ProfileTable:
    """Decode and check an `irprof.profile_table`; TableError says what is wrong."""
    return _decode_cached(attr)


# Keyed by the (uniqued, immutable) table attribute: `get_profile` on each of 100k ops decodes
# the table once. The cache holds a reference to the attribute, hence to its context.
@lru_cache(maxsize=4)
def _decode_cached(attr: ir.Attribute) -> ProfileTable:
    if not isinstance(attr, ir.DictAttr):
        raise TableError(f"not a dictionary ({_brief(attr)})")
    table = ir.DictAttr(attr)
    version = _scalar(table, "version")
    if version != TABLE_VERSION:
        raise TableError(f"version {version} is not {TABLE_VERSION}; re-run `irprof annotate`")
    rows = _scalar(table, "rows")
    if rows < 0:
        raise TableError(f"rows = {rows} is negative")
    strings = _strings(table)
    lists: dict[str, tuple[list[int], list[int]]] = {}
    for name in LIST_COLUMNS:
        ends = _column(table, f"{name}_end", rows)
        ids = _column(table, f"{name}_ids", -1)
        if ends.size and (int(ends[0]) < 0 or bool((np.diff(ends) < 0).any())):
            raise TableError(f"column '{name}_end' is not a non-decreasing list of offsets")
        if (int(ends[-1]) if ends.size else 0) != ids.shape[0]:
            raise TableError(f"column '{name}_end' does not end at the {ids.shape[0]} ids")
        lists[name] = ([int(v) for v in ends.tolist()], _ids(ids, f"{name}_ids", len(strings)))
    return ProfileTable(
        ints={name: [int(v) for v in _column(table, name, rows).tolist()] for name in INT_COLUMNS},
        fraction=[float(v) for v in _column(table, "fraction", rows).tolist()],
        strings=strings,
        string_ids={
            name: _ids(_column(table, name, rows), name, len(strings)) for name in STRING_COLUMNS
        },
        lists=lists,
    )


def _strings(table: ir.DictAttr) -> tuple[str, ...]:
    """The strings of `strings` (UTF-8 bytes) cut at `string_ends` (byte offsets)."""
    blob = _column(table, "strings", -1).astype(np.uint8).tobytes()  # i8 keeps the bit pattern
    ends = [int(v) for v in _column(table, "string_ends", -1).tolist()]
    if not ends or ends[0] != 0:
        raise TableError("'string_ends' must start with 0 (the empty string)")
    if any(end < start for start, end in pairwise(ends)) or ends[-1] != len(blob):
        raise TableError(
            f"'string_ends' is not a non-decreasing list of offsets ending at {len(blob)}"
        )
    try:
        return tuple(blob[start:end].decode("utf-8") for start, end in pairwise([0, *ends]))
    except UnicodeDecodeError as exc:
        raise TableError(f"'string_ends' cuts a UTF-8 character ({exc})") from None


def _scalar(table: ir.DictAttr, name: str) -> int:
    if name not in table or not isinstance(table[name], ir.IntegerAttr):
        raise TableError(f"'{name}' is missing or not an integer")
    return int(ir.IntegerAttr(table[name]).value)


def table_holder(op: ir.Operation) -> ir.Operation | None:
    """The nearest op enclosing `op` (or `op` itself) that carries `irprof.profile_table`."""
    current: ir.Operation | None = op
    while current is not None:
        if TABLE_ATTR in current.attributes:
            return current
        current = current.parent
    return None


def attach_table(
    root: ir.Operation,
    rows: Sequence[tuple[ProfileData, Sequence[ir.Operation]]],
    *,
    replaces: tuple[str, ...] = (),
) -> None:
    """Write `irprof.profile_table` of `rows` on `root` and `irprof.row` on each row's ops.

    A table already on `root` is replaced; ops under it that keep a row of the old table (the new
    rows do not name them) keep their profile, copied into the new table. `replaces` are per-op
    attributes of other layouts removed from the ops written, so no op carries two profiles.
    """
    ops = [op for _, row_ops in rows for op in row_ops]
    ends = list(accumulate(len(row_ops) for _, row_ops in rows))
    positions = [
        range(end - len(row_ops), end) for end, (_, row_ops) in zip(ends, rows, strict=True)
    ]
    write_table(root, [data for data, _ in rows], ops, positions, replaces=replaces)


def write_table(
    root: ir.Operation,
    datas: Sequence[ProfileData],
    ops: Sequence[ir.Operation],
    positions: Sequence[Sequence[int]],
    *,
    replaces: tuple[str, ...] = (),
) -> None:
    """`attach_table` of rows given as `datas[r]` for the ops `ops[p]`, p in `positions[r]`.

    The form `apply_opprofile` has at hand (an index's ops and each entry's matched positions):
    no list of ops per row is built."""
    if len(datas) != len(positions):
        raise ValueError(f"{len(datas)} rows of data for {len(positions)} rows of positions")
    datas = list(datas)
    carried: dict[int, list[ir.Operation]] = {}  # old row -> ops keeping it
    if TABLE_ATTR in root.attributes:
        written = {ops[p].operation for row in positions for p in row}  # views compare as ops
        old = _decode_on(root)
        for op in _ops_with_rows(root):
            if op not in written:
                carried.setdefault(_row_index(op, old.rows), []).append(op)
        datas.extend(old.profile(old_row) for old_row in carried)
    context = root.context
    root.attributes[TABLE_ATTR] = table_attribute(datas, context)
    row_attrs = row_attributes(len(datas), context)
    # The ops of row r are `ops[p]` for p in positions[r], then the carried rows' ops: no list
    # or iterator per row (the loop runs once per op, ~1 us of bindings calls each).
    for attribute, row in zip(row_attrs, positions, strict=False):
        for position in row:  # `_set_row` inlined: this loop runs once per op
            attributes = ops[position].attributes  # a new bindings object per access
            attributes[ROW_ATTR] = attribute
            for name in replaces:
                if name in attributes:
                    del attributes[name]
    for attribute, kept in zip(row_attrs[len(positions) :], carried.values(), strict=True):
        for op in kept:
            _set_row(op.attributes, attribute, replaces)


def _set_row(attributes: ir.OpAttributeMap, row: ir.Attribute, replaces: tuple[str, ...]) -> None:
    attributes[ROW_ATTR] = row
    for name in replaces:
        if name in attributes:
            del attributes[name]


def _ops_with_rows(root: ir.Operation) -> list[ir.Operation]:
    """Ops under `root` with `irprof.row` that resolve to `root`'s table (not a nested one)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        attributes = op.attributes
        if TABLE_ATTR in attributes and op != root:
            return ir.WalkResult.SKIP
        if ROW_ATTR in attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def append_row(op: ir.Operation, data: ProfileData) -> None:
    """Attach `data` to one op: a row appended to its nearest table (made on its outermost
    ancestor when there is none). Rebuilds the table: for many ops use `attach_table`."""
    holder = table_holder(op)
    if holder is None:
        holder = op
        while holder.parent is not None:
            holder = holder.parent
        datas = [data]
    else:
        old = _decode_on(holder)
        datas = [*(old.profile(row) for row in range(old.rows)), data]
    context = holder.context
    holder.attributes[TABLE_ATTR] = table_attribute(datas, context)
    op.attributes[ROW_ATTR] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(32, context), len(datas) - 1
    )


def describe_op(op: ir.Operation) -> str:
    """`op 'name' at loc(...)`, how errors name an op."""
    return f"op '{op.name}' at {op.location}"


def _decode_on(holder: ir.Operation) -> ProfileTable:
    try:
        return decode_table(holder.attributes[TABLE_ATTR])
    except TableError as exc:
        raise MlirError(
            f"{describe_op(holder)}: {TABLE_ATTR} is malformed: {exc}; re-run `irprof annotate`"
        ) from None


def _row_index(op: ir.Operation, rows: int) -> int:
    attr = op.attributes[ROW_ATTR]
    if not isinstance(attr, ir.IntegerAttr) or isinstance(attr, ir.BoolAttr):
        raise MlirError(
            f"{describe_op(op)}: {ROW_ATTR} = {_brief(attr)} is not an integer row index"
        )
    row = int(ir.IntegerAttr(attr).value)
    if not 0 <= row < rows:
        raise MlirError(
            f"{describe_op(op)}: {ROW_ATTR} = {row} is outside the profile table's {rows} rows"
        )
    return row


def table_profile(op: ir.Operation) -> ProfileData:
    """The profile of an op carrying `irprof.row`, read from its nearest enclosing table."""
    holder = table_holder(op)
    if holder is None:
        raise MlirError(
            f"{describe_op(op)}: carries {ROW_ATTR} but no enclosing op has {TABLE_ATTR}; "
            "re-run `irprof annotate` or strip the annotations"
        )
    table = _decode_on(holder)
    return table.profile(_row_index(op, table.rows))

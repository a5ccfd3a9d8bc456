"""Ops of a module with their correlation keys, and the index that finds ops by `OpKey`.

`derive_op_infos`/`derive_op_keys` walk a module once (pre-order) and give every op the keys of
`irprof.mlir.keys` (`derive_key_columns`: the same keys as one list per field, the form
`apply_opprofile` uses on large modules); `OpIndex` answers "which ops does this opprofile entry
designate". It is the
one op index: a correlator that needs more (TF runtime names, JAX's HLO identities) extends it
(`frameworks/tf/graph.TfOpIndex`, `frameworks/jax/ir_index.JaxOpIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from iree.compiler import ir

from irprof.mlir.gc_pause import gc_paused
from irprof.mlir.keys import ORIGIN_PREFIX, LocationKeys, location_keys, name_chain_keys
from irprof.mlir.locations import Loc, from_ir
from irprof.opprofile import OpKey


@dataclass(frozen=True)
class OpInfo:
    """One op of a module with its derived keys and `OpKey`; the typed location on demand."""

    op: ir.Operation
    op_name: str
    keys: LocationKeys
    key: OpKey
    # The location as derived: it stays valid (owned by the context) if a later pass changes or
    # erases the op. Its bindings object hashes by identity, hence out of eq/hash.
    location: ir.Location = field(compare=False, repr=False)

    @cached_property
    def loc(self) -> Loc:
        """The op's location as the typed model (built on first use: most ops never need it)."""
        return from_ir(self.location)


def root_operation(module: ir.Module | ir.Operation) -> ir.Operation:
    """The top-level operation of a module (passes receive the op, callers often the module)."""
    return module.operation if isinstance(module, ir.Module) else module


def walk_ops(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    """Every op below the module op in pre-order (textual order); never iterates blocks."""
    ops: list[ir.Operation] = []
    root = root_operation(module)

    append, advance = ops.append, ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        append(op)
        return advance

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    # The walk visits the root first in pre-order; it is the container, not an op of the model.
    return ops[1:]


def derive_op_infos(module: ir.Module | ir.Operation) -> list[OpInfo]:
    """Keys of every op in walk (pre-)order; the ordinal counts equal (name, source) pairs."""
    with gc_paused():
        return _derive_op_infos(module)


class _ModelKeys:
    """`location_keys(from_ir(location))` memoised per distinct location.

    Ops lowered from one source op share a location. The bindings hand out a new `ir.Location`
    per access that hashes by identity, so the memo is keyed by its `LocationAttr`, which hashes
    and compares as the uniqued MLIR object (~0.5 us a lookup against ~30 us for a call-site
    chain). Only shapes the name-chain fast path cannot read come here.
    """

    def __init__(self) -> None:
        self._memo: dict[ir.Attribute, LocationKeys] = {}
        self._locs: dict[ir.Attribute, Loc] = {}  # shared sub-locations, converted once

    def __call__(self, location: ir.Location) -> LocationKeys:
        attr = location.attr
        keys = self._memo.get(attr)
        if keys is None:
            keys = location_keys(from_ir(location, self._locs))
            self._memo[attr] = keys
        return keys


def _derive_op_infos(module: ir.Module | ir.Operation) -> list[OpInfo]:
    model_keys = _ModelKeys()
    seen: dict[tuple[str | None, str | None], int] = {}
    infos: list[OpInfo] = []
    for op in walk_ops(module):
        location = op.location
        keys = name_chain_keys(location)
        if keys is None:
            keys = model_keys(location)
        pair = (keys.name, keys.source)
        ordinal = seen.get(pair, 0)
        seen[pair] = ordinal + 1
        key = OpKey(name=keys.name, source=keys.source, origin=keys.origin, ordinal=ordinal)
        infos.append(OpInfo(op, op.name, keys, key, location))
    return infos


def derive_op_keys(module: ir.Module | ir.Operation) -> list[tuple[ir.Operation, OpKey]]:
    """`(op, OpKey)` for every op below the module op, in walk (pre-)order."""
    with gc_paused():
        columns = _derive_key_columns(module)
        return list(zip(columns.ops, columns.keys(), strict=True))


class KeyColumns:
    """The `OpKey` fields of every op below a module op, one list per field, in walk order.

    What `derive_op_keys` gives without an `OpKey` object per op (~2 us each). Computed on first
    use, as most profiles key on names alone: `sources` (an op whose location ends in a file
    position keeps that FileLineColLoc until then: three bindings calls and a string saved per
    op) and `ordinals` (one dict update per op).
    """

    def __init__(
        self,
        ops: list[ir.Operation],
        names: list[str | None],
        sources: list[str | ir.FileLineColLoc | None],
        origins: list[str | None],
    ) -> None:
        self.ops = ops
        self.names = names
        self._sources = sources
        self.origins = origins

    @cached_property
    def sources(self) -> list[str | None]:
        """Each op's innermost source position `file:line:col`, or None."""
        return [
            f"{source.filename}:{source.start_line}:{source.start_col}"
            if isinstance(source, ir.FileLineColLoc)
            else source
            for source in self._sources
        ]

    @cached_property
    def ordinals(self) -> list[int | None]:
        """Each op's index among the ops with the same (name, source), in walk order."""
        seen: dict[tuple[str | None, str | None], int] = {}
        ordinals: list[int | None] = []
        append = ordinals.append
        for pair in zip(self.names, self.sources, strict=True):
            ordinal = seen.get(pair, 0)
            seen[pair] = ordinal + 1
            append(ordinal)
        return ordinals

    def keys(self) -> list[OpKey]:
        """The `OpKey` of every op."""
        return [
            OpKey(name=name, source=source, origin=origin, ordinal=ordinal)
            for name, source, origin, ordinal in zip(
                self.names, self.sources, self.origins, self.ordinals, strict=True
            )
        ]


def derive_key_columns(module: ir.Module | ir.Operation) -> KeyColumns:
    """The keys of `derive_op_keys` as columns (tests hold the two equal)."""
    with gc_paused():
        return _derive_key_columns(module)


def _derive_key_columns(module: ir.Module | ir.Operation) -> KeyColumns:
    # `keys.key_fields` inlined (a call per op is ~10% of this loop) for NameLoc chains ending in
    # a file position or unknown; any other shape goes through the location model. Each op's
    # location is read once, and only the fields a key needs.
    model_keys = _ModelKeys()
    ops = walk_ops(module)
    names: list[str | None] = []
    sources: list[str | ir.FileLineColLoc | None] = []
    origins: list[str | None] = []
    name_loc, file_loc, unknown_loc = ir.NameLoc, ir.FileLineColLoc, ir.UnknownLoc
    prefix, cut = ORIGIN_PREFIX, len(ORIGIN_PREFIX)
    for op in ops:
        location = op.location
        kind = type(location)
        name: str | None = None
        origin: str | None = None
        # Same order of tests as `key_fields`: the first kept name, the outermost origin.
        while kind is name_loc:
            text = location.name_str
            if text.startswith(prefix):
                if origin is None:
                    origin = text[cut:]
            elif name is None and not (text.endswith(":") and "/" not in text):  # type marker
                name = text
            location = location.child_loc
            kind = type(location)
        if kind is file_loc:
            source: str | ir.FileLineColLoc | None = location  # `KeyColumns.sources` formats it
        elif kind is unknown_loc:
            source = None
        else:
            keys = model_keys(op.location)
            name, source, origin = keys.name, keys.source, keys.origin
        names.append(name)
        sources.append(source)
        origins.append(origin)
    return KeyColumns(ops, names, sources, origins)


_KEY_FIELDS = ("name", "source", "origin")


class OpIndex:
    """Finds the ops an `OpProfile` entry's key designates (every non-None field must equal)."""

    def __init__(self, keyed_ops: Sequence[tuple[ir.Operation, OpKey]]) -> None:
        keyed = list(keyed_ops)
        keys = [key for _, key in keyed]
        self._init(
            KeyColumns(
                [op for op, _ in keyed],
                [key.name for key in keys],
                [key.source for key in keys],
                [key.origin for key in keys],
            ),
            [key.ordinal for key in keys],
        )

    def _init(self, columns: KeyColumns, ordinals: list[int | None] | None) -> None:
        self._columns = columns
        self._given_ordinals = ordinals  # None: the columns count them (derived keys)
        # One table per key field, built on first use: profiles usually key on one or two.
        self._tables: dict[str, dict[str, list[int]]] = {}

    @staticmethod
    def of_columns(columns: KeyColumns) -> OpIndex:
        """Index derived key columns (`derive_key_columns`) without an `OpKey` per op."""
        index = OpIndex.__new__(OpIndex)
        index._init(columns, None)
        return index

    def _column(self, key_field: str) -> Sequence[str | None]:
        columns = self._columns
        if key_field == "name":
            return columns.names
        if key_field == "source":
            return columns.sources
        return columns.origins

    def _ordinals(self) -> list[int | None]:
        given = self._given_ordinals
        return given if given is not None else self._columns.ordinals

    def _table(self, key_field: str) -> dict[str, list[int]]:
        table = self._tables.get(key_field)
        if table is None:
            table = {}
            for position, value in enumerate(self._column(key_field)):
                if value is not None:
                    found = table.get(value)
                    if found is None:
                        table[value] = [position]
                    else:
                        found.append(position)
            self._tables[key_field] = table
        return table

    @staticmethod
    def of_module(module: ir.Module | ir.Operation) -> OpIndex:
        """Index every op of `module`."""
        return OpIndex.of_columns(derive_key_columns(module))

    @staticmethod
    def of_infos(infos: Sequence[OpInfo]) -> OpIndex:
        """Index ops already derived with `derive_op_infos`."""
        return OpIndex([(info.op, info.key) for info in infos])

    def __len__(self) -> int:
        return len(self._columns.ops)

    def match_positions(self, wanted: OpKey) -> list[int]:
        """Walk-order positions of the ops matching `wanted`."""
        candidates: list[int] | range | None = None
        fields_set = 0
        for key_field, value in (
            ("origin", wanted.origin),
            ("name", wanted.name),
            ("source", wanted.source),
        ):
            if value is not None:
                fields_set += 1
                found = self._table(key_field).get(value, [])
                if candidates is None or len(found) < len(candidates):
                    candidates = found
        if candidates is None:
            candidates = range(len(self))
        elif fields_set == 1 and wanted.ordinal is None:
            return list(candidates)  # the table already holds exactly the ops with that value
        counted = wanted.ordinal is not None
        checks: list[tuple[Sequence[object], object]] = [
            (self._column(key_field), value)
            for key_field, value in zip(
                _KEY_FIELDS, (wanted.name, wanted.source, wanted.origin), strict=True
            )
            # An ordinal counts ops of one exact (name, source) pair: with it, an unset name or
            # source means the op has none (else `(while, None)#0` also picks `(while, f.py:1)#0`).
            if value is not None or (counted and key_field != "origin")
        ]
        if counted:
            checks.append((self._ordinals(), wanted.ordinal))
        return [p for p in candidates if all(column[p] == value for column, value in checks)]

    def match_many(self, wanted: Sequence[OpKey], *, skip_empty: bool = False) -> list[list[int]]:
        """`match_positions` of each key, in order; a key naming only a runtime name (what most
        opprofile entries hold) is one dictionary look-up instead of the general path.
        `skip_empty`: a key without any field matches no op (instead of every op)."""
        names = self._table("name")
        out: list[list[int]] = []
        append = out.append
        for key in wanted:
            if key.source is None and key.origin is None and key.ordinal is None:
                name = key.name
                if name is not None:
                    append(list(names.get(name, ())))
                    continue
                if skip_empty:
                    append([])
                    continue
            append(self.match_positions(key))
        return out

    def match(self, wanted: OpKey) -> list[ir.Operation]:
        """The ops matching `wanted`, in walk order."""
        ops = self._columns.ops
        return [ops[p] for p in self.match_positions(wanted)]

    def key_at(self, position: int) -> OpKey:
        """The derived key of the op at walk-order `position`."""
        columns = self._columns
        return OpKey(
            name=columns.names[position],
            source=columns.sources[position],
            origin=columns.origins[position],
            ordinal=self._ordinals()[position],
        )

    def op_at(self, position: int) -> ir.Operation:
        """The op at walk-order `position`."""
        return self._columns.ops[position]

    def keyed_ops(self) -> list[tuple[ir.Operation, OpKey]]:
        """`(op, OpKey)` of every indexed op, in walk order (what `derive_op_keys` gives)."""
        columns = self._columns
        keys = zip(columns.names, columns.sources, columns.origins, self._ordinals(), strict=True)
        return [
            (op, OpKey(name=name, source=source, origin=origin, ordinal=ordinal))
            for op, (name, source, origin, ordinal) in zip(columns.ops, keys, strict=True)
        ]

    @property
    def ops(self) -> list[ir.Operation]:
        """Every indexed op, in walk order (position p is `op_at(p)`; do not modify)."""
        return self._columns.ops

"""Ops of a module with their correlation keys, and the index that finds ops by `OpKey`.

`derive_op_infos`/`derive_op_keys` walk a module once (pre-order) and give every op the keys of
`irprof.mlir.keys`; `OpIndex` answers "which ops does this opprofile entry designate". It is the
one op index: a correlator that needs more (TF runtime names, JAX's HLO identities) extends it
(`frameworks/tf/graph.TfOpIndex`, `frameworks/jax/ir_index.JaxOpIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

from iree.compiler import ir

from irprof.mlir.gc_pause import gc_paused
from irprof.mlir.keys import LocationKeys, key_fields, location_keys, name_chain_keys
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

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

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

    def __call__(self, location: ir.Location) -> LocationKeys:
        attr = location.attr
        keys = self._memo.get(attr)
        if keys is None:
            keys = location_keys(from_ir(location))
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
        return _derive_op_keys(module)


def _derive_op_keys(module: ir.Module | ir.Operation) -> list[tuple[ir.Operation, OpKey]]:
    # The same keys as `derive_op_infos` (tests hold the two equal) without LocationKeys/OpInfo.
    model_keys = _ModelKeys()
    seen: dict[tuple[str | None, str | None], int] = {}
    keyed: list[tuple[ir.Operation, OpKey]] = []
    for op in walk_ops(module):
        location = op.location
        fields = key_fields(location)
        if fields is None:
            keys = model_keys(location)
            fields = (keys.name, keys.source, keys.origin)
        name, source, origin = fields
        pair = (name, source)
        ordinal = seen.get(pair, 0)
        seen[pair] = ordinal + 1
        keyed.append((op, OpKey(name=name, source=source, origin=origin, ordinal=ordinal)))
    return keyed


class OpIndex:
    """Finds the ops an `OpProfile` entry's key designates (every non-None field must equal)."""

    def __init__(self, keyed_ops: Sequence[tuple[ir.Operation, OpKey]]) -> None:
        self._ops = list(keyed_ops)
        # One table per key field, built on first use: profiles usually key on one or two.
        self._tables: dict[str, dict[str, list[int]]] = {}

    def _table(self, key_field: str) -> dict[str, list[int]]:
        table = self._tables.get(key_field)
        if table is None:
            table = {}
            value_of = attrgetter(key_field)
            for position, (_, key) in enumerate(self._ops):
                value = value_of(key)
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
        return OpIndex(derive_op_keys(module))

    @staticmethod
    def of_infos(infos: Sequence[OpInfo]) -> OpIndex:
        """Index ops already derived with `derive_op_infos`."""
        return OpIndex([(info.op, info.key) for info in infos])

    def __len__(self) -> int:
        return len(self._ops)

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
            candidates = range(len(self._ops))
        elif fields_set == 1 and wanted.ordinal is None:
            return list(candidates)  # the table already holds exactly the ops with that value
        ops = self._ops
        return [p for p in candidates if _key_matches(wanted, ops[p][1])]

    def match(self, wanted: OpKey) -> list[ir.Operation]:
        """The ops matching `wanted`, in walk order."""
        return [self._ops[p][0] for p in self.match_positions(wanted)]

    def key_at(self, position: int) -> OpKey:
        """The derived key of the op at walk-order `position`."""
        return self._ops[position][1]

    def op_at(self, position: int) -> ir.Operation:
        """The op at walk-order `position`."""
        return self._ops[position][0]


def _key_matches(wanted: OpKey, actual: OpKey) -> bool:
    return (
        (wanted.name is None or wanted.name == actual.name)
        and (wanted.source is None or wanted.source == actual.source)
        and (wanted.origin is None or wanted.origin == actual.origin)
        and (wanted.ordinal is None or wanted.ordinal == actual.ordinal)
    )

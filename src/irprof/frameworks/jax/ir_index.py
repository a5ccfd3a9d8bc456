"""StableHLO ops indexed by the identity XLA keeps in HLO metadata: (op name, source chain).

Design notes: docs/jax.md, "Module notes", `frameworks/jax/ir_index.py`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from iree.compiler import ir

from irprof.capture.paths import IMPORT_ROOT
from irprof.mlir.cost_shapes import shape_of
from irprof.mlir.op_index import OpIndex, OpInfo

# HLO opcode -> StableHLO/CHLO op mnemonics it implements, where the names differ.
OPCODE_ALIASES: dict[str, frozenset[str]] = {
    "dot": frozenset({"dot_general", "dot"}),
    "broadcast": frozenset({"broadcast_in_dim", "broadcast"}),
    "reduce-window": frozenset({"reduce_window"}),
    "custom-call": frozenset({"custom_call"}),
    "bitcast-convert": frozenset({"bitcast_convert"}),
    "dynamic-slice": frozenset({"dynamic_slice"}),
    "dynamic-update-slice": frozenset({"dynamic_update_slice"}),
    "exponential-minus-one": frozenset({"exponential_minus_one"}),
    "log-plus-one": frozenset({"log_plus_one"}),
    "round-nearest-even": frozenset({"round_nearest_even"}),
    "round-nearest-afz": frozenset({"round_nearest_afz"}),
}


# Instructions XLA's simplifier merges data movement into, keeping the moved value's metadata.
FOLDING_COMPUTE = frozenset({"dot", "convolution"})
# The data movement it folds into them (a transpose, a reshape of the result).
FOLDED_MOVEMENT = frozenset({"transpose", "reshape", "broadcast_in_dim", "convert", "copy"})
MAX_FOLDED_HOPS = 3


def implements(opcode: str, ir_op_name: str) -> bool:
    """True when HLO `opcode` is the direct translation of the IR op (`stablehlo.add`: `add`)."""
    mnemonic = ir_op_name.partition(".")[2]
    aliases = OPCODE_ALIASES.get(opcode)
    return mnemonic in aliases if aliases is not None else mnemonic == opcode.replace("-", "_")


@dataclass(frozen=True)
class IrTarget:
    """How an HLO instruction reaches an IR op: the op and the call ops it was inlined through."""

    position: int  # walk-order position among the module's ops (derive_op_infos)
    via_calls: tuple[int, ...]  # positions of the func.call ops, innermost call first


@dataclass(frozen=True)
class _Identity:
    name: str
    chain: tuple[str, ...]
    via_calls: tuple[int, ...]


def _string_attr(op: ir.Operation, name: str) -> str | None:
    """Value of a string or flat-symbol-ref attribute, or None."""
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if isinstance(attr, ir.StringAttr):
        return str(attr.value)
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return str(attr.value)
    return str(attr).strip('"@')


class JaxOpIndex(OpIndex):
    """An `OpIndex` of a StableHLO module that also finds every op under all its HLO
    identities (`lookup`, `refine`)."""

    def __init__(self, infos: Sequence[OpInfo]) -> None:
        super().__init__([(info.op, info.key) for info in infos])
        self.infos = list(infos)
        self.function_of: list[str] = []
        self._public: set[str] = set()
        self._calls_to: dict[str, list[int]] = defaultdict(list)
        current = ""
        for position, info in enumerate(self.infos):
            if info.op_name == "func.func":
                current = _string_attr(info.op, "sym_name") or ""
                if _string_attr(info.op, "sym_visibility") in (None, "public"):
                    self._public.add(current)
            elif info.op_name == "func.call":
                callee = _string_attr(info.op, "callee")
                if callee:
                    self._calls_to[callee].append(position)
            self.function_of.append(current)
        self._identity_cache: dict[tuple[int, bool], tuple[_Identity, ...]] = {}
        self._position_of_op: dict[int, int] | None = None
        self._exact: dict[tuple[str, tuple[str, ...]], list[IrTarget]] = defaultdict(list)
        self._loose: dict[tuple[str, str], list[IrTarget]] = defaultdict(list)
        self._own: dict[tuple[str, str], list[IrTarget]] = defaultdict(list)
        # Ops no call path names, with a location name and no source, by that name
        self._bare: dict[str, list[IrTarget]] = defaultdict(list)
        self.files: set[str] = set()
        for position, info in enumerate(self.infos):
            if info.op_name in ("func.func", "builtin.module"):
                continue
            identities = self.identities(position)
            transparent = self.identities(position, through_unknown=True)
            for identity in dict.fromkeys((*identities, *transparent)):
                target = IrTarget(position, identity.via_calls)
                for name in dict.fromkeys((identity.name, self._inlined_name(info, identity))):
                    self._exact[(name, identity.chain)].append(target)
                    if identity.chain:
                        self._loose[(name, identity.chain[0])].append(target)
            if info.keys.name is not None and info.keys.source is not None:
                self._own[(info.keys.name, info.keys.source)].append(IrTarget(position, ()))
            elif info.keys.name and not identities:
                self._bare[info.keys.name].append(IrTarget(position, ()))
            self.files.update(p.rsplit(":", 2)[0] for p in info.keys.chain)
        self._file_map: dict[str, str] = {}

    def identities(
        self, position: int, depth: int = 0, *, through_unknown: bool = False
    ) -> tuple[_Identity, ...]:
        """Full (name, chain) identities of the op at `position`, one per call path.

        A call at an unknown location ends a path (its callee's ops are named alone, as XLA
        names `jnp.cumsum`'s `reduce_window_sum` behind one), unless `through_unknown`: then
        it adds no scope and the callers' scopes still count, as XLA names the ops of
        `threefry2x32` behind one in `jax.random.gamma`
        (`jit(_gamma)/vmap()/vmap(jit(_threefry_split))/while/body/add`). The index holds both.
        """
        cached = self._identity_cache.get((position, through_unknown))
        if cached is not None:
            return cached
        info = self.infos[position]
        name = info.keys.name
        if through_unknown and name is None and info.op_name == "func.call":
            name = ""
        found: list[_Identity] = []
        if name is not None and depth < 16:
            function = self.function_of[position]
            own_chain = info.keys.chain
            if function in self._public or not self._calls_to.get(function):
                found.append(_Identity(name, own_chain, ()))
            else:
                for call in self._calls_to[function]:
                    outers = self.identities(call, depth + 1, through_unknown=through_unknown)
                    if not outers and "/" in name:
                        # A call with no name of its own (`jax.export`'s wrapper of the exported
                        # function): the callee's ops carry their full path already.
                        found.append(_Identity(name, own_chain, (call,)))
                    for outer in outers:
                        # A call named "" (JAX's call of `threefry2x32` inside `jit(_uniform)`)
                        # adds no scope: HLO names its callee's ops `jit(_uniform)/while`.
                        found.append(
                            _Identity(
                                f"{outer.name}/{name}"
                                if name and outer.name
                                else outer.name or name,
                                own_chain + outer.chain,
                                (call, *outer.via_calls),
                            )
                        )
        result = tuple(found)
        self._identity_cache[(position, through_unknown)] = result
        return result

    def _inlined_name(self, info: OpInfo, identity: _Identity) -> str:
        """The op's name as XLA gives it once every call on its path is inlined, innermost
        first: each call's own name is put before the name so far, unless the name already
        starts with it. A function vmapped twice inside a jit is two nested calls of one name
        (`jnp.searchsorted` on a 2-D array: `vmap(jit(_searchsorted_scan_impl))` twice), and
        XLA names their ops with that scope once."""
        name = info.keys.name or ""
        for call in identity.via_calls:
            scope = self.infos[call].keys.name or ""
            if not scope or name.startswith(scope + "/"):
                continue
            name = f"{scope}/{name}" if name else scope
        return name

    def canonical_file(self, name: str) -> str:
        """The IR's spelling of a file name from HLO metadata (path-suffix match), else itself."""
        if name in self.files or not self.files:
            return name
        cached = self._file_map.get(name)
        if cached is None:
            # A portable IR spells library files `<sys.path>/<module path>` (`capture/paths.py`);
            # the profiler's metadata keeps the absolute path that ends with that module path.
            candidates = [
                f
                for f in self.files
                if name.endswith("/" + f.removeprefix(IMPORT_ROOT + "/")) or f.endswith("/" + name)
            ]
            cached = max(candidates, key=len) if candidates else name
            self._file_map[name] = cached
        return cached

    def canonical_chain(self, chain: Iterable[str]) -> tuple[str, ...]:
        """`chain` with every file name spelled as in the IR."""
        out = []
        for position in chain:
            parts = position.rsplit(":", 2)
            if len(parts) == 3:
                out.append(f"{self.canonical_file(parts[0])}:{parts[1]}:{parts[2]}")
            else:
                out.append(position)
        return tuple(out)

    def ancestors(self, position: int) -> list[int]:
        """Positions of the ops whose regions hold the op at `position`, innermost first (a
        reduce's body ops are part of the reduce)."""
        if self._position_of_op is None:
            self._position_of_op = {hash(info.op.operation): p for p, info in enumerate(self.infos)}
        found = []
        parent = self.infos[position].op.operation.parent
        while parent is not None:
            at = self._position_of_op.get(hash(parent))
            if at is not None:
                found.append(at)
            parent = parent.parent
        return found

    def lookup(self, op_name: str, chain: Sequence[str]) -> list[IrTarget]:
        """IR ops an HLO instruction with this metadata came from: exact (name, chain), else
        (name, innermost position), else the op's own location name at that position (XLA
        keeps the bare primitive name on the scalar ops of a reducer shared by call sites).
        Without a chain, the ops no call path names whose own location name it is, when they
        are all in one function (never ops of several call sites): JAX lowers `jnp.cumsum` on
        CPU to a private function whose ops are named `reduce_window_sum` alone, called at an
        unknown location, and XLA keeps that name."""
        if not op_name:
            return []
        canonical = self.canonical_chain(chain)
        exact = self._exact.get((op_name, canonical))
        if exact:
            return exact
        if not canonical:
            bare = self._bare.get(op_name, [])
            one_function = len({self.function_of[t.position] for t in bare}) == 1
            return bare if one_function else []
        return self._loose.get((op_name, canonical[0])) or self._own.get(
            (op_name, canonical[0]), []
        )

    def refine(
        self, opcode: str, targets: list[IrTarget], elements: int | None = None
    ) -> list[IrTarget]:
        """The targets whose IR op `opcode` translates directly (all targets when none does),
        then, when several remain, those whose result has the instruction's `elements`: two ops
        one Python line made in a loop share name and source, not shapes."""
        direct = [t for t in targets if implements(opcode, self.infos[t.position].op_name)]
        if not direct and opcode in FOLDING_COMPUTE:
            direct = self._folded_into(opcode, targets)
        chosen = direct or targets
        if len(chosen) > 1 and elements is not None:
            sized = [t for t in chosen if self._result_elements(t.position) == elements]
            if sized:
                return sized
        return chosen

    def _folded_into(self, opcode: str, targets: list[IrTarget]) -> list[IrTarget]:
        """The ops of kind `opcode` that data-movement `targets` read (through at most
        `MAX_FOLDED_HOPS` data-movement ops): XLA's simplifier rewrites `transpose(dot(a, b))`
        as one `dot` that keeps the transpose's metadata, so the weight gradient of every
        matmul of a JAX training step was named after a `transpose`."""
        found: list[IrTarget] = []
        for target in targets:
            pending, hops = [target.position], 0
            while pending and hops <= MAX_FOLDED_HOPS:
                hops += 1
                nested: list[int] = []
                for position in pending:
                    info = self.infos[position]
                    if info.op_name.partition(".")[2] not in FOLDED_MOVEMENT:
                        continue
                    for producer in self._producers(position):
                        if implements(opcode, self.infos[producer].op_name):
                            found.append(IrTarget(producer, target.via_calls))
                        else:
                            nested.append(producer)
                pending = nested
        return list(dict.fromkeys(found))

    def _producers(self, position: int) -> list[int]:
        """Positions of the ops defining the operands of the op at `position`."""
        if self._position_of_op is None:
            self._position_of_op = {hash(info.op.operation): p for p, info in enumerate(self.infos)}
        found = []
        for value in self.infos[position].op.operands:
            try:
                owner = ir.OpResult(value).owner
            except ValueError:  # a block argument
                continue
            at = self._position_of_op.get(hash(owner))
            if at is not None:
                found.append(at)
        return found

    def _result_elements(self, position: int) -> int | None:
        results = list(self.infos[position].op.results)
        shape = shape_of(results[0].type) if results else None
        return math.prod(shape) if shape is not None else None

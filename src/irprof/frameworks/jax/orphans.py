"""Kernels XLA created without op metadata, placed by the program's structure.

Design notes: docs/jax.md, "Module notes", `frameworks/jax/orphans.py`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from iree.compiler import ir

from irprof.frameworks.jax.hlo import DATA_MOVEMENT_OPCODES, HloInstructionInfo, HloModuleInfo
from irprof.frameworks.jax.ir_index import IrTarget, JaxOpIndex, implements
from irprof.mlir.cost_shapes import shape_of

PASS_THROUGH = frozenset({"bitcast", "tuple", "get-tuple-element"})
# Kernels that only prepare an operand for their consumer: layouts, element types.
PREPARATION = DATA_MOVEMENT_OPCODES | {"convert"}
LOOPS = frozenset({"while"})
LEAVES = frozenset({"parameter", "constant"})  # inputs of a fused computation
MAX_BITCAST_HOPS = 8


@dataclass(frozen=True)
class OrphanPlacement:
    """Where a metadata-less kernel's time goes: the IR targets, or the instruction it feeds."""

    targets: tuple[IrTarget, ...] = ()
    consumer: str = ""  # the instruction whose plan the kernel's time follows (rule 2)
    how: str = ""


class OrphanResolver:
    """Places metadata-less kernels of one program (see module docstring)."""

    def __init__(self, program: HloModuleInfo, index: JaxOpIndex) -> None:
        self.program = program
        self.index = index
        self.users: dict[str, list[str]] = defaultdict(list)
        self.callers: dict[str, list[str]] = defaultdict(list)
        reached: set[int] = set()
        for instruction in program.instructions.values():
            for operand in instruction.operands:
                self.users[operand].append(instruction.name)
            for computation in instruction.called:
                self.callers[computation].append(instruction.name)
            if instruction.owner:
                reached.update(self._computed(instruction))
        self.lost = [
            position
            for position, info in enumerate(index.infos)
            if position not in reached and info.op_name not in ("func.func", "builtin.module")
        ]
        self.arguments = _argument_names(index)
        self._cache: dict[str, OrphanPlacement | None] = {}

    def _computed(self, instruction: HloInstructionInfo) -> list[int]:
        """The IR ops an instruction's metadata says it computes: those the attribution would
        give its time (`refine`: its own kind, else its result's size among ops of one name and
        line, so a head's input-gradient `dot` does not stand for the weight-gradient
        convolution of the same line, which XLA rebuilt without metadata). A data-movement
        instruction computes only ops of its own kind: a layout copy of a dot's result carries
        the dot's name, and the dot itself may be one XLA rebuilt without metadata (a YNNPACK
        fusion of the attention's `BNTS,BSNH->BTNH` einsum), which rule 1 must still find."""
        targets = self.index.lookup(instruction.owner, instruction.chain)
        if not self._moves_data(instruction):
            refined = self.index.refine(instruction.opcode, targets, instruction.elements)
            return [t.position for t in refined]
        return [
            t.position
            for t in targets
            if implements(instruction.opcode, self.index.infos[t.position].op_name)
        ]

    def _moves_data(self, instruction: HloInstructionInfo) -> bool:
        """A data-movement instruction, or a fusion of nothing else (`copy_bitcast_fusion`:
        the layout copy of a convolution XLA rebuilt without metadata keeps its name)."""
        if instruction.opcode != "fusion":
            return instruction.opcode in PREPARATION | PASS_THROUGH
        inside = [
            self.program.instructions[name]
            for computation in instruction.called
            for name in self.program.computations.get(computation, ())
        ]
        return all(i.opcode in PREPARATION | PASS_THROUGH | LEAVES for i in inside)

    def unnamed(self, members: tuple[HloInstructionInfo, ...]) -> bool:
        """No member names an IR op: no metadata, or (a copy XLA made of a parameter, e.g.
        to change its layout) only the name of the entry function's argument it reads."""
        return all(
            not member.owner or (member.owner in self.arguments and member.opcode in PREPARATION)
            for member in members
        )

    def place(self, instruction: str) -> OrphanPlacement | None:
        """Where the kernel of a metadata-less `instruction` belongs, or None."""
        if instruction not in self._cache:
            self._cache[instruction] = None  # guards cycles
            self._cache[instruction] = self._place(instruction)
        return self._cache[instruction]

    def _place(self, instruction: str) -> OrphanPlacement | None:
        members = self.program.kernel_members(instruction)
        if not members or not self.unnamed(members):
            return None
        compute = [m for m in members if m.opcode not in PREPARATION | {"fusion", "call"}]
        if compute:
            targets = [t for m in compute for t in self._lost_op(m)]
            if len(compute) == 1 and len(targets) == 1:
                return OrphanPlacement(
                    tuple(targets), how=f"the only {compute[0].opcode} op XLA's metadata lost"
                )
            if len(compute) == 1 and targets:
                # Not placed, but say why: the kernel computes, it is no layout copy.
                return OrphanPlacement(
                    how=f"a {compute[0].opcode} XLA rebuilt without op metadata: "
                    f"{len(targets)} IR ops of its kind and size lost theirs, and which one it "
                    "is cannot be told"
                )
            return None
        consumer = self._only_consumer(instruction)
        if consumer is None:
            return self._loop_plumbing(instruction)
        fed = self.program.instructions[consumer]
        if not self.unnamed((fed, *self.program.kernel_members(consumer))):
            return OrphanPlacement(consumer=consumer, how=f"layout copy feeding {consumer}")
        placed = self.place(consumer)
        if placed is None or not (placed.targets or placed.consumer):
            return None
        return OrphanPlacement(
            placed.targets, placed.consumer, how=f"layout copy feeding {consumer}"
        )

    def _lost_op(self, member: HloInstructionInfo) -> list[IrTarget]:
        found = []
        for position in self.lost:
            info = self.index.infos[position]
            if not implements(member.opcode, info.op_name):
                continue
            results = list(info.op.results)
            shape = shape_of(results[0].type) if results else None
            if shape is not None and math.prod(shape) != member.elements:
                continue
            found.append(IrTarget(position, ()))
        return found

    def _only_consumer(self, instruction: str) -> str | None:
        current = instruction
        for _ in range(MAX_BITCAST_HOPS):
            users = list(dict.fromkeys(self.users.get(current, [])))
            if len(users) != 1:
                return None
            user = self.program.instructions[users[0]]
            if user.opcode in PASS_THROUGH and not user.op_name:
                current = user.name
                continue
            return user.name
        return None

    def _loop_plumbing(self, instruction: str) -> OrphanPlacement | None:
        """Rule 3: the ops of the one `while` whose body or condition holds `instruction`."""
        computation = self.program.instructions[instruction].computation
        callers = [self.program.instructions[c] for c in self.callers.get(computation, [])]
        if len(callers) != 1 or callers[0].opcode not in LOOPS or not callers[0].op_name:
            return None
        loop = callers[0]
        targets = self.index.lookup(loop.op_name, loop.chain)
        if not targets:
            return None
        return OrphanPlacement(tuple(targets), how=f"plumbing of the loop {loop.name}")


def _argument_names(index: JaxOpIndex) -> frozenset[str]:
    """The location names of the public functions' arguments (`params['dense']['kernel']`):
    the op name XLA gives an instruction that only copies a parameter."""
    names: set[str] = set()
    for info in index.infos:
        if info.op_name != "func.func" or _is_private(info.op):
            continue
        for region in info.op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    location = argument.location
                    if isinstance(location, ir.NameLoc):
                        names.add(location.name_str)
    return frozenset(names)


def _is_private(op: ir.Operation) -> bool:
    attributes = op.attributes
    return (
        "sym_visibility" in attributes
        and ir.StringAttr(attributes["sym_visibility"]).value == "private"
    )

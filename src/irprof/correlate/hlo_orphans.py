"""Kernels XLA created without op metadata, placed by the program's structure.

XLA's rewrites sometimes build a new instruction and drop the metadata of the one it replaced:
the weight gradient of a convolution comes out as a bare `convolution` fed by two
`transpose_copy_fusion`s that lay its operands out, none with an `op_name`. Two rules, both
from structure, never from names:

1. A compute instruction without metadata (not data movement) stands for the IR ops of the
   kind it implements (`convolution` -> `stablehlo.convolution`) that no instruction with
   metadata reaches, whose result has as many elements as the instruction's; it is placed only
   when exactly one such op exists in the module.
2. A data-movement kernel without metadata (a layout copy) runs for the instruction that
   consumes it: when its only consumer (looking through metadata-less bitcasts) is placed, by
   its metadata or by rule 1, the copy's time goes to that consumer's ops.

What neither rule places stays unattributed with the reason it has today.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from irprof.correlate.flops import shape_of
from irprof.correlate.hlo import DATA_MOVEMENT_OPCODES, HloInstructionInfo, HloModuleInfo
from irprof.correlate.hlo_ir_index import IrOpIndex, IrTarget, implements

PASS_THROUGH = frozenset({"bitcast", "parameter", "constant", "tuple", "get-tuple-element"})
MAX_BITCAST_HOPS = 8


@dataclass(frozen=True)
class OrphanPlacement:
    """Where a metadata-less kernel's time goes: the IR targets, or the instruction it feeds."""

    targets: tuple[IrTarget, ...] = ()
    consumer: str = ""  # the instruction whose plan the kernel's time follows (rule 2)
    how: str = ""


class OrphanResolver:
    """Places metadata-less kernels of one program (see module docstring)."""

    def __init__(self, program: HloModuleInfo, index: IrOpIndex) -> None:
        self.program = program
        self.index = index
        self.users: dict[str, list[str]] = defaultdict(list)
        reached: set[int] = set()
        for instruction in program.instructions.values():
            for operand in instruction.operands:
                self.users[operand].append(instruction.name)
            if instruction.op_name:
                reached.update(
                    t.position for t in index.lookup(instruction.op_name, instruction.chain)
                )
        self.lost = [
            position
            for position, info in enumerate(index.infos)
            if position not in reached and info.op_name not in ("func.func", "builtin.module")
        ]
        self._cache: dict[str, OrphanPlacement | None] = {}

    def place(self, instruction: str) -> OrphanPlacement | None:
        """Where the kernel of a metadata-less `instruction` belongs, or None."""
        if instruction not in self._cache:
            self._cache[instruction] = None  # guards cycles
            self._cache[instruction] = self._place(instruction)
        return self._cache[instruction]

    def _place(self, instruction: str) -> OrphanPlacement | None:
        members = self.program.kernel_members(instruction)
        if not members or any(m.op_name for m in members):
            return None
        compute = [m for m in members if m.opcode not in DATA_MOVEMENT_OPCODES | {"fusion", "call"}]
        if compute:
            targets = [t for m in compute for t in self._lost_op(m)]
            if len(compute) == 1 and len(targets) == 1:
                return OrphanPlacement(
                    tuple(targets), how=f"the only {compute[0].opcode} op XLA's metadata lost"
                )
            return None
        consumer = self._only_consumer(instruction)
        if consumer is None:
            return None
        fed = self.program.instructions[consumer]
        if fed.op_name or any(m.op_name for m in self.program.kernel_members(consumer)):
            return OrphanPlacement(consumer=consumer, how=f"layout copy feeding {consumer}")
        placed = self.place(consumer)
        if placed is None:
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
                if user.opcode == "tuple":
                    return None  # a program result or a loop carry: no consumer kernel
                current = user.name
                continue
            return user.name
        return None

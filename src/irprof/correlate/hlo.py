"""Decode an XLA program into what correlation needs: per instruction, its framework op name,
its source call chain, a FLOP estimate, and for a fusion every instruction it runs.

Shared by every XLA-compiled stack: JAX programs and TensorFlow `jit_compile` clusters (it was
`frameworks/jax/hlo.py`). Design notes: docs/jax.md, "Module notes", `frameworks/jax/hlo.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from irprof.correlate.hlo_proto import hlo_pb2
from irprof.mlir.cost_model import conv_flops, matmul_flops

# Opcodes that move or relabel data without arithmetic: no FLOPs in the fused-time rule.
DATA_MOVEMENT_OPCODES = frozenset(
    {
        "parameter",
        "constant",
        "broadcast",
        "reshape",
        "bitcast",
        "bitcast-convert",
        "transpose",
        "copy",
        "copy-start",
        "copy-done",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "concatenate",
        "pad",
        "iota",
        "tuple",
        "get-tuple-element",
        "reverse",
        "gather",
        "scatter",
        "after-all",
        "partition-id",
        "replica-id",
    }
)
# Opcodes whose called computations are part of the same kernel (their instructions run in it).
FUSING_OPCODES = frozenset({"fusion", "call"})
# Instructions that write nothing of their own inside a kernel.
FREE_OPCODES = frozenset({"parameter", "constant", "bitcast", "tuple", "get-tuple-element"})
# Data movement that reads and writes memory inside a kernel (a broadcast, reshape or iota is an
# index mapping there): what decides whether a kernel's arithmetic is its work.
MOVING_OPCODES = frozenset(
    {"transpose", "copy", "slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad",
     "reverse", "gather", "scatter"}
)  # fmt: skip
# XLA's CSE merges equal constants across the whole module and keeps one user's metadata: a
# constant's op name says where one of its many users came from, not what a kernel runs for
# (a zero shared by MobileNetV2's whole backward pass named its first BatchNorm's `mean`).
SHARED_BY_CSE = frozenset({"constant"})


@dataclass(frozen=True)
class HloInstructionInfo:
    """One HLO instruction: names, what it computes, where it came from, its estimated FLOPs."""

    name: str
    opcode: str
    op_name: str  # OpMetadata.op_name: the framework's scoped name (`jit(f)/dot_general`)
    chain: tuple[str, ...]  # source frames `file:line:col`, innermost first
    flops: float
    elements: int  # elements of the result: the data a data-movement instruction writes
    computation: str
    called: tuple[str, ...]  # names of called computations
    operands: tuple[str, ...] = ()  # names of the operand instructions (same computation)

    @property
    def owner(self) -> str:
        """The framework op this instruction computes for: its `op_name`, "" for an
        instruction XLA shares among ops (`SHARED_BY_CSE`)."""
        return "" if self.opcode in SHARED_BY_CSE else self.op_name

    @property
    def source(self) -> str | None:
        """Innermost source position, or None when the instruction has no stack frame."""
        return self.chain[0] if self.chain else None


@dataclass(frozen=True)
class HloModuleInfo:
    """An XLA program: instructions by (unique) name and computations' instruction names."""

    name: str
    program_id: int
    instructions: Mapping[str, HloInstructionInfo]
    computations: Mapping[str, tuple[str, ...]]

    def kernel_members(self, instruction: str) -> tuple[HloInstructionInfo, ...]:
        """The instructions a thunk of `instruction` runs: itself, or for a fusion or call every
        instruction of its computations (the fusion itself only when none of them has metadata),
        for a `while` itself and its condition's instructions. "Metadata" is an `owner`.

        Reducer computations (`to_apply` of a reduce inside a fusion) are included: their
        scalar ops run inside the same kernel and carry the reduce's op name.
        """
        root = self.instructions.get(instruction)
        if root is None:
            return ()
        if root.opcode == "while" and root.called:
            # The loop's condition is evaluated by the while thunk itself; the body's kernels
            # are thunks of their own. Called computations of a while: (body, condition).
            condition = self.computations.get(root.called[-1], ())
            return (root, *(self.instructions[name] for name in condition))
        if root.opcode not in FUSING_OPCODES:
            return (root,)
        members: list[HloInstructionInfo] = []
        pending = list(root.called)
        seen: set[str] = set()
        while pending:
            computation = pending.pop()
            if computation in seen:
                continue
            seen.add(computation)
            for name in self.computations.get(computation, ()):
                member = self.instructions[name]
                members.append(member)
                pending.extend(member.called)
        if not any(member.owner for member in members):
            members.insert(0, root)
        return tuple(members)


def _elements(dimensions: Iterable[int]) -> int:
    return math.prod(int(d) for d in dimensions)


def instruction_flops(
    opcode: str,
    out_elements: int,
    operand_dims: list[tuple[int, ...]],
    lhs_contracting: Iterable[int] = (),
    kernel_output_feature_dim: int | None = None,
) -> float:
    """FLOPs of one instruction from shapes: 2*M*N*K for dot, 2*out*window for convolution,
    input elements for reductions, output elements for elementwise ops, 0 for data movement.
    """
    # The counting rules are the cost model's (`mlir.cost_model`); what differs is the input.
    # An HLO instruction is no MLIR op: its shapes and dimension numbers come from the HloProto,
    # and XLA's opcodes (fusion, bitcast, copy-start...) are not the dialects' op names, so the
    # op-based `estimate_flops` cannot read it. The formulas themselves are shared.
    if opcode in DATA_MOVEMENT_OPCODES or opcode in FUSING_OPCODES:
        return 0.0
    if opcode == "dot" and operand_dims:
        lhs = operand_dims[0]
        contracted = math.prod(lhs[d] for d in lhs_contracting if d < len(lhs))
        return float(matmul_flops(out_elements, contracted))
    if opcode == "convolution" and len(operand_dims) > 1 and kernel_output_feature_dim is not None:
        kernel = operand_dims[1]
        if kernel_output_feature_dim < len(kernel) and kernel[kernel_output_feature_dim] > 0:
            per_output = _elements(kernel) // kernel[kernel_output_feature_dim]
            return float(conv_flops(out_elements, per_output))
    if opcode in ("reduce", "reduce-window") and operand_dims:
        return float(_elements(operand_dims[0]))
    return float(out_elements)


def _shape_dims(shape: hlo_pb2.ShapeProto) -> tuple[int, ...]:
    return tuple(int(d) for d in shape.dimensions)


def _shape_elements(shape: hlo_pb2.ShapeProto) -> int:
    if shape.tuple_shapes:
        return sum(_shape_elements(s) for s in shape.tuple_shapes)
    return _elements(shape.dimensions)


class _FrameTable:
    """Resolves 1-based stack frame ids into `file:line:col` chains, innermost first."""

    def __init__(
        self,
        files: list[str],
        locations: list[tuple[int, int, int]],  # (file id, line, column)
        frames: list[tuple[int, int]],  # (location id, parent frame id)
    ) -> None:
        self._files = files
        self._locations = locations
        self._frames = frames
        self._cache: dict[int, tuple[str, ...]] = {}

    def chain(self, frame_id: int) -> tuple[str, ...]:
        """Frames from `frame_id` up to the outermost caller."""
        cached = self._cache.get(frame_id)
        if cached is not None:
            return cached
        out: list[str] = []
        seen: set[int] = set()
        current = frame_id
        while 0 < current <= len(self._frames) and current not in seen:
            seen.add(current)
            location_id, parent = self._frames[current - 1]
            if 0 < location_id <= len(self._locations):
                file_id, line, column = self._locations[location_id - 1]
                name = self._files[file_id - 1] if 0 < file_id <= len(self._files) else "?"
                out.append(f"{name}:{line}:{column}")
            current = parent
        result = tuple(out)
        self._cache[frame_id] = result
        return result


def _parse_module(data: bytes) -> hlo_pb2.HloModuleProto | None:
    """The module of an `HloProto`, or a bare `HloModuleProto`; None when neither parses."""
    wrapped = hlo_pb2.HloProto()
    try:
        wrapped.ParseFromString(data)
        if wrapped.hlo_module.computations:
            return wrapped.hlo_module
    except DecodeError:
        pass  # a bare HloModuleProto's string field 1 need not parse as a message
    bare = hlo_pb2.HloModuleProto()
    try:
        bare.ParseFromString(data)
    except DecodeError:
        return None
    return bare if bare.computations else None


def decode_hlo_proto(data: bytes, program_id: int = -1, *, what: str = "HloProto") -> HloModuleInfo:
    """Decode a serialized `xla.HloProto` (or a bare `HloModuleProto`); ValueError if neither."""
    module = _parse_module(data)
    if module is None:
        raise ValueError(f"{what}: not a serialized HloProto or HloModuleProto with computations")
    index = module.stack_frame_index
    frames = _FrameTable(
        list(index.file_names),
        [(loc.file_name_id, loc.line, loc.column) for loc in index.file_locations],
        [(frame.file_location_id, frame.parent_frame_id) for frame in index.stack_frames],
    )
    computation_names = {c.id: c.name for c in module.computations}
    instructions: dict[str, HloInstructionInfo] = {}
    computations: dict[str, tuple[str, ...]] = {}
    for computation in module.computations:
        by_id = {instr.id: instr for instr in computation.instructions}
        for instr in computation.instructions:
            operand_dims = [_shape_dims(by_id[i].shape) for i in instr.operand_ids if i in by_id]
            conv = instr.convolution_dimension_numbers
            flops = instruction_flops(
                instr.opcode,
                _shape_elements(instr.shape),
                operand_dims,
                instr.dot_dimension_numbers.lhs_contracting_dimensions,
                conv.kernel_output_feature_dimension
                if instr.HasField("convolution_dimension_numbers")
                else None,
            )
            metadata = instr.metadata
            chain = frames.chain(metadata.stack_frame_id) if metadata.stack_frame_id else ()
            if not chain and metadata.source_file:
                chain = (f"{metadata.source_file}:{metadata.source_line}:{metadata.source_column}",)
            instructions[instr.name] = HloInstructionInfo(
                name=instr.name,
                opcode=instr.opcode,
                op_name=metadata.op_name,
                chain=chain,
                flops=flops,
                elements=_shape_elements(instr.shape),
                computation=computation.name,
                called=tuple(
                    computation_names[c]
                    for c in instr.called_computation_ids
                    if c in computation_names
                ),
                operands=tuple(by_id[i].name for i in instr.operand_ids if i in by_id),
            )
        computations[computation.name] = tuple(i.name for i in computation.instructions)
    return HloModuleInfo(module.name, program_id, instructions, computations)


# --- text fallback -----------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_FIELDS = re.compile(r"(\w+)=(\d+)")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s+\(.*\)\s+->\s+.*\{\s*$")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s+=\s+(?P<shape>.+?)\s+(?P<opcode>[a-z][\w\-]*)\((?P<operands>[^)]*)\)(?P<rest>.*)$"
)
_OPERAND = re.compile(r"%([\w.\-]+)")
_ARRAY_SHAPE = re.compile(r"[a-z]+\d*\[([\d,]*)\]")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_STACK_FRAME = re.compile(r"stack_frame_id=(\d+)")
_CALLS = re.compile(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)")
_LHS_CONTRACTING = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
_DIM_LABELS = re.compile(r"dim_labels=\w+_(\w+)->\w+")


def _dims_of(shape_text: str) -> list[tuple[int, ...]]:
    return [
        tuple(int(d) for d in found.split(",") if d) for found in _ARRAY_SHAPE.findall(shape_text)
    ]


def _called(opcode: str, rest: str) -> tuple[str, ...]:
    """Called computations in the HloProto's order: a while prints `condition=` before `body=`
    but lists (body, condition)."""
    called = tuple(_CALLS.findall(rest))
    if opcode == "while" and len(called) == 2:
        return called[::-1]
    return called


def parse_hlo_text(text: str, program_id: int = -1) -> HloModuleInfo:
    """Parse optimized HLO text (`compiled.as_text()`); ValueError when it holds no module."""
    header = re.match(r"HloModule\s+([^\s,]+)", text)
    if header is None:
        raise ValueError("not HLO text: no 'HloModule <name>' header")
    tables: dict[str, list[dict[str, str]]] = {}
    files: list[str] = []
    section = ""
    shapes: dict[str, list[tuple[int, ...]]] = {}
    raw: list[tuple[str, re.Match[str]]] = []
    computations: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = stripped
            continue
        if section and (row := _TABLE_ROW.match(stripped)):
            if section == "FileNames":
                files.append(row.group(2).strip().strip('"'))
            else:
                tables.setdefault(section, []).append(dict(_FIELDS.findall(row.group(2))))
            continue
        section = ""
        if (comp := _COMPUTATION.match(stripped)) is not None:
            current = comp.group(1)
            computations[current] = []
            continue
        if current and (instr := _INSTRUCTION.match(line)) is not None:
            shapes[instr.group("name")] = _dims_of(instr.group("shape"))
            raw.append((current, instr))
            computations[current].append(instr.group("name"))
    frames = _FrameTable(
        files,
        [
            (int(r.get("file_name_id", 0)), int(r.get("line", 0)), int(r.get("column", 0)))
            for r in tables.get("FileLocations", [])
        ],
        [
            (int(r.get("file_location_id", 0)), max(int(r.get("parent_frame_id", 0)) - 1, 0))
            for r in tables.get("StackFrames", [])
        ],
    )
    instructions: dict[str, HloInstructionInfo] = {}
    for computation, instr in raw:
        rest = instr.group("rest")
        operands = _OPERAND.findall(instr.group("operands"))
        operand_dims = [shapes[o][0] for o in operands if shapes.get(o)]
        out_dims = shapes.get(instr.group("name")) or [()]
        contracting = _LHS_CONTRACTING.search(rest)
        labels = _DIM_LABELS.search(rest)
        flops = instruction_flops(
            instr.group("opcode"),
            sum(_elements(d) for d in out_dims),
            operand_dims,
            [int(d) for d in contracting.group(1).split(",") if d] if contracting else (),
            labels.group(1).index("o") if labels and "o" in labels.group(1) else None,
        )
        op_name = _OP_NAME.search(rest)
        frame = _STACK_FRAME.search(rest)
        instructions[instr.group("name")] = HloInstructionInfo(
            name=instr.group("name"),
            opcode=instr.group("opcode"),
            op_name=op_name.group(1).replace("\\'", "'").replace('\\"', '"') if op_name else "",
            chain=frames.chain(int(frame.group(1))) if frame else (),
            flops=flops,
            elements=sum(_elements(d) for d in out_dims),
            computation=computation,
            called=_called(instr.group("opcode"), rest),
            operands=tuple(operands),
        )
    return HloModuleInfo(
        header.group(1),
        program_id,
        instructions,
        {name: tuple(members) for name, members in computations.items()},
    )


def kernel_weights(members: Sequence[HloInstructionInfo]) -> tuple[list[float], str]:
    """How one kernel's time is split over its instructions, and the basis: their FLOPs; but
    where the kernel moves more elements than it computes FLOPs (a `dynamic-slice` of a scan's
    stacked weights whose start index is the one `subtract`: by FLOPs the scalar index took the
    whole slice's time), or computes none, the elements each instruction writes (free ones:
    nothing); even when neither gives any weight."""
    flops = [float(m.flops) for m in members]
    moved = sum(m.elements for m in members if m.opcode in MOVING_OPCODES)
    if sum(flops) > 0 and moved <= sum(flops):
        return flops, "flops"
    written = [0.0 if m.opcode in FREE_OPCODES else float(m.elements) for m in members]
    if sum(written) > 0:
        return written, "bytes"
    return [1.0] * len(members), "even"

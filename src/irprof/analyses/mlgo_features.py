"""Per-op features from the IR and measured time as the score: training data for a learned cost
model or an ML-guided compiler, in the shape of LLVM's MLGO `TrainingLogger` logs.

Design notes: docs/views.md, "Module notes", `analyses/mlgo_features.py`.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from iree.compiler import ir

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.mlir.cost_model import op_cost
from irprof.mlir.op_index import derive_op_infos

MAX_RANK = 6  # shape features hold this many dims (leading dims; padding 0)
UNKNOWN = -1


@dataclass(frozen=True)
class TensorSpec:
    """LLVM's TensorSpec: `{"name", "port", "type", "shape"}` in the log header."""

    name: str
    type: str  # "int64_t" | "float"
    shape: tuple[int, ...]
    port: int = 0

    @property
    def elements(self) -> int:
        """Values per tensor."""
        return math.prod(self.shape)

    def to_json(self) -> dict[str, object]:
        """The header form (key order as LLVM writes it)."""
        return {"name": self.name, "type": self.type, "port": self.port, "shape": list(self.shape)}


def _int(name: str, size: int = 1) -> TensorSpec:
    return TensorSpec(name, "int64_t", (size,))


FEATURES: tuple[TensorSpec, ...] = (
    _int("op_kind_id"),  # crc32 of the op name (`tf.Conv2D`)
    _int("dialect_id"),  # crc32 of the dialect (`tf`)
    _int("level_id"),  # crc32 of the IR level (`tf`, `stablehlo`, `torch`, `linalg`)
    _int("num_operands"),
    _int("num_results"),
    _int("result_rank"),  # of the first result; -1 unranked or not a tensor
    _int("result_shape", MAX_RANK),  # -1 for a dynamic dim, 0 past the rank
    _int("operand0_shape", MAX_RANK),
    _int("operand1_shape", MAX_RANK),
    _int("result_elements"),  # -1 unknown
    _int("operand_elements"),  # sum over operands of known shape
    _int("element_bits"),  # of the first result's element type; 0 unknown
    _int("tensor_bytes"),  # operands + results of known shape and element type
    _int("event_count"),  # events the op's time comes from
    _int("estimated"),  # 1 when the time is a share of a group's events
    _int("group_size"),  # ops sharing those events (0 when measured alone)
    _int("flops"),  # one execution, from `irprof.mlir.cost_model`; -1 unknown
    _int("bytes_moved"),  # tensors read and written by one execution; -1 unknown
)
SCORE = _int("mean_ns")


@dataclass(frozen=True)
class Observation:
    """One op: its feature values in `FEATURES` order and its score."""

    op_index: int
    op_name: str
    features: tuple[tuple[int, ...], ...]
    score: int


@dataclass(frozen=True)
class MlgoContext:
    """The observations of one function at one level."""

    name: str
    observations: tuple[Observation, ...]


@dataclass(frozen=True)
class MlgoLog:
    """A TrainingLogger log as data."""

    features: tuple[TensorSpec, ...]
    score: TensorSpec
    contexts: tuple[MlgoContext, ...]

    @property
    def observation_count(self) -> int:
        """Observations over all contexts."""
        return sum(len(context.observations) for context in self.contexts)


def name_id(name: str) -> int:
    """The stable id of a name (CRC-32)."""
    return zlib.crc32(name.encode("utf-8"))


def _torch_tensor(text: str) -> tuple[tuple[int, ...] | None, str] | None:
    """Dims and element type of `!torch.vtensor<[2,3],f32>` (no Python class for it)."""
    if not text.startswith(("!torch.vtensor<", "!torch.tensor<")) or "[" not in text:
        return None
    dims_text, _, rest = text.split("[", 1)[1].partition("]")
    element = rest.strip(",> ")
    try:
        dims = tuple(int(d) if d != "?" else UNKNOWN for d in dims_text.split(",") if d)
    except ValueError:
        return None, element
    return dims, element


_TORCH_ELEMENT = re.compile(r"(?:bf|f|si|ui|i)(\d+)")


def _bits(element: ir.Type | str) -> int:
    """Bit width of an integer or float element type (0 for index, complex, unknown)."""
    if isinstance(element, str):
        match = _TORCH_ELEMENT.fullmatch(element)
        return int(match.group(1)) if match else 0
    for cast in (ir.IntegerType, ir.FloatType):
        try:
            return int(cast(element).width)
        except ValueError:
            continue
    return 0


def tensor_of(value_type: ir.Type) -> tuple[tuple[int, ...] | None, int]:
    """(dims with -1 for dynamic, or None when unranked/not a tensor; element bits, 0 unknown)."""
    try:
        shaped = ir.ShapedType(value_type)
    except ValueError:
        torch = _torch_tensor(str(value_type))
        if torch is None:
            return None, 0
        return torch[0], _bits(torch[1])
    bits = _bits(shaped.element_type)
    if not shaped.has_rank:
        return None, bits
    dims = tuple(
        UNKNOWN if shaped.is_dynamic_dim(i) else int(d) for i, d in enumerate(shaped.shape)
    )
    return dims, bits


def _padded(dims: tuple[int, ...] | None) -> tuple[int, ...]:
    known = dims or ()
    return (known + (0,) * MAX_RANK)[:MAX_RANK]


def _elements(dims: tuple[int, ...] | None) -> int:
    if dims is None or any(d < 0 for d in dims):
        return UNKNOWN
    return math.prod(dims)


def op_features(op: ir.Operation, level: str, profiled: ProfiledOp) -> tuple[tuple[int, ...], ...]:
    """The feature values of one op, in `FEATURES` order."""
    operands = [tensor_of(value.type) for value in op.operands]
    results = [tensor_of(value.type) for value in op.results]
    first_dims, first_bits = results[0] if results else (None, 0)
    operand_elements = [_elements(dims) for dims, _ in operands]
    tensor_bytes = sum(
        _elements(dims) * bits // 8
        for dims, bits in (*operands, *results)
        if _elements(dims) >= 0 and bits > 0
    )
    profile = profiled.profile
    assert profile is not None  # only profiled ops are observed
    cost = op_cost(op)
    name = profiled.op_name
    return (
        (name_id(name),),
        (name_id(name.split(".", 1)[0]),),
        (name_id(level),),
        (len(operands),),
        (len(results),),
        (len(first_dims) if first_dims is not None else UNKNOWN,),
        _padded(first_dims),
        _padded(operands[0][0] if operands else None),
        _padded(operands[1][0] if len(operands) > 1 else None),
        (_elements(first_dims),),
        (sum(count for count in operand_elements if count >= 0),),
        (first_bits,),
        (tensor_bytes,),
        (profile.count,),
        (int(profile.estimated),),
        (profile.group_size,),
        (cost.flops if cost.flops is not None else UNKNOWN,),
        (cost.bytes if cost.bytes is not None else UNKNOWN,),
    )


def level_contexts(
    module: ir.Module, level: str, ops: Sequence[ProfiledOp]
) -> tuple[MlgoContext, ...]:
    """One context per function of an annotated module, with its profiled ops."""
    infos = derive_op_infos(module)
    if len(infos) != len(ops):
        raise BundleError(f"level {level}: the module changed under its profiled ops")
    grouped: dict[str, list[Observation]] = {}
    for info, op in zip(infos, ops, strict=True):
        if op.profile is None or op.inclusive:
            continue
        observation = Observation(
            op_index=op.index,
            op_name=op.op_name,
            features=op_features(info.op.operation, level, op),
            score=op.profile.mean_ns,
        )
        grouped.setdefault(f"{level}:{op.function or '<module>'}", []).append(observation)
    return tuple(MlgoContext(name, tuple(items)) for name, items in grouped.items())


def load_mlgo_features(bundle: RunBundle, level: str | None = None) -> MlgoLog:
    """The log of one annotated level of `bundle`, or of all of them (`level` None)."""
    levels = [level] if level is not None else bundle.annotated_levels()
    if not levels:
        raise BundleError(
            f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
        )
    contexts: list[MlgoContext] = []
    for name in levels:
        loaded = load_annotated_level(bundle, name)
        contexts += level_contexts(loaded.module, loaded.level, loaded.profiled.ops)
    return MlgoLog(FEATURES, SCORE, tuple(contexts))

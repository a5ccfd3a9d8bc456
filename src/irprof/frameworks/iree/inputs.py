"""What `irprof capture iree` feeds the model: the function's signature, inputs, input dialect.

Inputs come from IREE input specs given by the user (passed through untouched), from an `.npz`
(arrays in order) or, by default, random arrays drawn from the function's signature with a
fixed seed. Arrays are written as `.npy` files and passed to IREE as `--input=@file.npy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from iree.compiler import ir

from irprof.errors import CaptureError
from irprof.mlir.op_index import walk_ops

# MLIR element type -> numpy dtype for random inputs (bf16, which numpy lacks, is written raw).
BF16 = "bf16"
DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
}
# The input dialect decides the source level's name (first match wins, in this order).
SOURCE_DIALECTS = (
    ("stablehlo", "stablehlo"),
    ("chlo", "stablehlo"),
    ("torch", "torch"),
    ("tosa", "tosa"),
)
DEFAULT_LEVEL = "linalg"
TORCH_TENSOR_PREFIX = "!torch.vtensor<"


@dataclass(frozen=True)
class TensorSpec:
    """One argument of the profiled function: static shape and MLIR element type."""

    shape: tuple[int, ...] | None  # None when some dimension is dynamic
    element: str
    dims_text: str = ""  # the dimensions as written (`?x11`) when some are dynamic

    def render(self) -> str:
        """IREE's spelling, e.g. `4x8xf32` (`?x11xi64` with a dynamic dimension)."""
        if self.shape is None:
            return f"{self.dims_text or '?'}x{self.element}"
        dims = "x".join(str(d) for d in self.shape)
        return f"{dims}x{self.element}" if self.shape != () else self.element


def source_level(module: ir.Module) -> str:
    """The level name of the input IR, from the dialects of its ops."""
    dialects = {op.name.partition(".")[0] for op in walk_ops(module)}
    for dialect, level in SOURCE_DIALECTS:
        if dialect in dialects:
            return level
    return DEFAULT_LEVEL


def function_signature(module: ir.Module, function: str, model: str | Path) -> list[TensorSpec]:
    """Argument specs of the public function `function`; a CaptureError naming the ones there."""
    public: list[str] = []
    for op in module.body.operations:
        if op.operation.name not in ("func.func", "util.func"):
            continue
        attributes = op.operation.attributes
        name = ir.StringAttr(attributes["sym_name"]).value
        visibility = (
            ir.StringAttr(attributes["sym_visibility"]).value
            if "sym_visibility" in attributes
            else "public"
        )
        if visibility != "public":
            continue
        public.append(name)
        if name == function:
            function_type = ir.FunctionType(ir.TypeAttr(attributes["function_type"]).value)
            return [_tensor_spec(t, model, function) for t in function_type.inputs]
    raise CaptureError(
        f"{model}: no public function '{function}' (public functions: "
        f"{', '.join(public) or 'none'}); pass --function NAME"
    )


def _tensor_spec(type_: ir.Type, model: str | Path, function: str) -> TensorSpec:
    # The bindings hand back typed subclasses (RankedTensorType, F32Type, ...).
    torch_spec = _torch_tensor_spec(str(type_))
    if torch_spec is not None:
        return torch_spec
    if isinstance(type_, ir.RankedTensorType):
        shape = tuple(type_.shape)
        dynamic = ir.ShapedType.get_dynamic_size()
        static = all(dim != dynamic for dim in shape)
        text = "x".join("?" if dim == dynamic else str(dim) for dim in shape)
        return TensorSpec(shape if static else None, str(type_.element_type), text)
    if isinstance(type_, ir.ShapedType):
        raise CaptureError(f"{model}: @{function} takes {type_}, which irprof cannot fill in")
    return TensorSpec((), str(type_))


def _torch_tensor_spec(spelling: str) -> TensorSpec | None:
    """`!torch.vtensor<[4,?],f32>` as a spec, or None for another type.

    The compiler's bindings register the torch dialect but expose no Python class for its
    types, so the type's own spelling is read (a fixed grammar: dims in brackets, `?` dynamic).
    IREE's ABI is signless: `si64` arrives as `i64`.
    """
    if not (spelling.startswith(TORCH_TENSOR_PREFIX) and spelling.endswith(">")):
        return None
    dims_text, _, element = spelling[len(TORCH_TENSOR_PREFIX) : -1].rpartition("],")
    if not dims_text.startswith("["):
        return None
    element = element.removeprefix("s") if element.startswith("si") else element
    dims = [dim.strip() for dim in dims_text[1:].split(",") if dim.strip()]
    if not element.isalnum() or any(dim != "?" and not dim.isdigit() for dim in dims):
        return None
    static = all(dim.isdigit() for dim in dims)
    shape = tuple(int(dim) for dim in dims) if static else None
    return TensorSpec(shape, element, "x".join(dims))


def random_inputs(specs: Sequence[TensorSpec], model: str | Path, seed: int) -> list[np.ndarray]:
    """One random array per argument (normal floats, small integers), reproducible by `seed`."""
    generator = np.random.default_rng(seed)
    arrays: list[np.ndarray] = []
    for position, spec in enumerate(specs):
        dtype = DTYPES.get(spec.element)
        if spec.shape is not None and spec.element == BF16:
            values = generator.standard_normal(spec.shape).astype(np.float32)
            arrays.append(bfloat16_bits(values))
            continue
        if spec.shape is None or dtype is None:
            raise CaptureError(
                f"{model}: argument {position} is {spec.render()}: irprof cannot make a random "
                "input for it; give inputs with --input SPEC or --inputs FILE.npz"
            )
        if np.issubdtype(dtype, np.floating):
            arrays.append(generator.standard_normal(spec.shape).astype(dtype))
        elif dtype is np.bool_:
            arrays.append(generator.integers(0, 2, spec.shape).astype(np.bool_))
        else:
            arrays.append(generator.integers(0, 8, spec.shape).astype(dtype))
    return arrays


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest even), as their uint16 bit patterns; numpy has
    no bfloat16 dtype and IREE reads them as raw bytes (`SHAPExbf16=@file.bin`)."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def npz_inputs(path: Path) -> list[np.ndarray]:
    """The arrays of an `.npz`, in the order they were saved (`arr_0`, `arr_1`, ... or names)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return [np.asarray(archive[name]) for name in archive.files]
    except (OSError, ValueError) as exc:
        raise CaptureError(f"{path}: not a readable .npz of input arrays ({exc})") from exc


def write_inputs(
    arrays: Sequence[np.ndarray], folder: Path, types: Sequence[TensorSpec] | None = None
) -> list[str]:
    """Save each array in `folder`; the `@file` input specs IREE tools take. An array `types`
    says is bf16 (uint16 bit patterns) is written raw, with its type in the spec."""
    specs: list[str] = []
    for position, array in enumerate(arrays):
        spec = types[position] if types is not None and position < len(types) else None
        if spec is not None and spec.element == BF16:
            path = folder / f"input_{position}.bin"
            array.astype(np.uint16).tofile(path)
            specs.append(f"{spec.render()}=@{path}")
            continue
        path = folder / f"input_{position}.npy"
        np.save(path, array, allow_pickle=False)
        specs.append(f"@{path}")
    return specs

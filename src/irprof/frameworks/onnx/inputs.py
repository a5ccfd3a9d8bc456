"""The inputs an ONNX capture feeds the model: deterministic random arrays from the graph's input
shapes (a symbolic dimension takes its `--dim name=value`, else 1), or the arrays of an .npz.

Framework-free (numpy only): the parent checks `--dim` with it, the child builds the feeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from irprof.errors import UsageError

# Integer inputs are usually indices (token ids, gather positions): keep them small and valid.
INTEGER_HIGH = 4


@dataclass(frozen=True)
class InputSpec:
    """One graph input: its name, numpy dtype name and dimensions (int, symbol or None)."""

    name: str
    dtype: str
    dims: tuple[int | str | None, ...]
    high: int = INTEGER_HIGH  # integers: random values in [0, high)

    def render(self) -> str:
        """`name: dtype[d0,d1,...]`, symbols by name, unknown dims as `?`."""
        dims = ",".join("?" if d is None else str(d) for d in self.dims)
        return f"{self.name}: {self.dtype}[{dims}]"


def parse_dims(values: Sequence[str]) -> dict[str, int]:
    """`--dim name=value` options -> {name: value}; a UsageError names a malformed one."""
    dims: dict[str, int] = {}
    for value in values:
        name, sep, number = value.partition("=")
        if not sep or not name or not number.strip().isdigit() or int(number) < 1:
            raise UsageError(f"--dim {value!r}: expected NAME=VALUE with VALUE a positive integer")
        dims[name.strip()] = int(number)
    return dims


def concrete_shape(spec: InputSpec, dims: Mapping[str, int]) -> tuple[tuple[int, ...], list[str]]:
    """The shape fed for `spec`, and the symbols that took the default 1."""
    shape: list[int] = []
    defaulted: list[str] = []
    for dim in spec.dims:
        if isinstance(dim, int) and dim > 0:
            shape.append(dim)
        elif isinstance(dim, str) and dim in dims:
            shape.append(dims[dim])
        else:
            shape.append(1)
            defaulted.append(dim if isinstance(dim, str) else f"{spec.name}[{len(shape) - 1}]")
    return tuple(shape), defaulted


def random_inputs(
    specs: Sequence[InputSpec], dims: Mapping[str, int], seed: int
) -> tuple[dict[str, npt.NDArray[np.generic]], list[str]]:
    """Deterministic random feeds for `specs` and the dimensions that defaulted to 1."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, npt.NDArray[np.generic]] = {}
    defaulted: list[str] = []
    for spec in specs:
        shape, missing = concrete_shape(spec, dims)
        defaulted += [name for name in missing if name not in defaulted]
        dtype = np.dtype(spec.dtype)
        if dtype == np.bool_:
            feeds[spec.name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            feeds[spec.name] = rng.integers(0, spec.high, size=shape).astype(dtype)
        elif np.issubdtype(dtype, np.floating):
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        else:
            raise UsageError(
                f"input {spec.render()}: no random values for {dtype}; give --inputs FILE.npz"
            )
    return feeds, defaulted


def npz_inputs(path: Path, specs: Sequence[InputSpec]) -> dict[str, npt.NDArray[np.generic]]:
    """Feeds from an .npz: arrays named after the inputs, or `arr_0`, `arr_1`... in order."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable .npz ({exc})") from exc
    feeds: dict[str, npt.NDArray[np.generic]] = {}
    for index, spec in enumerate(specs):
        array = arrays.get(spec.name, arrays.get(f"arr_{index}"))
        if array is None:
            raise UsageError(
                f"{path}: no array for input {spec.render()} (name it {spec.name!r} or "
                f"arr_{index}; the file holds {', '.join(sorted(arrays)) or 'nothing'})"
            )
        if len(array.shape) != len(spec.dims) or any(
            isinstance(dim, int) and dim > 0 and dim != size
            for dim, size in zip(spec.dims, array.shape, strict=True)
        ):
            raise UsageError(
                f"{path}: array for input {spec.render()} has shape {list(array.shape)}"
            )
        feeds[spec.name] = array.astype(np.dtype(spec.dtype), copy=False)
    return feeds

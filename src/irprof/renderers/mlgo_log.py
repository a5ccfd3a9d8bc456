"""An `MlgoLog` in LLVM's MLGO `TrainingLogger` format (llvm/lib/Analysis/TrainingLogger.cpp).

Design notes: docs/views.md, "Module notes", `renderers/mlgo_log.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson

from irprof.analyses.mlgo_features import MlgoLog, TensorSpec

_DTYPES = {"int64_t": "<i8", "float": "<f4", "double": "<f8", "int32_t": "<i4"}


def tensor_bytes(spec: TensorSpec, values: tuple[int, ...] | tuple[float, ...]) -> bytes:
    """`values` as the raw little-endian buffer of `spec`."""
    if len(values) != spec.elements:
        raise ValueError(f"{spec.name}: {len(values)} values for shape {spec.shape}")
    return np.asarray(values, dtype=_DTYPES[spec.type]).tobytes()


def _line(obj: object) -> bytes:
    return orjson.dumps(obj) + b"\n"


def training_log(log: MlgoLog) -> bytes:
    """The log's bytes."""
    parts = [
        _line({"features": [spec.to_json() for spec in log.features], "score": log.score.to_json()})
    ]
    for context in log.contexts:
        parts.append(_line({"context": context.name}))
        for number, observation in enumerate(context.observations):
            parts.append(_line({"observation": number}))
            parts += [
                tensor_bytes(spec, values)
                for spec, values in zip(log.features, observation.features, strict=True)
            ]
            parts.append(b"\n")
            parts.append(_line({"outcome": number}))
            parts.append(tensor_bytes(log.score, (observation.score,)))
            parts.append(b"\n")
    return b"".join(parts)


@dataclass(frozen=True)
class MlgoLogRenderer:
    """`ops.log`: one observation per profiled op, its measured mean time as the score."""

    name: str = "mlgo-log"
    extension: str = ".log"
    # What the renderer reads from a run bundle: `(bundle, level | None) -> MlgoLog`.
    input: str = "irprof.analyses.mlgo_features:load_mlgo_features"

    def render(self, data: MlgoLog) -> bytes:
        """TrainingLogger bytes."""
        return training_log(data)


RENDERER = MlgoLogRenderer()


@dataclass(frozen=True)
class DatasetEntry:
    """One log of a corpus: the run it came from and its file name in the corpus."""

    run: str
    file: str
    log: MlgoLog


def dataset_index(entries: list[DatasetEntry]) -> bytes:
    """`dataset.json` of a corpus: the specs, each log with its counts, and the names behind
    the ids (`op_kind_id`, `dialect_id`, `level_id` are CRC-32 of these names)."""
    from irprof.analyses.mlgo_features import name_id

    kinds: dict[str, str] = {}
    dialects: dict[str, str] = {}
    levels: dict[str, str] = {}
    for entry in entries:
        for context in entry.log.contexts:
            level = context.name.split(":", 1)[0]
            levels[str(name_id(level))] = level
            for observation in context.observations:
                kinds[str(name_id(observation.op_name))] = observation.op_name
                dialect = observation.op_name.split(".", 1)[0]
                dialects[str(name_id(dialect))] = dialect
    first = entries[0].log
    document = {
        "version": 1,
        "format": "LLVM MLGO TrainingLogger",
        "features": [spec.to_json() for spec in first.features],
        "score": first.score.to_json(),
        "logs": [
            {
                "run": entry.run,
                "file": entry.file,
                "contexts": len(entry.log.contexts),
                "observations": entry.log.observation_count,
            }
            for entry in entries
        ],
        "ids": {"op_kind_id": kinds, "dialect_id": dialects, "level_id": levels},
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)

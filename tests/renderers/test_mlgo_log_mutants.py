"""The MLGO training log and the corpus index, byte for byte, for a log written here: the JSON
lines and little-endian tensors of LLVM's `TrainingLogger` format built with `json` and
`struct`, each name's id its CRC-32, not taken from the code under test.

Written for `renderers/mlgo_log.py`, whose own tests need captured bundles.
"""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from irprof.analyses.mlgo_features import MlgoContext, MlgoLog, Observation, TensorSpec
from irprof.renderers.mlgo_log import (
    RENDERER,
    DatasetEntry,
    dataset_index,
    tensor_bytes,
    training_log,
)

A = TensorSpec("a", "int64_t", (1,))
B = TensorSpec("b", "float", (2,), port=1)
SCORE = TensorSpec("mean_ns", "int64_t", (1,))
LOG = MlgoLog(
    (A, B),
    SCORE,
    (
        MlgoContext(
            "tf:main",
            (
                Observation(0, "tf.Conv2D", ((7,), (5, -2)), 1_500),
                Observation(3, "tf.Relu", ((-1,), (1, 2)), 20),
            ),
        ),
        MlgoContext("stablehlo:f", (Observation(1, "stablehlo.add", ((2**40,), (0, 3)), 7),)),
    ),
)


def line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def spec_json(spec: TensorSpec) -> dict[str, object]:
    return {"name": spec.name, "type": spec.type, "port": spec.port, "shape": list(spec.shape)}


def test_the_training_log_byte_for_byte() -> None:
    expected = line({"features": [spec_json(A), spec_json(B)], "score": spec_json(SCORE)})
    for context in LOG.contexts:
        expected += line({"context": context.name})
        for number, observation in enumerate(context.observations):
            a, b = observation.features
            expected += line({"observation": number})
            expected += struct.pack("<q", *a) + struct.pack("<2f", *b) + b"\n"
            expected += line({"outcome": number})
            expected += struct.pack("<q", observation.score) + b"\n"
    assert training_log(LOG) == expected
    assert RENDERER.render(LOG) == expected
    assert (RENDERER.name, RENDERER.extension) == ("mlgo-log", ".log")
    assert RENDERER.input == "irprof.analyses.mlgo_features:load_mlgo_features"


@pytest.mark.parametrize(
    ("kind", "values", "packed"),
    [
        ("int64_t", (1, -2), struct.pack("<2q", 1, -2)),
        ("float", (0.25, 8.0), struct.pack("<2f", 0.25, 8.0)),
        ("double", (0.1, -3.0), struct.pack("<2d", 0.1, -3.0)),
        ("int32_t", (5, -6), struct.pack("<2i", 5, -6)),
    ],
)
def test_tensor_bytes_per_type(kind: str, values: tuple[float, ...], packed: bytes) -> None:
    assert tensor_bytes(TensorSpec("t", kind, (2,)), values) == packed


def test_tensor_bytes_refuses_the_wrong_count() -> None:
    with pytest.raises(ValueError, match=r"^t: 3 values for shape \(2,\)$"):
        tensor_bytes(TensorSpec("t", "int64_t", (2,)), (1, 2, 3))


def test_the_dataset_index() -> None:
    mm = Observation(0, "torch.aten.mm", ((1,), (1, 1)), 5)  # dialect: the first part
    other = MlgoLog((A, B), SCORE, (MlgoContext("torch:g", ()), MlgoContext("torch:h", (mm,))))
    entries = [DatasetEntry("run1", "run1.log", LOG), DatasetEntry("run2", "run2.log", other)]
    names = ["tf.Conv2D", "tf.Relu", "stablehlo.add", "torch.aten.mm"]
    expected = {
        "version": 1,
        "format": "LLVM MLGO TrainingLogger",
        "features": [spec_json(A), spec_json(B)],
        "score": spec_json(SCORE),
        "logs": [
            {"run": "run1", "file": "run1.log", "contexts": 2, "observations": 3},
            {"run": "run2", "file": "run2.log", "contexts": 2, "observations": 1},
        ],
        "ids": {
            "op_kind_id": {str(zlib.crc32(name.encode())): name for name in names},
            "dialect_id": {str(zlib.crc32(d.encode())): d for d in ("tf", "stablehlo", "torch")},
            "level_id": {str(zlib.crc32(d.encode())): d for d in ("tf", "stablehlo", "torch")},
        },
    }
    data = dataset_index(entries)
    assert json.loads(data) == expected
    assert data.decode() == json.dumps(expected, indent=2, sort_keys=True)


def test_a_dataset_of_one_run() -> None:
    index = json.loads(dataset_index([DatasetEntry("only", "only.log", LOG)]))
    assert index["features"] == [spec_json(A), spec_json(B)]
    assert [log["run"] for log in index["logs"]] == ["only"]

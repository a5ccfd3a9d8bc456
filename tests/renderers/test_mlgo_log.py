"""MLGO training logs read back with a reader written from the TrainingLogger format
description (header line, context lines, observation line + raw tensors + newline, outcome line
+ score bytes + newline), every value checked against the IR and the profiles."""

from __future__ import annotations

import io
import json
import math
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.mlir.op_index import derive_op_infos
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    fixture_jax_bundle,
    fixture_tf_bundle,
)

DTYPES = {"int64_t": "<i8", "float": "<f4", "double": "<f8", "int32_t": "<i4"}


def read_log(data: bytes) -> tuple[list[dict[str, Any]], dict[str, Any], list[Any]]:
    """(feature specs, score spec, [(context, observation number, {name: values}, score)])."""
    stream = io.BytesIO(data)
    header = json.loads(stream.readline())
    specs, score_spec = header["features"], header["score"]

    def tensor(spec: dict[str, Any]) -> list[Any]:
        dtype = np.dtype(DTYPES[spec["type"]])
        count = math.prod(spec["shape"])
        raw = stream.read(count * dtype.itemsize)
        assert len(raw) == count * dtype.itemsize, "truncated tensor"
        return np.frombuffer(raw, dtype=dtype).tolist()

    records = []
    context = None
    while line := stream.readline():
        event = json.loads(line)
        if "context" in event:
            context = event["context"]
            continue
        number = event["observation"]
        values = {spec["name"]: tensor(spec) for spec in specs}
        assert stream.read(1) == b"\n", "observation ends in a newline"
        assert json.loads(stream.readline()) == {"outcome": number}
        score = tensor(score_spec)
        assert stream.read(1) == b"\n", "score ends in a newline"
        records.append((context, number, values, score))
    return specs, score_spec, records


_TENSOR = re.compile(r"tensor<(\*x|(?:[0-9?]+x)*)(.+)>")
_ELEMENT = re.compile(r"(?:bf|f|si|ui|i)(\d+)")


def expected_tensor(type_text: str) -> tuple[list[int] | None, int]:
    """Dims (None when unranked) and element bits (0 when not a number type) read from the
    printed type, independently of the exporter."""
    match = _TENSOR.fullmatch(type_text)
    if match is None:
        return None, 0
    prefix, element = match.groups()
    dims = None if prefix == "*x" else [-1 if d == "?" else int(d) for d in prefix.split("x") if d]
    bits = _ELEMENT.fullmatch(element)
    return dims, int(bits.group(1)) if bits else 0


def padded(dims: list[int] | None) -> list[int]:
    return ((dims or []) + [0] * 6)[:6]


@pytest.mark.parametrize(
    ("bundle_name", "level"), [("tf_bundle", "tf"), ("jax_bundle", "stablehlo")]
)
def test_every_value_of_the_log_reads_back_as_the_ir_and_profile_say(
    bundle_name: str, level: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    bundle: RunBundle = request.getfixturevalue(bundle_name)
    out = tmp_path / "ops.log"
    assert (
        main(["export", str(bundle.root), "--to", "mlgo-log", "--level", level, "-o", str(out)])
        == 0
    )
    specs, score_spec, records = read_log(out.read_bytes())
    assert score_spec == {"name": "mean_ns", "type": "int64_t", "port": 0, "shape": [1]}
    assert specs[0]["name"] == "op_kind_id" and all(spec["port"] == 0 for spec in specs)
    loaded = load_annotated_level(bundle, level)
    infos = derive_op_infos(loaded.module)
    observed = [op for op in loaded.profiled.ops if op.profile is not None and not op.inclusive]
    assert len(records) == len(observed) > 0
    numbers: dict[str, int] = {}
    for (context, number, values, score), op in zip(records, observed, strict=True):
        assert context == f"{level}:{op.function}"
        assert number == numbers.get(context, 0)  # numbered from 0 in each context
        numbers[context] = number + 1
        assert op.profile is not None
        assert score == [op.profile.mean_ns]
        ir_op = infos[op.index].op.operation
        operands = [expected_tensor(str(v.type)) for v in ir_op.operands]
        results = [expected_tensor(str(v.type)) for v in ir_op.results]
        dims, bits = results[0] if results else (None, 0)
        assert values["op_kind_id"] == [zlib.crc32(op.op_name.encode())]
        assert values["dialect_id"] == [zlib.crc32(op.op_name.split(".")[0].encode())]
        assert values["level_id"] == [zlib.crc32(level.encode())]
        assert values["num_operands"] == [len(operands)]
        assert values["num_results"] == [len(results)]
        assert values["result_rank"] == [len(dims) if dims is not None else -1]
        assert values["result_shape"] == padded(dims)
        assert values["operand0_shape"] == padded(operands[0][0] if operands else None)
        assert values["operand1_shape"] == padded(operands[1][0] if len(operands) > 1 else None)
        known = dims is not None and all(d >= 0 for d in dims)
        assert values["result_elements"] == [math.prod(dims) if known and dims is not None else -1]
        assert values["element_bits"] == [bits]
        sized = [
            (d, b) for d, b in (*operands, *results) if d is not None and min(d, default=0) >= 0
        ]
        assert values["tensor_bytes"] == [sum(math.prod(d) * b // 8 for d, b in sized if b)]
        assert values["event_count"] == [op.profile.count]
        assert values["estimated"] == [int(op.profile.group_size > 1)]
        assert values["group_size"] == [op.profile.group_size]


def conv_features(bundle: RunBundle, kind: bytes, tmp_path: Path) -> dict[str, list[int]]:
    out = tmp_path / f"{bundle.root.parent.name}.log"
    assert main(["export", str(bundle.root), "--to", "mlgo-log", "-o", str(out)]) == 0
    _, _, records = read_log(out.read_bytes())
    found = [v for _, _, v, _ in records if v["op_kind_id"] == [zlib.crc32(kind)]]
    assert len(found) == 1
    return found[0]


def test_conv_observations_say_what_the_level_knows(
    tf_bundle: RunBundle, jax_bundle: RunBundle, tmp_path: Path
) -> None:
    jax_conv = conv_features(jax_bundle, b"stablehlo.convolution", tmp_path)
    assert jax_conv["result_rank"] == [4] and jax_conv["result_shape"][4:] == [0, 0]
    assert min(jax_conv["result_shape"][:4]) > 0 and jax_conv["element_bits"] == [32]
    assert jax_conv["estimated"] == [0]  # XLA ran the convolution as a thunk of its own
    tf_conv = conv_features(tf_bundle, b"tf.Conv2D", tmp_path)
    assert tf_conv["result_rank"] == [-1]  # the `tf` level is unranked (`tensor<*xf32>`)
    assert tf_conv["element_bits"] == [32]
    assert tf_conv["estimated"] == [1] and tf_conv["group_size"] == [3]  # fused oneDNN kernel


def test_dataset_gathers_runs_with_an_index_of_logs_and_ids(
    tf_bundle: RunBundle, jax_bundle: RunBundle, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    assert main(["dataset", str(tf_bundle.root), str(jax_bundle.root), "-o", str(corpus)]) == 0
    index = json.loads((corpus / "dataset.json").read_text())
    assert [log["file"] for log in index["logs"]] == ["000-run.log", "001-run.log"]
    for log in index["logs"]:
        _, _, records = read_log((corpus / log["file"]).read_bytes())
        assert len(records) == log["observations"] > 0
        for _, _, values, _ in records:
            name = index["ids"]["op_kind_id"][str(values["op_kind_id"][0])]
            assert zlib.crc32(name.encode()) == values["op_kind_id"][0]
    assert "stablehlo.convolution" in index["ids"]["op_kind_id"].values()


def test_dataset_of_an_unannotated_run_writes_nothing(tmp_path: Path, fixtures: Path) -> None:
    corpus = tmp_path / "corpus"
    code = main(["dataset", str(fixtures / "tf" / "cnn-infer"), "-o", str(corpus)])
    assert code == 2
    assert not corpus.exists()

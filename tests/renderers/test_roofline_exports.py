"""The cost model in the exports: FLOP and byte features in the MLGO log, and a counter track of
achieved GFLOP/s per IR level in the native Perfetto trace (decoded with Perfetto's protos)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from zlib import crc32

import pytest

from irprof.bundle import RunBundle
from irprof.cli.main import main
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    fixture_jax_bundle,
    fixture_tf_bundle,
)
from tests.renderers.test_mlgo_log import read_log
from tests.renderers.test_perfetto_proto import annotations, check_track_sequences, decode

F32 = 4
DENSE_FLOPS = 2 * 16 * 128 * 6272  # jax_mlp.py: x[16, 6272] @ w[6272, 128]


def test_mlgo_log_carries_flops_and_bytes_per_op(
    jax_bundle: RunBundle, tf_bundle: RunBundle, tmp_path: Path
) -> None:
    out = tmp_path / "jax.log"
    assert main(["export", str(jax_bundle.root), "--to", "mlgo-log", "-o", str(out)]) == 0
    specs, _, records = read_log(out.read_bytes())
    assert [spec["name"] for spec in specs][-2:] == ["flops", "bytes_moved"]
    by_shape = {tuple(v["operand0_shape"][:2]): v for _, _, v, _ in records}
    dense = by_shape[(16, 6272)]
    assert dense["flops"] == [DENSE_FLOPS]
    assert dense["bytes_moved"] == [(16 * 6272 + 6272 * 128 + 16 * 128) * F32]
    (conv,) = [v for _, _, v, _ in records if v["op_kind_id"] == [crc32(b"stablehlo.convolution")]]
    assert conv["flops"] == [2 * 16 * 28 * 28 * 8 * 3 * 3]
    # The `tf` level is unranked: no FLOPs can be known, and the log says so with -1.
    tf_out = tmp_path / "tf.log"
    argv = ["export", str(tf_bundle.root), "--to", "mlgo-log", "--level", "tf", "-o", str(tf_out)]
    assert main(argv) == 0
    _, _, tf_records = read_log(tf_out.read_bytes())
    assert any(v["flops"] == [-1] and v["result_rank"] == [-1] for _, _, v, _ in tf_records)


def counter_steps(trace: Any, name: str) -> list[tuple[int, float]]:
    uuids = {
        p.track_descriptor.uuid
        for p in trace.packet
        if p.HasField("track_descriptor") and p.track_descriptor.name == name
    }
    assert len(uuids) == 1, name
    return [
        (p.timestamp, p.track_event.double_counter_value)
        for p in trace.packet
        if p.HasField("track_event") and p.track_event.track_uuid in uuids
    ]


def test_perfetto_has_a_flop_rate_counter_per_level(jax_bundle: RunBundle, tmp_path: Path) -> None:
    out = tmp_path / "run.pftrace"
    assert main(["export", str(jax_bundle.root), "--to", "perfetto", "-o", str(out)]) == 0
    trace = decode(out.read_bytes())
    slices = check_track_sequences(trace)
    op_slices = [
        (ts, annotations(event))
        for events in slices.values()
        for ts, event in events
        if "irprof.op" in event.categories
    ]
    dense = [notes for _, notes in op_slices if notes.get("op") == "stablehlo.dot_general"]
    assert any(notes.get("flops") == DENSE_FLOPS for notes in dense)
    steps = counter_steps(trace, "achieved GFLOP/s · IR level stablehlo")
    assert steps and all(value >= 0 for _, value in steps) and steps[-1][1] == 0
    # The rate integrated over time is the work of every op slice (GFLOP/s x ns = FLOP).
    integral = sum(value * (steps[i + 1][0] - ts) for i, (ts, value) in enumerate(steps[:-1]))
    work = sum(notes.get("flops", 0) for _, notes in op_slices)
    assert integral == pytest.approx(work, rel=1e-6)
    assert work >= 3 * DENSE_FLOPS

"""What `irprof annotate` prints: conserved figures to the nanosecond, scaled units elsewhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from irprof.cli.main import main

MLP_RUN = Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run"


def test_profiled_and_attributed_time_print_scaled_and_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(MLP_RUN, run)
    assert main(["annotate", str(run)]) == 0
    out = capsys.readouterr().out
    record = orjson.loads((run / "coverage.json").read_bytes())["levels"]["stablehlo"]
    profiled, attributed = record["profiled_ns"], record["attributed_ns"]
    assert f"({profiled:,} ns)" in out and f"({attributed:,} ns)" in out
    assert f"{profiled / 1e6:.2f} ms" in out  # 4.89 ms, as `top` scales it
    assert "0.000 ms" not in out

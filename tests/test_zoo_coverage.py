"""Capture each model of examples/zoo/ and check its attribution at every level."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ZOO = Path(__file__).resolve().parents[1] / "examples" / "zoo"
# Floors under what the zoo measures today (README table), with room for timing noise: the
# unattributed rest is listed (argument copy-in, XLA layout copies), never silent.
TIME_FLOOR = {"tf": 0.95, "torch": 0.99, "jax": 0.85}
NONTRIVIAL_FLOOR = 0.95


def zoo_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zoo_coverage_table", ZOO / "coverage_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TABLE = zoo_module()


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [pytest.param(m, marks=getattr(pytest.mark, m.split("_")[0])) for m in TABLE.MODELS],
)
def test_zoo_model_is_attributed_at_every_level(model: str, tmp_path: Path) -> None:
    pytest.importorskip({"tf": "tensorflow", "torch": "torch", "jax": "jax"}[model.split("_")[0]])
    rows = TABLE.measure(model, TABLE.capture(model, tmp_path / model))
    assert rows, f"{model}: no level was correlated"
    for row in rows:
        coverage = row.result.coverage
        listed = sum(event.total_ns for event in coverage.unmatched_events)
        assert coverage.attributed_ns + listed == coverage.profiled_ns, row.level
        assert all(event.reason for event in coverage.unmatched_events)
        assert row.time_coverage >= TIME_FLOOR[model.split("_")[0]], (row.level, coverage)
        assert row.nontrivial_coverage >= NONTRIVIAL_FLOOR, (row.level, coverage.unmatched_ops)

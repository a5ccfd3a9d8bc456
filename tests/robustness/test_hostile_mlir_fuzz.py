"""Fuzzing the MLIR loader (issue 17): mutated real fixtures end in exit 0 or exit 2, never a crash.

GIVEN a real `.mlir` fixture cut short, with bytes flipped, garbage inserted or deep nesting
spliced in, WHEN `irprof opt` loads it, THEN it exits 0, or 2 naming the file; a traceback would
fail the test and a segfault would end the run. Budget: 60 examples, a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irprof.cli.main as cli_main

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOURCES = [
    FIXTURES / "mlir" / "jax.stablehlo.mlir",
    FIXTURES / "mlir" / "tf.function.mlir",
    FIXTURES / "mlir" / "torch.fx.mlir",
    FIXTURES / "torch" / "cnn" / "ir" / "torch.mlir",  # has a dense_resource blob section
]
GARBAGE = [b"\0", b"\xff\xfe", b'"', b"{-#", b"#-}", b"loc(", b"7" * 2000, b"}", b"\x1b[31m"]


@st.composite
def mutated_mlir(draw: st.DrawFn) -> bytes:
    """One fixture with one mutation."""
    data = SOURCES[draw(st.integers(0, len(SOURCES) - 1))].read_bytes()
    at = draw(st.integers(0, len(data)))
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "nest"]))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        position = min(at, len(data) - 1)
        flipped = data[position] ^ (1 << draw(st.integers(0, 7)))
        return data[:position] + bytes([flipped]) + data[position + 1 :]
    if kind == "insert":
        return data[:at] + draw(st.sampled_from(GARBAGE)) + data[at:]
    opener = draw(st.sampled_from([b"[", b"(", b"{", b"module {\n", b"tensor<"]))
    return data[:at] + opener * draw(st.integers(500, 3000)) + data[at:]


@pytest.fixture(autouse=True)
def _only_opt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("irprof.cli.opt_cmd",))


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=mutated_mlir())
def test_mutated_fixture_exits_0_or_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    source = tmp_path / "mutant.mlir"
    source.write_bytes(data)
    out = tmp_path / "out.mlir"
    out.unlink(missing_ok=True)
    code = cli_main.main(["opt", str(source), "-o", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    if code == 2:
        assert str(source) in err
        assert not out.exists()

"""Hostile `.mlirbc` bytecode: the bindings' bytecode reader is not memory-safe (one changed byte
of a valid file segfaults it), so bytecode is parsed in a child process first and a crash there
is an MlirError (exit 2) here, never the death of the command."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import MlirError
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module, parse_module
from irprof.mlir.op_index import walk_ops

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mlir" / "jax.stablehlo.mlir"
# Found by byte mutation of the fixture's bytecode (956 bytes with this compiler): this byte
# set to 240 makes the reader segfault (exit 139 before the probe).
CRASH_OFFSET, CRASH_VALUE = 388, 240


def bytecode() -> bytes:
    buffer = io.BytesIO()
    load_module(FIXTURE, make_context()).operation.write_bytecode(buffer)
    return buffer.getvalue()


def crashing_bytecode() -> bytes:
    data = bytearray(bytecode())
    assert len(data) == 956, "the fixture's bytecode changed: find a crashing byte again"
    data[CRASH_OFFSET] = CRASH_VALUE
    return bytes(data)


def test_a_bytecode_that_crashes_the_parser_is_an_mlir_error(tmp_path: Path) -> None:
    path = tmp_path / "hostile.mlirbc"
    path.write_bytes(crashing_bytecode())
    with pytest.raises(MlirError) as caught:
        load_module(path, make_context())
    message = str(caught.value)
    assert message.startswith(f"{path}: the MLIR bytecode parser crashed")
    assert "SIGSEGV" in message
    with pytest.raises(MlirError, match="bytecode parser crashed"):
        parse_module(crashing_bytecode(), make_context(), source_name="bytes")


@pytest.mark.parametrize(("command", "output"), [("opt", "out.mlir"), ("graph", "out.dot")])
def test_cli_exits_2_on_crashing_bytecode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, output: str
) -> None:
    path = tmp_path / "hostile.mlirbc"
    path.write_bytes(crashing_bytecode())
    assert main([command, str(path), "-o", str(tmp_path / output)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "crashed" in err and "Traceback" not in err
    assert not (tmp_path / output).exists()


def test_valid_and_merely_invalid_bytecode_behave_as_before(tmp_path: Path) -> None:
    path = tmp_path / "valid.mlirbc"
    path.write_bytes(bytecode())
    module = load_module(path, make_context())
    assert any(op.name == "stablehlo.dot_general" for op in walk_ops(module))
    truncated = tmp_path / "truncated.mlirbc"
    truncated.write_bytes(bytecode()[:100])
    with pytest.raises(MlirError) as caught:
        load_module(truncated, make_context())
    assert str(caught.value).startswith(f"{truncated}: not valid MLIR")

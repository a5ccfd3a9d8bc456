"""`irprof opt` as a user meets it: outputs, listing, and every bad input (exit 2, no output)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from iree.compiler import ir

import irprof.cli.main as cli_main
from irprof.mlir.context import make_context
from irprof.mlir.load import load_module

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mlir"
GOOD = FIXTURES / "jax.stablehlo.mlir"


@pytest.fixture(autouse=True)
def _only_mlir_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the real `main` with this area's commands only (others may not be importable)."""
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("irprof.cli.opt_cmd",))


def test_writes_output_file_with_locations(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    code = cli_main.main(
        ["opt", str(GOOD), "--pass-pipeline=builtin.module(irprof-stamp-origin{level=s}, cse)",
         "--mlir-print-debuginfo", "-o", str(out)]
    )  # fmt: skip
    assert code == 0
    text = out.read_text()
    assert 'loc("irprof.origin=s#1"' in text
    assert "stablehlo.dot_general" in load_module(out, make_context()).operation.get_asm()


def test_stdout_without_debuginfo_has_no_locations(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["opt", str(GOOD), "--pass-pipeline=builtin.module(canonicalize)"]) == 0
    out = capsys.readouterr().out
    assert "stablehlo.tanh" in out and "loc(" not in out


def test_generic_form_and_bytecode_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_module(GOOD, make_context())
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    bytecode = tmp_path / "m.mlirbc"
    bytecode.write_bytes(buffer.getvalue())
    assert cli_main.main(["opt", str(bytecode), "--mlir-print-op-generic"]) == 0
    assert '"stablehlo.dot_general"(' in capsys.readouterr().out


def test_list_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["opt", "--list-passes"]) == 0
    out = capsys.readouterr().out
    for name in ("irprof-annotate", "irprof-reattach", "irprof-stamp-origin", "irprof-strip"):
        assert name in out


def test_print_ir_after_all_and_verify_each(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    code = cli_main.main(
        ["opt", str(GOOD), "--pass-pipeline=builtin.module(irprof-stamp-origin, inline)",
         "--print-ir-after-all", str(dumps), "--verify-each", "-o", str(tmp_path / "o.mlir")]
    )  # fmt: skip
    assert code == 0
    assert sorted(p.name for p in dumps.iterdir()) == [
        "00-irprof-stamp-origin.mlir",
        "01-inline.mlir",
    ]


TRUNCATED = "module {\n  func.func @f() {\n    return\n"


@pytest.mark.parametrize(
    ("content", "pipeline", "message"),
    [
        (b"\x00\xff\xfe not mlir", "", "neither MLIR text"),
        (b"hello world\n", "", "in.mlir:1:1: error: custom op 'hello' is unknown"),
        (TRUNCATED.encode(), "", "in.mlir:3:11: error: expected operation name"),
        (b"", "", "empty input"),
        (GOOD.read_bytes(), "builtin.module(canonicalise)", "did you mean canonicalize"),
        (GOOD.read_bytes(), "builtin.module(irprof-strp)", "did you mean irprof-strip"),
        (
            GOOD.read_bytes(),
            "builtin.module(irprof-annotate{profile=p.json attr=json})",
            "pass 'irprof-annotate': option 'attr=json' is invalid",
        ),
        (
            GOOD.read_bytes(),
            "builtin.module(irprof-annotate{profile=missing.json})",
            "missing.json: no such opprofile file",
        ),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    pipeline: str,
    message: str,
) -> None:
    source = tmp_path / "in.mlir"
    source.write_bytes(content)
    out = tmp_path / "out.mlir"
    args = ["opt", str(source), "-o", str(out)]
    if pipeline:
        args.append(f"--pass-pipeline={pipeline}")
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert message in err.replace("\n", " ") or message in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [source]
    assert source.read_bytes() == content


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["opt", str(tmp_path / "nope.mlir")]) == 2
    assert "nope.mlir: cannot read" in capsys.readouterr().err


def test_bindings_context_parses_tf_and_stablehlo_side_by_side() -> None:
    context = make_context()
    assert context.allow_unregistered_dialects
    for fixture in ("tf.function.mlir", "jax.stablehlo.mlir", "torch.fx.mlir", "iree.flow.mlir"):
        assert isinstance(load_module(FIXTURES / fixture, context), ir.Module)

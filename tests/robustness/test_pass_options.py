"""A known native pass given a wrong option is reported as such: the pass, the option and
LLVM's own reason, never "unknown pass 'canonicalize' ... did you mean canonicalize"."""

from __future__ import annotations

from pathlib import Path

import pytest

from irprof.cli.main import main
from irprof.errors import PipelineError
from irprof.mlir.context import make_context
from irprof.passes.pipeline import parse_pipeline

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mlir" / "jax.stablehlo.mlir"


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        (
            "builtin.module(canonicalize{max-iterations=99999999999999999999})",
            "pass 'canonicalize' in 'canonicalize{max-iterations=99999999999999999999}': "
            "invalid options {max-iterations=99999999999999999999}: for the --max-iterations "
            "option: '99999999999999999999' value invalid",
        ),
        (
            "builtin.module(symbol-dce{bogus})",
            "pass 'symbol-dce' in 'symbol-dce{bogus}': invalid options {bogus}: "
            "no such option bogus",
        ),
        ("builtin.module(func.func(cse{x=1}))", "pass 'cse' in 'func.func(cse{x=1})'"),
    ],
)
def test_a_wrong_option_of_a_known_pass_names_the_option(pipeline: str, expected: str) -> None:
    with pytest.raises(PipelineError) as caught:
        parse_pipeline(pipeline, make_context())
    assert expected in str(caught.value)
    assert "unknown pass" not in str(caught.value)


def test_cli_opt_exits_2_with_the_option_and_no_llvm_noise(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.mlir"
    pipeline = "builtin.module(canonicalize{max-iterations=99999999999999999999})"
    assert main(["opt", str(FIXTURE), "--pass-pipeline", pipeline, "-o", str(out)]) == 2
    err = capfd.readouterr().err
    assert "invalid options {max-iterations=99999999999999999999}" in err
    assert err.count("value invalid for long argument") == 1  # ours, not LLVM's raw print
    assert "did you mean" not in err and not out.exists()

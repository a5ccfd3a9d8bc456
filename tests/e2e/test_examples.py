"""The bundled examples stay true: IR shipped as an example points at its source's real lines."""

from __future__ import annotations

import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOCATION = re.compile(r'loc\("(?P<file>[^"]+\.py)":(?P<line>\d+):(?P<col>\d+)')


def test_the_iree_example_locations_name_code_of_jax_mlp() -> None:
    """`iree_mlp.stablehlo.mlir` is the StableHLO `capture jax` wrote for `jax_mlp.py`: each
    file:line:col must land on code of that file (a stale copy points at blank lines)."""
    text = (EXAMPLES / "iree_mlp.stablehlo.mlir").read_text(encoding="utf-8")
    found = [m for m in LOCATION.finditer(text) if m["file"] == "jax_mlp.py"]
    assert len(found) >= 8
    source = (EXAMPLES / "jax_mlp.py").read_text(encoding="utf-8").splitlines()
    for match in found:
        line, col = int(match["line"]), int(match["col"])
        code = source[line - 1]
        assert code.strip() and not code.lstrip().startswith("#"), (match.group(0), code)
        # JAX writes 0-based columns: the first character of the expression.
        assert col < len(code) and not code[col].isspace(), (match.group(0), code)

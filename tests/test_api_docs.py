"""The Python examples of docs/api.md and of the README's "In Python" section run as written
(on a copy of the JAX fixture bundle), so a broken example fails the suite."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MLP_RUN = ROOT / "tests" / "fixtures" / "jax" / "mlp_run"


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_every_example_of_the_api_page_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    monkeypatch.chdir(ROOT)  # the page copies tests/fixtures/... by its repository path
    before = sorted(path.name for path in MLP_RUN.rglob("*"))
    namespace: dict[str, object] = {"__name__": "api_md"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/api.md block {number}", "exec"), namespace)
    assert sorted(path.name for path in MLP_RUN.rglob("*")) == before  # the fixture is untouched


def test_the_readme_in_python_block_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## In Python") :]
    block = python_blocks(section)[0]
    # Capturing needs JAX and minutes: the block runs on the captured fixture instead.
    capture = next(line for line in block.splitlines() if "capture_model(" in line)
    shutil.copytree(MLP_RUN, tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    code = block.replace(capture, 'run = irprof.open_run("run")')
    exec(compile(code, "README.md In Python", "exec"), {"__name__": "readme"})
    assert "of profiled time on" in capsys.readouterr().out
    assert (tmp_path / "run" / "report.html").is_file()

"""The command outputs shown in the docs are what irprof prints on the committed inputs.

In a page of `docs/` or the README, a fenced block right after `<!-- output: irprof ARGS -->`
shows `$ irprof ARGS` and then what the command prints (stdout and stderr, interleaved as a
terminal of `DOC_COLUMNS` columns shows them, without colour, trailing spaces trimmed); a wide
table can ask for another width as the shell would, `<!-- output: COLUMNS=120 irprof ARGS -->`.
`<!-- setup: irprof ARGS -->` runs a command whose output is not shown (e.g. `irprof annotate`
of a bundle a later block reads). The commands of one page run in page order, in-process
(`irprof.cli.main.main`), on a fresh copy of the repository's `tests/fixtures/` and `examples/`
so that paths in them are relative to the repository root and nothing committed is written.

A block edited by hand, or an output that changed, fails with a diff. To regenerate every block
from the current code: `IRPROF_UPDATE_DOCS=1 .venv/bin/pytest tests/test_docs_outputs.py`.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from irprof.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
COPIED = ("tests/fixtures", "examples")  # what the commands may read, copied per page
DOC_COLUMNS = 100
UPDATE = os.environ.get("IRPROF_UPDATE_DOCS") == "1"

MARKER = re.compile(r"^<!-- (?P<role>output|setup): (?P<command>.+?) -->\n", re.M)
FENCE = re.compile(r"^```[\w-]*\n(?P<body>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Marked:
    """One marked command of a page: its role, its words and, for an output, its block's body
    (`body_start`/`body_end` are offsets in the page text)."""

    role: str
    command: str
    line: int
    body: str = ""
    body_start: int = 0
    body_end: int = 0


def marked_commands(text: str, page: str) -> list[Marked]:
    """The `output` and `setup` markers of a page in order; an output marker must be followed
    by a fenced block on the next line."""
    found: list[Marked] = []
    for match in MARKER.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        command = match["command"].strip()
        if not re.match(r"(COLUMNS=\d+ )?irprof ", command):
            raise AssertionError(f"{page}:{line}: a marked command is `[COLUMNS=N] irprof ...`")
        if match["role"] == "setup":
            found.append(Marked("setup", command, line))
            continue
        fence = FENCE.match(text, match.end())
        if fence is None:
            raise AssertionError(f"{page}:{line}: `<!-- output: ... -->` must precede a ``` block")
        found.append(
            Marked("output", command, line, fence["body"], fence.start("body"), fence.end("body"))
        )
    return found


def run_in(workspace: Path, command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Exit code and the trimmed terminal text of one irprof command run in `workspace`."""
    words = shlex.split(command)
    columns = words.pop(0).removeprefix("COLUMNS=") if words[0] != "irprof" else DOC_COLUMNS
    monkeypatch.setenv("COLUMNS", str(columns))
    argv = words[1:]
    terminal = io.StringIO()
    with (
        contextlib.chdir(workspace),
        contextlib.redirect_stdout(terminal),
        contextlib.redirect_stderr(terminal),
    ):
        code = main(argv)
    lines = [line.rstrip() for line in terminal.getvalue().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return code, "\n".join(lines)


def expected_body(command: str, output: str) -> str:
    """A block's text: the prompt line, then the output."""
    return f"$ {command}\n{output}\n" if output else f"$ {command}\n"


def pages_with_markers() -> list[Path]:
    """The pages that mark at least one command."""
    return [page for page in PAGES if MARKER.search(page.read_text(encoding="utf-8"))]


@pytest.fixture
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal without colour or progress display."""
    monkeypatch.setenv("LINES", "50")
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "IRPROF_PROGRESS"):
        monkeypatch.delenv(name, raising=False)


def test_the_docs_mark_their_outputs() -> None:
    # A parser that finds nothing would make the page test below vacuous.
    marked = [
        item
        for page in pages_with_markers()
        for item in marked_commands(page.read_text(encoding="utf-8"), page.name)
        if item.role == "output"
    ]
    assert len(marked) >= 5
    assert all(item.body.startswith(f"$ {item.command}\n") or UPDATE for item in marked)


def test_no_unmarked_block_shows_a_command_on_committed_inputs() -> None:
    # A `$ irprof ... tests/fixtures/...` block reads as exact output: it must be checked.
    unmarked = [
        f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, block.start()) + 1}"
        for page in PAGES
        for text in [page.read_text(encoding="utf-8")]
        for block in FENCE.finditer(text)
        if not re.search(r"^<!-- output: .+ -->\n\Z", text[: block.start()], re.M)
        and re.search(r"^\$ irprof .*tests/fixtures/", block["body"], re.M)
    ]
    assert not unmarked, f"mark these blocks with <!-- output: ... -->: {unmarked}"


@pytest.mark.parametrize("page", pages_with_markers(), ids=lambda page: str(page.relative_to(ROOT)))
def test_each_shown_output_is_what_the_command_prints(
    page: Path, tmp_path: Path, plain_terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = str(page.relative_to(ROOT))
    for relative in COPIED:
        shutil.copytree(
            ROOT / relative, tmp_path / relative, ignore=shutil.ignore_patterns("__pycache__")
        )
    text = page.read_text(encoding="utf-8")
    replacements: list[tuple[int, int, str]] = []
    stale: list[str] = []
    for item in marked_commands(text, name):
        code, output = run_in(tmp_path, item.command, monkeypatch)
        assert code == 0, f"{name}:{item.line}: `{item.command}` exited {code}:\n{output}"
        assert str(tmp_path) not in output, f"{name}:{item.line}: output names the temp folder"
        if item.role == "setup":
            continue
        want = expected_body(item.command, output)
        if item.body != want:
            replacements.append((item.body_start, item.body_end, want))
            diff = difflib.unified_diff(
                item.body.splitlines(), want.splitlines(), "shown", "printed", lineterm=""
            )
            stale.append(f"{name}:{item.line}: `{item.command}`\n" + "\n".join(diff))
    if UPDATE and replacements:
        for start, end, body in reversed(replacements):
            text = text[:start] + body + text[end:]
        page.write_text(text, encoding="utf-8")
        return
    assert not stale, (
        "shown outputs differ from what irprof prints (regenerate with IRPROF_UPDATE_DOCS=1):\n"
        + "\n\n".join(stale)
    )

"""In CI (the `CI` variable set) a skipped test fails: a broken install must not stay green."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
PROBE = """
import pytest

@pytest.mark.skipif(True, reason="needs Graphviz dot")
def test_needs_dot():
    pass

def test_runs():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "expected"), [("1", {"passed": 1, "errors": 1}), ("", {"passed": 1, "skipped": 1})]
)
def test_skip_fails_only_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, expected: dict[str, int]
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(**expected)


def test_module_level_importorskip_fails_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "1")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_probe="import pytest\npytest.importorskip('no_such_module_xyz')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*skipped in CI*no_such_module_xyz*"])

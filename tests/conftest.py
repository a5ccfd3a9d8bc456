"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.zoo_captures import ZooCaptures

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]

# The suite runs dozens of real TF and JAX captures: they may use every core (as the frameworks
# do by themselves). Users get one thread by default; the tests of that default and of the
# rankings it protects pass `--threads` or clear the variable themselves.
os.environ.setdefault("IRPROF_CAPTURE_THREADS", str(os.cpu_count() or 1))
# Every capture measures what profiling costs a step, in 5 rounds by default, each starting and
# stopping the framework's profiler twice (~1.5 s a round for a small TF model). One round is
# the whole measurement still, so the suite's captures record it in one (its own tests set it).
os.environ.setdefault("IRPROF_OVERHEAD_ROUNDS", "1")


@pytest.fixture
def fixtures() -> Path:
    """Folder of the shipped fixtures."""
    return FIXTURES


@pytest.fixture(scope="session")
def zoo_captures(tmp_path_factory: pytest.TempPathFactory) -> ZooCaptures:
    """Zoo models captured once per session and options (`tests/zoo_captures.py`)."""
    # Imported here: tests/test_ci_skips.py runs this conftest in a folder without `tests`.
    from tests.zoo_captures import ZooCaptures

    return ZooCaptures(tmp_path_factory.mktemp("zoo_captures"))


# In CI, `make test` has installed every dependency a test can skip on (frameworks, Graphviz,
# Chromium, the IREE tools): a skip there means a broken install, and must not pass as green.
STRICT_SKIPS = bool(os.environ.get("CI"))


def _fail_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if STRICT_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (CI is set; every dependency is installed): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """Module-level skips (`importorskip`) fail in CI."""
    outcome = yield
    _fail_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Test-level skips fail in CI."""
    outcome = yield
    _fail_skip(outcome.get_result())

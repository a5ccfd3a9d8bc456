"""The HTML report of a torch run in headless Chromium: the summary shows the capture overhead."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.report_data import build_report_data
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.fileio import write_bytes_atomic
from irprof.renderers.report_html import RENDERER

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FIXTURES = Path(__file__).parents[2] / "fixtures" / "torch"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        instance = driver.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        yield instance
        instance.close()


def summary_text(browser: Any, fixture: str, tmp_path: Path) -> str:
    """Annotate a copy of the fixture, write its report, open it and read the summary tab."""
    run = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, run)
    bundle = RunBundle(run)
    annotate_bundle(bundle, level="torch")
    write_bytes_atomic(bundle.report_path, RENDERER.render(build_report_data(bundle)))
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(bundle.report_path.resolve().as_uri())
    page.wait_for_selector("#tab-summary")
    text: str = page.inner_text("#tab-summary")
    assert errors == []
    return text


def test_summary_shows_the_capture_overhead(browser: Any, tmp_path: Path) -> None:
    text = summary_text(browser, "train", tmp_path)
    assert "capture overhead" in text
    assert "x the profiler alone at" in text and "x no profiler at" in text


def test_a_bundle_without_an_overhead_record_shows_no_card(browser: Any, tmp_path: Path) -> None:
    text = summary_text(browser, "cnn", tmp_path)  # captured before the record existed
    assert "capture overhead" not in text
    assert "time coverage" in text

"""The report's new tabs in headless Chromium: the summary leading with scopes and measured
groups, the scope icicle (click to zoom), the roofline (points, hover titles, details) and the
diff against another run (`irprof report RUN --against RUN_A`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.machine_peaks import given_peaks
from irprof.analyses.report_data import build_report_data
from irprof.bundle import RunBundle
from irprof.cli.main import main
from irprof.fileio import write_bytes_atomic
from irprof.renderers.report_html import RENDERER
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    FIXTURES,
    annotate_copy,
    fixture_jax_bundle,
    fixture_tf_bundle,
)
from tests.renderers.test_report_browser import (  # noqa: F401  (the browser fixture, by its name)
    CHROMIUM,
    fixture_browser,
    open_page,
    shoot,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def _ms(text: str) -> float:
    """The first time in a line of the page, in ms."""
    found = re.search(r"([\d.]+) (ms|µs|us|s)\b", text)
    assert found, text
    return float(found.group(1)) * {"ms": 1.0, "µs": 1e-3, "us": 1e-3, "s": 1e3}[found.group(2)]


def test_summary_scopes_and_roofline_tabs(browser: Any, jax_bundle: RunBundle) -> None:
    data = build_report_data(jax_bundle, peaks=given_peaks(50.0, 20.0))
    write_bytes_atomic(jax_bundle.report_path, RENDERER.render(data))
    page, problems = open_page(browser, jax_bundle.report_path)
    assert page.locator("nav button[data-tab=diff]").count() == 0  # no second run, no diff
    # The summary reads past the one `jit(mlp)` scope.
    headings = page.locator("main h2").all_inner_texts()
    assert headings.index("Where the time goes") < headings.index("Levels")
    assert headings.index("Hottest groups and ops") < headings.index("Levels")
    # The scopes are listed hottest first (times read off the page), each inside `jit(mlp)/`.
    items = page.locator("#summary-scopes li").all_inner_texts()
    times = [_ms(item) for item in items]
    assert len(items) >= 2 and times == sorted(times, reverse=True)
    assert all(item.startswith("jit(mlp)/") for item in items)
    assert "measured group of 4 ops" in page.inner_text("#summary-hottest")
    shoot(page, "report_summary_scopes.png")

    page.click("nav button[data-tab=scopes]")
    page.wait_for_selector("#icicle-view svg g.cell")
    dense = page.locator("#icicle-view g.cell[data-label='jit(dense)']")
    conv = page.locator("#icicle-view g.cell[data-label='conv_general_dilated']")
    assert conv.is_visible()
    dense.click()
    assert page.inner_text("#scope-details h3") == "jit(mlp)/jit(dense)"
    assert "dot_general" in page.inner_text("#scope-details table")
    # Zoomed: the scope fills the width, the convolution beside it is out of view.
    assert float(dense.locator("rect").get_attribute("width")) == pytest.approx(1200, abs=0.5)
    assert not conv.is_visible()
    assert page.inner_text("#icicle-path") == "jit(mlp)/jit(dense)"
    shoot(page, "report_scopes_zoomed.png")
    page.click("text=whole level")
    assert conv.is_visible()

    page.click("nav button[data-tab=roofline]")
    page.wait_for_selector("#roofline-view svg g.point")
    assert "peaks 50.0 GFLOP/s, 20.0 GB/s" in page.inner_text("#roofline-peaks")
    points = page.locator("#roofline-view g.point")
    titles = [points.nth(i).locator("title").text_content() for i in range(points.count())]
    assert any("dot_general" in t and "jax_mlp.py:" in t for t in titles)
    page.locator("#roofline-table tbody tr", has_text="dot_general").first.click()
    details = page.inner_text("#roofline-details")
    assert "GFLOP/s" in details and "FLOP/B" in details and "-bound" in details
    points.first.click()  # the longest row's circle is drawn first
    assert "of the roof" in page.inner_text("#roofline-details")
    shoot(page, "report_roofline.png")
    assert problems == []


@pytest.fixture(scope="module")
def eigen_bundle(tmp_path_factory: pytest.TempPathFactory) -> RunBundle:
    """The same TF CNN run with oneDNN off (tests/fixtures/tf/cnn-infer-eigen), annotated."""
    source = FIXTURES / "tf" / "cnn-infer-eigen"
    return annotate_copy(source, tmp_path_factory.mktemp("eigen") / "run")


def test_diff_tab_against_another_run(
    browser: Any, tf_bundle: RunBundle, eigen_bundle: RunBundle, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    argv = ["report", str(tf_bundle.root), "--against", str(eigen_bundle.root), "-o", str(out)]
    assert main([*argv, "--no-peaks"]) == 0
    page, problems = open_page(browser, out)
    page.click("nav button[data-tab=diff]")
    text = page.inner_text("main")
    assert str(eigen_bundle.root) in text and "all ops per step" in text
    rows = page.locator("#diff-ops tbody tr")
    assert rows.count() == 19  # every op matched on name + source
    assert "name+source" in rows.first.inner_text()
    assert "Fusion changes" in text and "kernel" in text  # _FusedConv2D vs the oneDNN kernel
    shoot(page, "report_diff.png")
    assert problems == []

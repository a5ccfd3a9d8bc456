"""The HTML report in a real headless Chromium (Debian's `chromium`, driven by Playwright).

Screenshots land in tests/artifacts/ (git-ignored) so CI can keep them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from irprof.analyses.annotated_level import load_annotated_level
from irprof.analyses.op_graph import build_op_graph
from irprof.analyses.report_data import build_report_data
from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.fileio import write_bytes_atomic
from irprof.renderers.base import get_op_graph_renderers
from irprof.renderers.report_html import RENDERER
from tests.analyses.test_support import (  # noqa: F401  (fixtures are found by their names)
    HOSTILE,
    fixture_hostile_bundle,
    fixture_jax_bundle,
    fixture_tf_bundle,
)

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
# Offline, quiet, deterministic: no network services, no first-run UI, no GPU.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


@pytest.fixture(scope="module", name="browser")
def fixture_browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as driver:
        instance = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def open_report(browser: Any, bundle: RunBundle) -> tuple[Any, list[str]]:
    """Write the bundle's report and open it from disk; collects console errors and dialogs."""
    write_bytes_atomic(bundle.report_path, RENDERER.render(build_report_data(bundle)))
    return open_page(browser, bundle.report_path)


def open_page(browser: Any, path: Path) -> tuple[Any, list[str]]:
    """Open a written report; console errors, dialogs and any non-file request are problems."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    def on_dialog(dialog: Any) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on(
        "request",
        lambda r: None if r.url.startswith(("file:", "data:")) else problems.append(r.url),
    )
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("nav button")
    return page, problems


def shoot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_report_loads_clicks_and_searches(browser: Any, tf_bundle: RunBundle) -> None:
    page, problems = open_report(browser, tf_bundle)
    assert "time coverage" in page.inner_text("main")
    shoot(page, "report_summary.png")

    page.click("nav button[data-tab=hotspots]")
    hottest = page.inner_text("#hotspot-table tbody tr:first-child td:first-child")
    page.click("#hotspot-table tbody tr:first-child")
    details = page.inner_text("#op-details")
    assert hottest in details
    assert "irprof.profile" in page.inner_text("#op-details pre")  # the op's annotated IR
    check_compact_location(page, "#op-details", "report_hotspots_location.png")
    shoot(page, "report_hotspots.png")

    page.fill("#hotspot-filter", "MatMul")
    rows = page.locator("#hotspot-table tbody tr")
    assert rows.count() >= 1
    assert all("MatMul" in rows.nth(i).inner_text() for i in range(rows.count()))

    page.click("nav button[data-tab=graph]")
    page.wait_for_selector("#graph-view svg g.node")
    page.fill("#graph-search", "conv")
    assert page.locator("#graph-view g.node.match").count() >= 1
    assert "match" in page.inner_text("#graph-status")
    page.locator("#graph-view g.node.match").first.click()
    assert "conv" in page.inner_text("#node-details").lower()
    check_compact_location(page, "#node-details", "report_graph_location.png")
    # The side panel scrolls on its own: it never grows past the graph, which keeps its size.
    view = page.locator("#graph-view").bounding_box()
    panel = page.locator("#node-details").bounding_box()
    assert view["height"] >= 0.6 * 900 and panel["height"] <= view["height"] + 1
    shoot(page, "report_graph.png")

    page.click("nav button[data-tab=dag]")
    page.wait_for_selector("#dag-view svg g.node")
    page.click("nav button[data-tab=gaps]")
    assert "Unattributed events" in page.inner_text("main")
    assert problems == []


def test_private_function_op_panel_names_the_call(browser: Any, jax_bundle: RunBundle) -> None:
    page, problems = open_report(browser, jax_bundle)
    page.click("nav button[data-tab=hotspots]")
    page.check("#expand-groups")  # relu's max is a member of an XLA fusion: one row per op
    page.fill("#hotspot-filter", "jit(relu)/max")
    rows = page.locator("#hotspot-table tbody tr")
    assert rows.count() >= 2  # relu is called twice
    rows.first.click()
    assert page.inner_text("#op-details h3") == "jit(mlp)/jit(relu)/max"
    panel = page.inner_text("#op-details")
    assert "runtime name (IR)\nmax" in panel  # the IR's own name stays in view
    compact = page.locator("#op-details .loc-compact")
    assert compact.locator(".loc-name").inner_text() == "jit(mlp)/jit(relu)/max"
    (call_site,) = compact.locator(".loc-frame").all_inner_texts()
    assert call_site.startswith("jax_mlp.py:") and call_site.endswith("(call site)")
    shoot(page, "report_private_function_op.png")
    assert problems == []


def check_compact_location(page: Any, panel: str, shot: str) -> None:
    """The op panel shows the runtime name and user frames; the full chain opens on a click."""
    compact = page.locator(f"{panel} .loc-compact")
    user_frames = compact.locator(".loc-frame").all_inner_texts()
    assert user_frames and all(f.startswith("tf_cnn.py:") for f in user_frames)
    assert compact.locator(".loc-name").inner_text() in page.inner_text(f"{panel} h3")
    toggle = page.locator(f"{panel} details.full-loc")
    frames = toggle.locator("ol.frames li")
    assert not frames.first.is_visible()  # collapsed by default
    count = frames.count()
    assert toggle.locator("summary").inner_text() == f"full location ({count} frames)"
    toggle.locator("summary").click()
    assert frames.first.is_visible()
    chain = frames.all_inner_texts()
    assert any(f.startswith("<sys.path>/keras/") for f in chain)  # library frames kept
    assert set(user_frames) <= set(chain)
    assert not any("runpy" in f or "irprof/capture" in f for f in chain)
    shoot(page, shot)
    toggle.locator("summary").click()  # closed again: the tab's own screenshot shows the default
    assert not frames.first.is_visible()


def test_hostile_names_render_as_text(browser: Any, hostile_bundle: RunBundle) -> None:
    page, problems = open_report(browser, hostile_bundle)
    assert HOSTILE in page.inner_text("header")  # model name shown literally
    page.click("nav button[data-tab=hotspots]")
    assert f"sequential/{HOSTILE}/MatMul" in page.inner_text("#hotspot-table")
    page.click("nav button[data-tab=graph]")
    page.wait_for_selector("#graph-view svg g.node")
    page.click("nav button[data-tab=gaps]")
    assert f"{HOSTILE}:_Retval" in page.inner_text("main")
    assert page.evaluate("document.scripts.length") == 2  # the data block and the app
    assert page.evaluate("document.querySelectorAll('svg script').length") == 0
    shoot(page, "report_hostile.png")
    assert problems == []


def test_standalone_graph_page_searches_and_clicks(
    browser: Any, tf_bundle: RunBundle, tmp_path: Path
) -> None:
    loaded = load_annotated_level(tf_bundle, "tf")
    graph = build_op_graph(loaded.module, loaded.profiled)
    path = tmp_path / "graph.html"
    path.write_bytes(get_op_graph_renderers().get("html").render(graph))
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("#graph-view svg g.node")
    page.fill("#graph-search", "MatMul")
    assert page.locator("#graph-view g.node.match").count() == 2  # dense1 and dense2
    page.locator("#graph-view g.node.match").first.click()
    assert "MatMul" in page.inner_text("#node-details")
    shoot(page, "graph_page.png")
    assert problems == []


def _first_cell(page: Any, table: str) -> str:
    return str(page.inner_text(f"{table} tbody tr:first-child td:first-child"))


def test_tables_sort_hottest_first_and_toggle_on_click(
    browser: Any, tmp_path: Path, tf_bundle: RunBundle
) -> None:
    # GIVEN a run annotated at two levels
    bundle = RunBundle(tmp_path / "run")
    shutil.copytree(tf_bundle.root, bundle.root)
    annotate_bundle(bundle, "tf-standard")
    data = build_report_data(bundle)
    by_op = {level.annotated.level: level.by_op.rows for level in data.levels}
    # Ranked by the default statistic (median step x steps), the time column's value.
    hottest = {level: max(rows, key=lambda r: r.stat_ns).key for level, rows in by_op.items()}
    coolest = {level: min(rows, key=lambda r: r.stat_ns).key for level, rows in by_op.items()}
    page, problems = open_report(browser, bundle)
    page.click("nav button[data-tab=hotspots]")
    # THEN the first row is the op with the most time, and the time header says "descending"
    assert _first_cell(page, "#hotspot-table") == hottest["tf"]
    time_header = page.locator("#hotspot-table th.num").first  # the time column
    assert time_header.get_attribute("data-dir") == "desc"
    # WHEN the time header is clicked, the order flips; a second click restores it
    time_header.click()
    assert time_header.get_attribute("data-dir") == "asc"
    assert _first_cell(page, "#hotspot-table") == coolest["tf"]
    time_header.click()
    assert _first_cell(page, "#hotspot-table") == hottest["tf"]
    # WHEN groups are expanded, every op is a row and estimated shares are marked "~"
    expanded = {level.annotated.level: level.by_op_expanded.rows for level in data.levels}
    page.check("#expand-groups")
    assert page.locator("#hotspot-table tbody tr").count() == len(expanded["tf"])
    estimated = [row for row in expanded["tf"] if row.estimated_ns]
    times = page.locator("#hotspot-table tbody td.num").all_inner_texts()
    assert (not estimated) or any(text.startswith("~") for text in times)
    page.uncheck("#expand-groups")
    assert page.locator("#hotspot-table tbody tr").count() == len(by_op["tf"])
    # WHEN another level is chosen, the tables show that level's ops
    page.select_option("#level-select", index=1)
    assert _first_cell(page, "#hotspot-table") == hottest["tf-standard"]
    rows_standard = page.locator("#hotspot-table tbody tr").count()
    assert rows_standard == len(by_op["tf-standard"])
    # WHEN the rollups tab opens, it shows op kinds and scopes of the chosen level
    page.click("nav button[data-tab=rollups]")
    rollups = page.inner_text("main")
    kinds = {row.key for row in data.levels[1].by_type.rows}
    assert kinds and all(kind in rollups for kind in kinds)
    # WHEN the event DAG is searched, the status counts the highlighted events
    page.click("nav button[data-tab=dag]")
    page.wait_for_selector("#dag-view svg g.node")
    page.fill("#dag-search", "MatMul")
    matched = page.locator("#dag-view g.node.match").count()
    assert matched >= 1
    assert page.locator("#dag-search ~ span.muted").first.inner_text() == f"{matched} matches"
    assert problems == []


def test_page_data_with_an_integer_beyond_64_bits_is_shown_as_text() -> None:
    from irprof.renderers.html_page import json_for_script

    text = json_for_script({"options": {"n": -(2**63) - 1, "ok": 5, "list": [2**64, True]}})
    assert orjson.loads(text) == {
        "options": {"n": str(-(2**63) - 1), "ok": 5, "list": [str(2**64), True]}
    }


def test_a_training_report_shows_the_step_by_phase(browser: Any, tmp_path: Path) -> None:
    """The summary tab of a training step's report has the phase table `annotate` prints: each
    phase's profiled and attributed time, read independently from coverage.json."""
    root = tmp_path / "train"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_train_run", root)
    bundle = RunBundle(root)
    annotate_bundle(bundle)
    training = orjson.loads(bundle.coverage_path.read_bytes())["levels"]["stablehlo"]["extra"][
        "training"
    ]
    page, problems = open_report(browser, bundle)
    heading = page.locator("h2", has_text="Training step by phase")
    table = heading.locator("xpath=following-sibling::*[1]")
    cells = [row.locator("td").first.inner_text() for row in table.locator("tbody tr").all()]
    expected = [
        p for p in ("forward", "backward", "optimizer") if training["phases_profiled_ns"][p]
    ]
    assert cells == expected and len(expected) == 3
    assert problems == []

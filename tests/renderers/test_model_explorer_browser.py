"""A level Model Explorer's MLIR adapter refuses (torch's own dialect) opens in Model Explorer
itself: its real server (`model-explorer`, from the pip package) serves irprof's graph JSON and
node data, and its web app, in headless Chromium, draws the graph with the overlay applied.

The screenshot lands in tests/artifacts/model_explorer_torch.png (git-ignored).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from irprof.annotation import annotate_bundle
from irprof.bundle import RunBundle
from irprof.cli.main import main
from tests.renderers.test_report_browser import (  # noqa: F401  (fixtures are found by their names)
    CHROMIUM,
    fixture_browser,
    shoot,
)

pytest.importorskip("model_explorer")
SERVER = Path(sys.executable).with_name("model-explorer")
FIXTURES = Path(__file__).parents[1] / "fixtures"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module", name="exported")
def fixture_exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """graph.json and node_data.json of the annotated torch level of the bundled CNN run."""
    root = tmp_path_factory.mktemp("me_browser")
    shutil.copytree(FIXTURES / "torch" / "cnn", root / "run")
    bundle = RunBundle(root / "run")
    annotate_bundle(bundle, "torch")
    paths = (root / "graph.json", root / "node_data.json")
    for fmt, out in zip(("model-explorer-graph", "model-explorer"), paths, strict=True):
        args = ["export", str(bundle.root), "--to", fmt, "--level", "torch", "-o", str(out)]
        assert main(args) == 0
    return paths


@pytest.fixture(scope="module", name="server_url")
def fixture_server_url(exported: tuple[Path, Path]) -> Iterator[str]:
    """Model Explorer's own server on a free local port; yields the URL it prints."""
    graph, node_data = exported
    port = _free_port()
    command = [
        str(SERVER),
        str(graph),
        f"--node_data_paths={node_data}",
        "--no_open_in_browser",
        "--host=127.0.0.1",
        f"--port={port}",
    ]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        deadline, url = time.monotonic() + 120, ""
        while not url and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            url = line.strip() if line.startswith("http://") else ""
        assert url, "model-explorer did not print its URL"
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_model_explorer_draws_the_torch_graph_with_irprofs_node_data(
    browser: Any, exported: tuple[Path, Path], server_url: str
) -> None:
    graph_path, node_data_path = exported
    (graph,) = json.loads(graph_path.read_text())["graphs"]
    results = json.loads(node_data_path.read_text())[graph["id"]]["results"]
    values = [result["value"] for result in results.values()]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # Offline and deterministic: only the local server is reachable (the app asks for web fonts).
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
    page.goto(server_url)
    page.wait_for_selector("text=Aggregated stats", timeout=60_000)
    body = page.inner_text("body")
    shoot(page, "model_explorer_torch.png")
    assert not errors
    # The collection and graph irprof wrote, with every node it wrote.
    assert f"{len(graph['nodes'])} nodes" in body
    # The overlay: Model Explorer's aggregate of the node data equals the values in the file.
    stats = dict(re.findall(r"^(Min|Max|Sum)\s+([\d.]+)$", body, flags=re.MULTILINE))
    assert float(stats["Max"]) == pytest.approx(max(values), abs=1e-3)
    assert float(stats["Sum"]) == pytest.approx(sum(values), abs=1e-3)
    assert float(stats["Min"]) == pytest.approx(min(values), abs=1e-3)
    # The hottest op is listed with its value in the node data table.
    hottest = max(values)
    assert re.search(rf"torch\.aten\.\w+\s+{re.escape(f'{hottest:g}')}", body)

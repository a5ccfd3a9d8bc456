"""`irprof top|report --stat`: a run whose trace holds one stalled step of one op, end to end
through the CLI (ranking, spread, outliers, noise warnings, the report's data)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from irprof.api import Run
from irprof.bundle import RunBundle
from irprof.cli.main import main
from tests.analyses.test_support import LAYERS, make_bundle

STALLED = "sequential/dense1/MatMul"
STALLED_STEP = 2
STEP_US = 20_000  # each step window is 20 ms long


def per_step_ns(node: str, total: int) -> list[int]:
    """How the trace splits an op's profiled total over 3 steps: evenly, except the stalled
    op, whose last step holds nearly all of it (48x its other steps)."""
    if node == STALLED:
        usual = total // 50
        return [usual, usual, total - 2 * usual]
    return [total // 3, total // 3, total - 2 * (total // 3)]


MEASURED = {node: per_step_ns(node, ns) for _, node, ns in LAYERS if ns is not None}


@pytest.fixture(name="stalled_run")
def fixture_stalled_run(tmp_path: Path) -> RunBundle:
    """The synthetic TF bundle with a Chrome trace of 3 profiler steps and a noise record of
    a machine loaded above its CPU count."""
    bundle = make_bundle(tmp_path / "run")
    events: list[dict[str, object]] = []
    for step in range(3):
        start = step * STEP_US
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
             "tid": 1, "ts": start, "dur": STEP_US - 1}
        )  # fmt: skip
        cursor: float = start + 1
        for kind, node, ns in LAYERS:
            if ns is None:
                continue
            duration = MEASURED[node][step] / 1_000  # Chrome traces count microseconds
            events.append(
                {"ph": "X", "cat": "cpu_op", "name": f"{node}:{kind[3:]}", "pid": 1, "tid": 2,
                 "ts": cursor, "dur": duration}
            )  # fmt: skip
            cursor += duration + 1
    (bundle.trace_dir / "steps.json").write_text(json.dumps({"traceEvents": events}))
    manifest = bundle.manifest()
    noise = {"load_1m_before": 5.0, "load_1m_after": 4.0, "cpus": 2, "steal_share": 0.0}
    bundle.write_manifest(
        dataclasses.replace(
            manifest,
            trace_files=("trace/steps.json",),
            options={**manifest.options, "noise": noise},
        )
    )
    return RunBundle(bundle.root)


def printed_keys(out: str) -> list[str]:
    """Row keys of a printed hotspot table (wide enough not to fold)."""
    return [line.split("│")[2].strip() for line in out.splitlines() if line.startswith("│")]


def test_top_ranks_by_median_and_flags_the_stalled_step(
    stalled_run: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["top", str(stalled_run.root)]) == 0
    out = capsys.readouterr().out
    by_median = sorted(MEASURED, key=lambda node: (-statistics.median(MEASURED[node]), node))
    by_sum = sorted(MEASURED, key=lambda node: (-sum(MEASURED[node]), node))
    assert by_median != by_sum  # the stall moves the op: the case this test is about
    assert printed_keys(out) == by_median
    assert "ranked by median step x steps" in out
    # The outliers section names the op, the step and how far above its median it was.
    usual = MEASURED[STALLED][0]
    ratio = MEASURED[STALLED][STALLED_STEP] / usual
    outlier = re.search(rf"{re.escape(STALLED)}\s+step (\d+) .*\(\+.*, ([\d.]+)x its median", out)
    assert outlier is not None, out
    assert int(outlier.group(1)) == STALLED_STEP
    assert float(outlier.group(2)) == pytest.approx(ratio, abs=0.05)
    # The noise record warns; one stalled step is an outlier, not a noisy run.
    assert "warning: load average 5.00 exceeded the 2 CPUs" in out
    assert "step times vary" not in out
    # The stalled row is marked unstable in its spread column.
    stalled_line = next(line for line in out.splitlines() if f"│ {STALLED} " in line)
    assert "! " in stalled_line


def test_top_stat_sum_ranks_the_stalled_op_by_its_sum(
    stalled_run: RunBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["top", str(stalled_run.root), "--stat", "sum"]) == 0
    out = capsys.readouterr().out
    assert printed_keys(out) == sorted(MEASURED, key=lambda node: (-sum(MEASURED[node]), node))
    assert "ranked by sum over steps" in out
    # Coverage conserves the sum, stall included, whatever the ranking.
    attributed = sum(sum(values) for values in MEASURED.values())
    for stat in ("sum", "median"):
        table = Run(stalled_run.root).top(limit=None, stat=stat)
        assert table.total_ns == attributed
        stalled = next(row for row in table.rows if row.key == STALLED)
        assert stalled.total_ns == sum(MEASURED[STALLED])
        assert stalled.step_ns == tuple(MEASURED[STALLED])


def test_top_without_a_trace_falls_back_to_the_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    bundle = make_bundle(tmp_path / "run")  # no trace, no noise record (an older bundle)
    assert main(["top", str(bundle.root)]) == 0
    out = capsys.readouterr().out
    assert "no per-step samples" in out and "ranked by sum over steps" in out
    assert "warning" not in out


def test_bad_stat_exits_2(stalled_run: RunBundle, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("top", "report"):
        assert main([command, str(stalled_run.root), "--stat", "p99"]) == 2
        assert "--stat 'p99'" in capsys.readouterr().err
    assert not (stalled_run.root / "report.html").exists()


def test_report_carries_the_statistic_spread_and_outliers(
    stalled_run: RunBundle, tmp_path: Path
) -> None:
    for stat in ("median", "sum"):
        out = tmp_path / f"{stat}.html"
        assert main(["report", str(stalled_run.root), "-o", str(out), "--stat", stat]) == 0
        html = out.read_text()
        assert f'"stat":"{stat}"' in html
        assert '"outliers_total":1' in html
        assert f'"key":"{STALLED}","op_index"' in html
        assert f'"step":{STALLED_STEP}' in html
        assert "exceeded the 2 CPUs" in html


def test_annotate_warns_about_the_noisy_capture_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A real capture whose noise record says the machine was loaded past its CPUs.
    root = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "jax" / "mlp_run", root)
    bundle = RunBundle(root)
    manifest = bundle.manifest()
    noise = {"load_1m_before": 3.5, "load_1m_after": 1.0, "cpus": 2, "steal_share": 0.0}
    options = {**manifest.options, "noise": noise}
    bundle.write_manifest(dataclasses.replace(manifest, options=options))
    assert main(["annotate", str(root), "--allow-mismatch"]) == 0
    assert "warning: load average 3.50 exceeded the 2 CPUs" in capsys.readouterr().err

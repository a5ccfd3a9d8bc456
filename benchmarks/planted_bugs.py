"""Plant each of the ten bugs of issue 28 (one at a time) and check that its named test fails.

    .venv/bin/python benchmarks/planted_bugs.py

Each case replaces one line of the source, runs the test that must catch it, and restores the
file whatever happens. It prints CAUGHT or SURVIVED per bug and exits 1 when any survives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
cases = [
    (
        "src/irprof/analyses/trace_summary.py",
        "previous = np.concatenate(([starts[0]], reach[:-1]))",
        "previous = np.concatenate(([starts[0]], ends[:-1]))",
        "tests/analyses/test_trace_summary.py",
    ),
    (
        "src/irprof/analyses/run_diff.py",
        "return self.delta_ns / self.a_ns * 100.0 if self.a_ns > 0 else None",
        "return self.delta_ns / self.b_ns * 100.0 if self.a_ns > 0 else None",
        "tests/analyses/test_run_diff.py::test_delta_percent_is_relative_to_a",
    ),
    (
        "src/irprof/analyses/run_diff_samples.py",
        'np.searchsorted(starts, ts, side="right")',
        'np.searchsorted(starts, ts, side="left")',
        "tests/analyses/test_run_diff_samples.py",
    ),
    (
        "src/irprof/analyses/ranks.py",
        '_LAST_NUMBER = re.compile(r"(\\d+)(?!.*\\d)")',
        '_LAST_NUMBER = re.compile(r"(\\d+)")',
        "tests/analyses/test_ranks.py",
    ),
    (
        "src/irprof/event_dag/nesting.py",
        "while stack_pos and ends[stack_pos[-1]] < end:",
        "while stack_pos and ends[stack_pos[-1]] <= end:",
        "tests/event_dag/test_nesting.py",
    ),
    (
        "src/irprof/event_dag/model.py",
        "and (min_end is None or start < min_end)",
        "and (min_end is None or start <= min_end)",
        "tests/event_dag/test_nesting.py",
    ),
    (
        "src/irprof/mlir/cost_model.py",
        'transposed = bool_attr(op, "transpose_a") or bool_attr(op, "adj_x")',
        'transposed = bool_attr(op, "transpose_a")',
        "tests/mlir/test_cost_model.py",
    ),
    (
        "src/irprof/frameworks/iree/correlate.py",
        "ledger.include(position, row, key, ts, duration / len(launched))",
        "ledger.include(position, row, key, ts, duration)",
        "tests/frameworks/iree/test_correlate.py",
    ),
    (
        "src/irprof/frameworks/torch/events.py",
        "while open_ends and open_ends[-1] <= start:",
        "while open_ends and open_ends[-1] < start:",
        "tests/frameworks/torch/test_events.py",
    ),
    (
        "src/irprof/renderers/perfetto_proto.py",
        "if not stack or stack[-1] >= end:",
        "if not stack or stack[-1] > end:",
        "tests/renderers/test_perfetto_proto.py",
    ),
]
survived = 0
for path, old, new, test in cases:
    p = ROOT / path
    original = p.read_text()
    assert original.count(old) == 1, (path, old)
    p.write_text(original.replace(old, new))
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", test],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    finally:
        p.write_text(original)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-200:]
    survived += r.returncode == 0
    print(("CAUGHT " if r.returncode != 0 else "SURVIVED ") + path + " :: " + last)
sys.exit(1 if survived else 0)

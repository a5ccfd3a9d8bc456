"""SIGTERM cleans up like Ctrl-C (issue 27, item 5): no temporary file is left behind.

GIVEN a generated Chrome trace of tens of MB, WHEN `irprof trace convert` is sent SIGTERM once
its streamed conversion has started writing (its `.irprof-runs-*` folder exists), THEN it exits
143, no `.irprof-*` temporary remains beside the output, and the output does not exist.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EVENTS = 600_000


def write_big_chrome_trace(path: Path) -> None:
    """A Chrome trace of `EVENTS` complete events on 8 threads (about 60 MB)."""
    with path.open("w") as handle:
        handle.write('{"traceEvents": [\n')
        handle.write(
            ",\n".join(
                f'{{"ph": "X", "name": "kernel_{index % 97}", "pid": 1, "tid": {index % 8}, '
                f'"ts": {index * 1.5}, "dur": 1.0, "args": {{"i": {index}}}}}'
                for index in range(EVENTS)
            )
        )
        handle.write("\n]}\n")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_a_streamed_convert_leaves_no_temporary(tmp_path: Path) -> None:
    source = tmp_path / "input" / "big.json"
    source.parent.mkdir()
    write_big_chrome_trace(source)
    out_folder = tmp_path / "out"
    output = out_folder / "big.parquet"
    out_folder.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "irprof", "trace", "convert", str(source), "-o", str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # WHEN the conversion has started writing its runs
    deadline = time.monotonic() + 120
    while not list(out_folder.glob(".irprof-runs-*/*")):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the conversion never started writing"
        time.sleep(0.002)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    # THEN it exited on the signal, cleaned up, and wrote no output
    assert child.returncode == 128 + signal.SIGTERM, err
    assert sorted(path.name for path in out_folder.iterdir()) == []
    assert not output.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("delay_s", [0.3, 1.0, 2.5])
def test_sigkill_during_a_convert_leaves_no_output_or_a_complete_one(
    tmp_path: Path, delay_s: float
) -> None:
    """SIGKILL cannot be cleaned up after: what matters is that the output is never partial.
    GIVEN the same trace, WHEN `trace convert` is killed at a moment of its work, THEN the output
    is absent, or present and equal (event count) to an uninterrupted conversion's."""
    import pyarrow.parquet as pq

    source = tmp_path / "input" / "big.json"
    source.parent.mkdir()
    write_big_chrome_trace(source)
    output = tmp_path / "out" / "big.parquet"
    output.parent.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "irprof", "trace", "convert", str(source), "-o", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay_s)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    if output.exists():
        assert pq.ParquetFile(output).metadata.num_rows == EVENTS
    # Whatever was left behind is a hidden temporary, never a file a reader would pick up.
    assert all(
        path.name.startswith(".irprof") for path in output.parent.iterdir() if path != output
    )

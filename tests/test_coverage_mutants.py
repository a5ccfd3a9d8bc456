"""`coverage.py`: untimed ops and the seen share in `coverage.json` and back, the file size limit
at its exact boundary, the file's version read strictly, and the refusal messages in full."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import irprof.coverage
from irprof.coverage import Coverage, check_coverage, load_coverages, save_coverages
from irprof.errors import BundleError, CorrelationError

# 2 of 5 non-trivial ops annotated, 2 more seen only untimed: seen share (2 + 2) / 5.
UNTIMED = Coverage(
    level="tf",
    profiled_ns=1000,
    attributed_ns=400,
    ops_total=8,
    ops_nontrivial=5,
    ops_annotated=3,
    ops_nontrivial_annotated=2,
    ops_not_executed=1,
    ops_untimed=2,
)


def test_untimed_ops_and_the_seen_share_are_saved_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "coverage.json"
    save_coverages(path, {"tf": UNTIMED})
    record = json.loads(path.read_text())["levels"]["tf"]
    assert record["ops_untimed"] == 2
    assert record["nontrivial_seen_coverage"] == 0.8
    assert record["nontrivial_coverage"] == 0.4
    assert record["time_coverage"] == 0.4
    assert record["nontrivial_coverage_with_removed"] == 2 / 6
    loaded = load_coverages(path)["tf"]
    assert loaded.ops_untimed == 2
    assert loaded == UNTIMED


def _padded(path: Path, size: int) -> Path:
    """A valid `coverage.json` of exactly `size` bytes (JSON allows trailing whitespace)."""
    save_coverages(path, {"tf": UNTIMED})
    data = path.read_bytes()
    assert len(data) < size
    path.write_bytes(data + b" " * (size - len(data)))
    return path


def test_the_size_limit_refuses_one_byte_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of exactly the limit is read; one byte more is refused, naming the limit in MB."""
    limit = 3 << 20
    monkeypatch.setattr(irprof.coverage, "COVERAGE_LIMIT_BYTES", limit)
    at_limit = _padded(tmp_path / "at.json", limit)
    assert load_coverages(at_limit) == {"tf": UNTIMED}
    over = _padded(tmp_path / "over.json", limit + 1)
    with pytest.raises(BundleError) as caught:
        load_coverages(over)
    assert str(caught.value) == f"{over}: larger than 3 MB; not coverage"


def test_the_file_version_is_read_strictly(tmp_path: Path) -> None:
    """A version written as a string is a malformed file, not version 1."""
    path = tmp_path / "coverage.json"
    save_coverages(path, {"tf": UNTIMED})
    payload = json.loads(path.read_text())
    payload["version"] = "1"
    path.write_text(json.dumps(payload))
    with pytest.raises(BundleError, match=r"malformed coverage record: .*`\$\.version`"):
        load_coverages(path)


def test_the_refusals_say_in_full_what_was_matched_and_what_to_do() -> None:
    with pytest.raises(CorrelationError) as empty:
        check_coverage(Coverage("x", 0, 0, 3, 0, 0, 0), "run.json")
    assert str(empty.value) == (
        "run.json: level 'x' has no profiled op time and no non-trivial ops; nothing to annotate"
    )
    with pytest.raises(CorrelationError) as low:
        check_coverage(Coverage("x", 100, 100, 3, 2, 0, 0), "run.json")
    assert str(low.value) == (
        "run.json: level 'x' matched only 100.0% of profiled time and 0.0% of non-trivial ops "
        "(0/2). The profile most likely comes from another model or another trace of it (names "
        "depend on tracing order); re-capture, or pass --allow-low-coverage to annotate anyway."
    )

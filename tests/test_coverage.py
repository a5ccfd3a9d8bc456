"""The coverage record's file form and checks, exactly: what `coverage.json` holds, what a
damaged one is refused for, which ops count as trivial, when a correlation is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irprof.coverage import (
    MIN_NONTRIVIAL_COVERAGE,
    MIN_TIME_COVERAGE,
    Coverage,
    UnmatchedEvent,
    UnmatchedOp,
    check_coverage,
    is_trivial_op,
    load_coverages,
    save_coverages,
)
from irprof.errors import BundleError, CorrelationError

FULL = Coverage(
    level="tf",
    profiled_ns=200,
    attributed_ns=150,
    ops_total=9,
    ops_nontrivial=4,
    ops_annotated=5,
    ops_nontrivial_annotated=3,
    ops_not_executed=2,
    unmatched_events=(UnmatchedEvent("memcpy", 50, 2, "host copy"),),
    unmatched_ops=(UnmatchedOp("tf.Relu", 'loc("r")', "folded by grappler"),),
    warnings=("a warning",),
    extra={"groups": 1},
)


@pytest.mark.parametrize(
    ("op_name", "trivial"),
    [
        ("tf.Const", True),
        ("func.func", True),
        ("mydialect.return", True),
        ("mydialect.yield", True),
        ("mydialect.terminator", True),
        ("torch.aten._assert_tensor_metadata", True),
        ("torch.aten._assert_scalar", False),  # computes its predicate from a value
        ("tf.MatMul", False),
        ("stablehlo.add", False),
        ("tf.ReturnValue", False),  # a name containing "Return" is not a terminator
        ("mydialect.returns", False),
    ],
)
def test_trivial_ops(op_name: str, trivial: bool) -> None:
    assert is_trivial_op(op_name) is trivial


def test_ratios() -> None:
    assert FULL.time_coverage == 0.75
    assert FULL.nontrivial_coverage == 0.75
    assert FULL.nontrivial_coverage_with_removed == 0.5
    empty = Coverage("x", 0, 0, 0, 0, 0, 0)
    assert (empty.time_coverage, empty.nontrivial_coverage) == (0.0, 0.0)
    assert empty.nontrivial_coverage_with_removed == 0.0


def test_the_file_is_versioned_indented_json_and_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "coverage.json"
    save_coverages(path, {"tf": FULL})
    text = path.read_text()
    assert text.startswith('{\n  "version": 1,\n  "levels": {\n')
    record = json.loads(text)["levels"]["tf"]
    assert record["time_coverage"] == 0.75
    assert record["nontrivial_coverage_with_removed"] == 0.5
    assert load_coverages(path) == {"tf": FULL}


def _saved(tmp_path: Path, **changes: object) -> Path:
    path = tmp_path / "coverage.json"
    save_coverages(path, {"tf": FULL})
    payload = json.loads(path.read_text())
    payload["levels"]["tf"].update(changes)
    path.write_text(json.dumps(payload))
    return path


def test_a_wrong_type_is_refused_with_its_place(tmp_path: Path) -> None:
    path = _saved(tmp_path, profiled_ns="200")  # strict: no string for an int
    with pytest.raises(BundleError) as caught:
        load_coverages(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: malformed coverage record: ")
    assert "`$.levels.tf.profiled_ns`" in message
    assert message.endswith("; delete it and re-run `irprof annotate`")


def test_a_record_filed_under_another_level_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, level="jax")
    with pytest.raises(BundleError, match=r"level 'jax' filed under 'tf' - at `\$\.levels\.tf\."):
        load_coverages(path)


def test_a_file_that_is_not_a_coverage_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "coverage.json"
    path.write_text('{"version": 1, "levels": []}')
    with pytest.raises(BundleError, match=r"malformed coverage record: .*; delete it"):
        load_coverages(path)


def test_check_coverage_refuses_an_empty_or_unrelated_correlation() -> None:
    with pytest.raises(CorrelationError, match=r"run\.json: level 'x' has no profiled op time"):
        check_coverage(Coverage("x", 0, 0, 3, 0, 0, 0), "run.json")
    # Nothing profiled but ops to match: refused by the thresholds, not as empty.
    with pytest.raises(CorrelationError, match=r"matched only 0\.0% of profiled time"):
        check_coverage(Coverage("x", 0, 0, 3, 2, 0, 0), "run.json")
    # All the time matched but none of the non-trivial ops.
    with pytest.raises(CorrelationError, match=r"\(0/2\)\. The profile most.*--allow-low-coverage"):
        check_coverage(Coverage("x", 100, 100, 3, 2, 0, 0), "run.json")


def test_ops_seen_running_untimed_show_the_trace_belongs_to_the_ir() -> None:
    """A small TF model under `tf.scan`/`tf.map_fn`: its timed steps (host tracer level 2)
    record only the 3 expensive ops of 61, the reference steps the 56 cheap ones. That is
    this model's trace, not another's: accepted. Without those 56 it is refused, and the
    refusal counts the untimed ops it did see."""
    seen = Coverage("tf", 118_078, 118_078, 149, 61, 3, 3, ops_untimed=56)
    assert seen.nontrivial_coverage < MIN_NONTRIVIAL_COVERAGE
    check_coverage(seen, "run")
    # 3 timed + 0 untimed of 61 is 4.9%: below; 2 + 1 of 60 is exactly 5%: accepted.
    with pytest.raises(CorrelationError, match=r"4\.9% of non-trivial ops \(3/61\)\. The"):
        check_coverage(Coverage("tf", 100, 100, 149, 61, 3, 3), "run")
    check_coverage(Coverage("tf", 100, 100, 149, 60, 2, 2, ops_untimed=1), "run")
    with pytest.raises(CorrelationError, match=r"1\.6% of non-trivial ops \(1/61, 1 more seen"):
        check_coverage(Coverage("tf", 100, 100, 149, 61, 1, 1, ops_untimed=1), "run")


def test_check_coverage_accepts_exactly_the_thresholds() -> None:
    ops = 100
    at_threshold = Coverage(
        "x",
        profiled_ns=1000,
        attributed_ns=int(1000 * MIN_TIME_COVERAGE),
        ops_total=ops,
        ops_nontrivial=ops,
        ops_annotated=int(ops * MIN_NONTRIVIAL_COVERAGE),
        ops_nontrivial_annotated=int(ops * MIN_NONTRIVIAL_COVERAGE),
    )
    check_coverage(at_threshold, "run.json")
    below = Coverage("x", 1000, int(1000 * MIN_TIME_COVERAGE) - 1, ops, ops, ops, ops)
    with pytest.raises(CorrelationError):
        check_coverage(below, "run.json")

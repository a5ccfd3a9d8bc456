"""Loading an annotated level, on bundles and modules built here: which level is chosen, the
errors for none, a stray or an unknown level and for IR that does not parse, the check of the
time a module attributes against its summary (one ns of rounding per op, the largest event
group, bad summary values) and the model script's path.

Written from the mutants of `analyses/annotated_level.py`. Limits are worked out here from the
op times given.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from irprof.analyses.annotated_level import (
    check_attributed,
    load_annotated_level,
    model_script,
    require_annotated,
)
from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.bundle import Manifest, RunBundle
from irprof.errors import BundleError, UsageError
from irprof.opprofile import ProfileData
from tests.analyses.test_support import make_bundle

PATH = Path("run/annotated/tf.mlir")


def bundle_with(root: Path, captured: tuple[str, ...], annotated: dict[str, str]) -> RunBundle:
    bundle = RunBundle(root)
    (root / "annotated").mkdir(parents=True)
    bundle.write_manifest(
        Manifest(
            framework="tf", model="model.py", entry="serve", steps=1, device="cpu",
            versions={"irprof": "0.1.0"}, ir_levels=captured, trace_files=(),
        )
    )  # fmt: skip
    for level, text in annotated.items():
        bundle.annotated_path(level).write_text(text)
    return RunBundle(root)


def test_the_first_annotated_level_in_lowering_order_by_default(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", ("tf", "stablehlo", "linalg"),
                         {"linalg": "", "stablehlo": ""})  # fmt: skip
    assert require_annotated(bundle) == "stablehlo"
    assert require_annotated(bundle, "linalg") == "linalg"
    with pytest.raises(UsageError) as caught:
        require_annotated(bundle, "tf")
    assert str(caught.value) == (
        f"{bundle.root}: level 'tf' is not annotated; annotated: stablehlo, linalg"
    )


def test_no_annotated_level_is_an_error_naming_the_command(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", ("tf",), {})
    with pytest.raises(BundleError) as caught:
        require_annotated(bundle)
    assert str(caught.value) == (
        f"{bundle.root}: no annotated IR under annotated/; run `irprof annotate {bundle.root}`"
    )


def test_a_level_never_captured_is_refused(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", ("tf", "xla"), {"tf": "", "zz": "", "aa": ""})
    with pytest.raises(BundleError) as caught:
        require_annotated(bundle, "tf")
    assert str(caught.value) == (
        f"{bundle.annotated_path('aa')}: level 'aa' is not among the captured IR levels of "
        f"{bundle.manifest_path} (tf, xla); remove it or re-run `irprof annotate`"
    )
    none = bundle_with(tmp_path / "none", (), {"tf": ""})
    with pytest.raises(BundleError, match=r"captured IR levels of .* \(none\); remove it"):
        require_annotated(none)


def test_ir_that_does_not_parse_names_the_file_once(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", ("tf",), {"tf": "func.func @f( {\n"})
    with pytest.raises(BundleError) as caught:
        load_annotated_level(bundle)
    message = str(caught.value)
    path = str(bundle.annotated_path("tf"))
    # MLIR's message already starts with the path: not repeated in front of it
    assert message.startswith(f"{path}: not valid MLIR")


def test_a_loaded_level_has_its_path_module_and_ops(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    loaded = load_annotated_level(bundle)
    assert loaded.level == "tf"
    assert loaded.path == bundle.root / "annotated" / "tf.mlir"
    assert loaded.profiled.path == str(loaded.path)
    assert len(loaded.profiled.annotated) > 3
    assert str(loaded.module.operation).startswith("module")


def op(index: int, ns: int, *, group_total: int = 0, callee: str = "") -> ProfiledOp:
    data = ProfileData.from_durations([ns], 0, 10**9)
    if group_total:
        data = replace(data, group=f"g{index}", group_total_ns=group_total, group_size=2)
    return ProfiledOp(
        index=index, op_name="x.op", function="main", runtime_name=f"op{index}", scope="",
        source="", chain=(), location="", profile=data, trivial=False, callee=callee,
    )  # fmt: skip


def module(ops: list[ProfiledOp], **summary: object) -> ProfiledModule:
    return ProfiledModule(str(PATH), tuple(ops), dict(summary))


def test_one_ns_of_rounding_per_op_is_allowed() -> None:
    ops = [op(0, 40), op(1, 35), op(2, 30)]  # 105 ns over 3 ops
    check_attributed(PATH, module(ops, profiled_ns=102, attributed_ns=105))
    with pytest.raises(BundleError) as caught:
        check_attributed(PATH, module(ops, profiled_ns=101))
    assert str(caught.value) == (
        f"{PATH}: its ops attribute 105 ns, more than the 101 ns its irprof.summary says were "
        "profiled; the annotation is damaged or forged: re-run `irprof annotate`"
    )


def test_inclusive_calls_are_not_counted() -> None:
    ops = [op(0, 50), op(1, 50, callee="helper")]  # the call repeats its callee's time
    check_attributed(PATH, module(ops, profiled_ns=49))
    with pytest.raises(BundleError, match="its ops attribute 50 ns, more than the 48 ns"):
        check_attributed(PATH, module(ops, profiled_ns=48))


def test_an_event_group_may_hold_up_to_the_profiled_time() -> None:
    ops = [op(0, 10, group_total=100), op(1, 5)]
    check_attributed(PATH, module(ops, profiled_ns=100))
    with pytest.raises(BundleError) as caught:
        check_attributed(PATH, module(ops, profiled_ns=99))
    assert str(caught.value) == (
        f"{PATH}: an event group holds 100 ns, more than the 99 ns its irprof.summary says "
        "were profiled; the annotation is damaged or forged: re-run `irprof annotate`"
    )


def test_without_a_profiled_time_nothing_is_checked() -> None:
    ops = [op(0, 10**6, group_total=10**7)]
    check_attributed(PATH, module(ops))
    check_attributed(PATH, module(ops, profiled_ns=0, attributed_ns=0))
    check_attributed(PATH, module([], profiled_ns=5))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("profiled_ns", -1),
        ("profiled_ns", True),
        ("attributed_ns", False),
        ("attributed_ns", 1.5),
        ("attributed_ns", "7"),
        ("profiled_ns", None),
    ],
)
def test_a_summary_time_that_is_not_a_non_negative_integer(field: str, value: object) -> None:
    with pytest.raises(BundleError) as caught:
        check_attributed(PATH, module([op(0, 1)], **{field: value}))
    assert str(caught.value) == (
        f"{PATH}: irprof.summary field '{field}' = {value!r} is not a non-negative integer; "
        "re-run `irprof annotate`"
    )


def test_the_model_script_relative_to_the_working_directory_when_found(tmp_path: Path) -> None:
    bundle = RunBundle(tmp_path / "runs" / "run")
    script = tmp_path / "runs" / "examples" / "model.py"
    manifest = Manifest(
        framework="tf", model="examples/model.py", entry="serve", steps=1, device="cpu",
        versions={}, ir_levels=(), trace_files=(),
    )  # fmt: skip
    assert model_script(bundle, manifest) == "examples/model.py"  # not there: as named
    script.parent.mkdir(parents=True)
    script.write_text("")
    assert model_script(bundle, manifest) == os.path.relpath(script.resolve())
    long_name = replace(manifest, model="x" * 5000)
    assert model_script(bundle, long_name) == "x" * 5000


def test_a_bad_profile_attribute_is_prefixed_with_the_file(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    path = bundle.annotated_path("tf")
    text = path.read_text()
    assert text.count("count = 3 : i64") > 1
    path.write_text(text.replace("count = 3 : i64", "count = -3 : i64", 1))
    with pytest.raises(BundleError) as caught:
        load_annotated_level(bundle, "tf")
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "profile field 'count' = -3 is negative" in message


def test_a_forged_summary_is_refused_naming_the_file(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path / "run")
    path = bundle.annotated_path("tf")
    text = path.read_text()
    assert text.count("profiled_ns = 9000000 : i64") == 1
    path.write_text(text.replace("profiled_ns = 9000000 : i64", "profiled_ns = 1000 : i64"))
    with pytest.raises(BundleError) as caught:
        load_annotated_level(bundle, "tf")
    message = str(caught.value)
    assert message.startswith(f"{path}: its ops attribute ")
    assert "ns, more than the 1000 ns its irprof.summary says were profiled" in message


@pytest.mark.parametrize("limit", [52, 50])
def test_a_group_over_the_limit_is_named_when_the_ops_are_within_it(limit: int) -> None:
    # 52 ns over 2 ops: within `limit` + 2 ns of rounding (at the edge for 50); the group's
    # 60 ns are not
    ops = [op(0, 50, group_total=60), op(1, 2)]
    assert limit + len(ops) >= 50 + 2
    with pytest.raises(BundleError) as caught:
        check_attributed(PATH, module(ops, profiled_ns=limit))
    assert str(caught.value).startswith(
        f"{PATH}: an event group holds 60 ns, more than the {limit} ns its irprof.summary"
    )

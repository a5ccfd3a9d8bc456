"""`analyses/trace_export.py`'s joins on hand-made levels: which ops an event name maps to (ops
without a profile and inclusive calls left out, reattached ops through their origin's event
names), each reference's fields, and `with_trace_kernels` replacing a reattached op's kernels
only when every origin's event names are known."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from irprof.analyses.profiled_ops import ProfiledModule, ProfiledOp
from irprof.analyses.trace_export import (
    MeasuredEvents,
    OpRef,
    TraceExport,
    load_trace_export,
    measured_events,
    reattached_origin,
    with_trace_kernels,
)
from irprof.bundle import RunBundle
from irprof.errors import BundleError
from irprof.manifest import Manifest
from irprof.opprofile import ProfileData
from irprof.trace.builder import TraceBuilder
from tests.analyses.test_support import fixture_jax_bundle  # noqa: F401  (found by its name)
from tests.renderers.test_trace_export_fidelity import fixture_torch_bundle  # noqa: F401  (by name)

MANIFEST = Manifest("torch", "m.py", "main", 1, "cpu", {}, ("torch",), ())


def profile(kernels: tuple[str, ...], source: str = "trace") -> ProfileData:
    return ProfileData(
        count=1, total_ns=5, mean_ns=5, min_ns=5, max_ns=5, first_ts_ns=0, fraction=0.1,
        kernels=kernels, source=source,
    )  # fmt: skip


def op(index: int, data: ProfileData | None, **fields: object) -> ProfiledOp:
    values: dict[str, object] = {
        "index": index,
        "op_name": f"torch.op{index}",
        "function": "forward",
        "runtime_name": f"rt{index}",
        "scope": "",
        "source": f"m.py:{index}:3",
        "chain": (),
        "location": f"loc{index}",
        "profile": data,
        "trivial": False,
    }
    values.update(fields)
    return ProfiledOp(**values)  # type: ignore[arg-type]


def export(
    levels: tuple[tuple[str, ProfiledModule], ...], origins: dict[str, tuple[str, ...]]
) -> TraceExport:
    return TraceExport(TraceBuilder().build(), "t.json", MANIFEST, levels, origins)


def module(*ops: ProfiledOp) -> ProfiledModule:
    return ProfiledModule("x.mlir", ops, {})


def test_event_names_map_to_every_op_listing_them_at_every_level() -> None:
    torch = module(
        op(0, profile(("k1", "k2"))),
        op(1, None),  # no profile: nothing
        op(2, profile(("k1",)), callee="f"),  # a call: inclusive, left out
        op(3, profile(("k3",), source="trace:inclusive")),  # inclusive by its source
        op(4, profile(("k1",)), runtime_name=""),
    )
    linalg = module(
        op(7, profile(("torch.aten.mm torch#9",), source="reattach:torch#9")),
        op(8, profile(("x",), source="reattach:torch#404")),  # an origin without names
    )
    found = export((("torch", torch), ("linalg", linalg)), {"torch#9": ("k2", "k4")})
    refs = found.ops_by_event_name()

    def ref(level: str, index: int, runtime: str) -> OpRef:
        return OpRef(level, index, runtime or f"torch.op{index}", f"torch.op{index}",
                     f"m.py:{index}:3", "forward", runtime)  # fmt: skip

    assert refs == {
        "k1": (ref("torch", 0, "rt0"), ref("torch", 4, "")),
        "k2": (ref("torch", 0, "rt0"), ref("linalg", 7, "rt7")),
        "k4": (ref("linalg", 7, "rt7"),),
    }
    assert all(isinstance(value, tuple) for value in refs.values())


def test_a_reattached_profile_reads_its_origin_s_event_names() -> None:
    found = export((), {"torch#1": ("a", "b")})
    assert found.event_names(profile(("own",))) == ("own",)
    assert found.event_names(profile(("own",), source="reattach:torch#1")) == ("a", "b")
    assert found.event_names(profile(("own",), source="reattach:torch#2")) == ()
    # Only a source that starts with the prefix is reattached.
    assert found.event_names(profile(("own",), source="xreattach:torch#1")) == ("own",)
    assert export((), {}).origin_kernels == {}


def test_with_trace_kernels_swaps_in_the_origins_event_names() -> None:
    kernels_of = {"torch#1": ("mm", "add"), "torch#2": ("add", "relu"), "torch#3": ()}
    plain = op(0, profile(("k",)))
    none = op(1, None)
    both = op(2, profile(("torch.aten.mm torch#1", "torch.aten.relu torch#2"), "reattach:torch#1"))
    unknown = op(3, profile(("torch.aten.mm torch#1", "x torch#9"), "reattach:torch#1"))
    empty = op(4, profile((), "reattach:torch#1"))
    bare = op(5, profile(("torch#3",), "reattach:torch#3"))
    result = with_trace_kernels(
        [plain, none, both, unknown, empty, bare], MeasuredEvents(kernels_of, {}, {})
    )
    assert result[:2] == [plain, none]
    # Each origin's names in order, a name two origins share once.
    assert both.profile is not None and bare.profile is not None
    assert result[2] == dataclasses.replace(
        both, profile=dataclasses.replace(both.profile, kernels=("mm", "add", "relu"))
    )
    assert result[3] is unknown  # one origin without names: the op keeps its list
    assert result[4] is empty  # no origin at all
    # A label of one word is its own origin (the text after the last space).
    assert result[5] == dataclasses.replace(
        bare, profile=dataclasses.replace(bare.profile, kernels=())
    )
    assert len(result) == 6


def test_loading_reads_one_level_or_all_and_names_the_trace(
    jax_bundle: RunBundle, tmp_path: Path
) -> None:
    root = tmp_path / "run"
    shutil.copytree(jax_bundle.root, root)
    annotated = root / "annotated"
    shutil.copy(annotated / "stablehlo.mlir", annotated / "second.mlir")
    shutil.copy(root / "ir" / "stablehlo.mlir", root / "ir" / "second.mlir")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["ir_levels"] = ["stablehlo", "second"]
    (root / "manifest.json").write_text(json.dumps(manifest))
    bundle = RunBundle(root)
    assert [level for level, _ in load_trace_export(bundle).levels] == ["stablehlo", "second"]
    one = load_trace_export(bundle, "second")
    assert [level for level, _ in one.levels] == ["second"]
    # The trace's path relative to the bundle, as the manifest lists it (XPlane first).
    assert one.trace_path == "trace/jax_mlp.xplane.pb"
    assert len(one.trace) == len(bundle.trace()) > 0


def test_a_bundle_without_annotated_ir_says_how_to_annotate(
    jax_bundle: RunBundle, tmp_path: Path
) -> None:
    root = tmp_path / "run"
    shutil.copytree(jax_bundle.root, root)
    shutil.rmtree(root / "annotated")
    expected = f"{root}: no annotated IR under annotated/; run `irprof annotate {root}`"
    with pytest.raises(BundleError) as raised:
        load_trace_export(RunBundle(root))
    assert str(raised.value) == expected


@pytest.fixture(scope="module", name="torch_run")
def fixture_torch_run(torch_bundle: RunBundle) -> Path:
    """The real torch CNN capture annotated at both levels: linalg's ops carry torch origins."""
    return torch_bundle.root


def expected_origins(root: Path) -> dict[str, list[str]]:
    """Origin -> event names from the saved profiles' JSON, read here: the first level (in
    lowering order) measuring it directly gives them."""
    found: dict[str, list[str]] = {}
    for level in ("torch", "linalg"):
        document = json.loads((root / f"opprofile.{level}.json").read_text())
        for entry in document["entries"]:
            origin, data = entry["key"].get("origin"), entry.get("profile") or {}
            kernels, source = data.get("kernels", []), data.get("source", "")
            if origin and kernels and not source.startswith("reattach:"):
                found.setdefault(origin, list(kernels))
    return found


def test_origins_read_from_every_level_measured_directly(torch_run: Path, tmp_path: Path) -> None:
    expected = expected_origins(torch_run)
    assert len(expected) >= 10
    got = measured_events(RunBundle(torch_run)).kernels
    assert {origin: list(names) for origin, names in got.items()} == expected
    # A level annotated without a profile file is passed over, not the end of the search.
    root = tmp_path / "run"
    shutil.copytree(torch_run, root)
    shutil.copy(root / "annotated" / "torch.mlir", root / "annotated" / "early.mlir")
    shutil.copy(root / "ir" / "torch.mlir", root / "ir" / "early.mlir")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["ir_levels"] = ["early", "torch", "linalg"]
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert RunBundle(root).annotated_levels()[0] == "early"
    assert measured_events(RunBundle(root)).kernels == got


def entry(name: str, origin: str | None, kernels: list[str], source: str) -> dict[str, Any]:
    key: dict[str, Any] = {"name": name, "source": "m.py:1:0", "ordinal": 900}
    if origin is not None:
        key["origin"] = origin
    profile = {"count": 1, "total_ns": 10, "mean_ns": 10, "min_ns": 10, "max_ns": 10,
               "first_ts_ns": 0, "fraction": 0.0, "kernels": kernels, "fused_with": [],
               "source": source}  # fmt: skip
    return {"key": key, "op": "torch.aten.add", "loc": "", "profile": profile}


def test_only_origins_with_event_names_measured_directly_count(
    torch_run: Path, tmp_path: Path
) -> None:
    root = tmp_path / "run"
    shutil.copytree(torch_run, root)
    extra = {
        "torch": [
            entry("no_origin", None, ["aten::extra"], "torch.profiler:extra"),
            entry("no_names", "torch#9001", [], "torch.profiler:none"),
        ],
        "linalg": [entry("carried", "torch#9002", ["l"], "reattach:torch#9002")],
    }
    for level, entries in extra.items():
        path = root / f"opprofile.{level}.json"
        document = json.loads(path.read_text())
        document["entries"] += entries
        path.write_text(json.dumps(document))
    got = measured_events(RunBundle(root)).kernels
    assert {origin: list(names) for origin, names in got.items()} == expected_origins(root)
    assert not {"torch#9001", "torch#9002", "", None} & set(got)


def test_a_profile_file_that_is_not_the_bundle_s_own_is_named(
    torch_run: Path, tmp_path: Path
) -> None:
    root = tmp_path / "run"
    shutil.copytree(torch_run, root)
    outside = tmp_path / "elsewhere.json"
    shutil.move(root / "opprofile.torch.json", outside)
    (root / "opprofile.torch.json").symlink_to(outside)
    with pytest.raises(BundleError, match="torch profile"):
        measured_events(RunBundle(root))


def timed(kernels: tuple[str, ...], first: int, count: int, source: str = "trace") -> ProfileData:
    return dataclasses.replace(profile(kernels, source), first_ts_ns=first, count=count)


def test_an_op_gets_the_starts_of_its_own_events_from_what_the_ir_keeps_of_its_profile() -> None:
    """The IR does not hold `event_ts`: an op finds its starts by (first start, names, count);
    a reattached op by its origin, and only when every origin lists them."""
    key_a, key_b = (10, ("aten::linear",), 2), (30, ("aten::linear",), 2)
    measured = MeasuredEvents(
        kernels={"torch#1": ("aten::linear",), "torch#2": ("aten::relu",), "torch#3": ("c",)},
        starts={"torch#1": (10, 50), "torch#2": (12, 52)},
        by_profile={key_a: (10, 50), key_b: None},  # None: two entries, different events
    )
    a = op(0, timed(("aten::linear",), 10, 2))
    ambiguous = op(1, timed(("aten::linear",), 30, 2))
    other_count = op(2, timed(("aten::linear",), 10, 3))
    both = op(3, timed(("x torch#1", "y torch#2"), 0, 2, "reattach:torch#1"))
    mixed = op(4, timed(("x torch#1", "z torch#3"), 0, 2, "reattach:torch#1"))
    found = with_trace_kernels([a, ambiguous, other_count, both, mixed], measured)
    starts = [item.profile.event_ts for item in found if item.profile is not None]
    assert starts == [(10, 50), (), (), (10, 12, 50, 52), ()]
    assert found[1] is ambiguous and found[2] is other_count
    assert found[4].profile is not None and found[4].profile.kernels == ("aten::linear", "c")


def test_the_origin_of_a_reattached_profile_drops_the_split_note() -> None:
    assert reattached_origin(profile((), "reattach:torch#7")) == "torch#7"
    assert reattached_origin(profile((), "reattach:torch#7 split 1/2")) == "torch#7"
    refs = export((), {"torch#7": ("k",)})
    assert refs.event_names(profile(("own",), "reattach:torch#7 split 2/2")) == ("k",)


def test_refs_of_a_shared_name_are_joined_to_their_own_events_only() -> None:
    ref = OpRef("torch", 0, "n", "torch.op0", "m.py:1:1", "forward", starts=frozenset({10, 50}))
    assert ref.ran(10) and ref.ran(50) and not ref.ran(30)
    assert OpRef("torch", 1, "n", "torch.op1", "m.py:1:1", "forward").ran(30)  # no starts: all


def test_measured_events_read_the_starts_from_the_saved_profiles(
    torch_run: Path, tmp_path: Path
) -> None:
    """From the JSON, read here: each torch entry with `event_ts` is found by its origin and by
    (first start, names, count); two entries with one key but different starts by neither key."""
    document = json.loads((torch_run / "opprofile.torch.json").read_text())
    listed = [e for e in document["entries"] if e["profile"].get("event_ts")]
    assert len(listed) >= 2, "the CNN runs several ops under one aten name"
    measured = measured_events(RunBundle(torch_run))
    for entry in listed:
        data = entry["profile"]
        key = (data["first_ts_ns"], tuple(data["kernels"]), data["count"])
        assert measured.by_profile[key] == tuple(data["event_ts"])
        assert measured.starts[entry["key"]["origin"]] == tuple(data["event_ts"])
    root = tmp_path / "run"
    shutil.copytree(torch_run, root)
    twin = json.loads(json.dumps(listed[0]))
    twin["key"]["origin"] = "torch#99999"
    twin["profile"]["event_ts"] = [1, 2]
    document["entries"].append(twin)
    (root / "opprofile.torch.json").write_text(json.dumps(document))
    first = listed[0]["profile"]
    key = (first["first_ts_ns"], tuple(first["kernels"]), first["count"])
    assert measured_events(RunBundle(root)).by_profile[key] is None


def test_entries_not_measured_directly_are_skipped_not_the_end_of_their_level(
    torch_run: Path, tmp_path: Path
) -> None:
    """An entry without event names first in the torch profile, a carried-down one first in the
    linalg profile: every measured entry after them is still read (names and starts)."""
    root = tmp_path / "run"
    shutil.copytree(torch_run, root)
    first = {
        "torch": entry("no_names", "torch#9001", [], "torch.profiler:none"),
        "linalg": entry("carried", "torch#9002", ["l"], "reattach:torch#9002"),
    }
    for level, skipped in first.items():
        path = root / f"opprofile.{level}.json"
        document = json.loads(path.read_text())
        document["entries"].insert(0, skipped)
        path.write_text(json.dumps(document))
    measured = measured_events(RunBundle(root))
    expected = expected_origins(root)
    assert len(expected) >= 10
    assert {origin: list(names) for origin, names in measured.kernels.items()} == expected
    document = json.loads((root / "opprofile.torch.json").read_text())
    listed = [e["profile"] for e in document["entries"] if e["profile"].get("event_ts")]
    assert listed, "the CNN runs several ops under one aten name"
    for data in listed:
        key = (data["first_ts_ns"], tuple(data["kernels"]), data["count"])
        assert measured.by_profile[key] == tuple(data["event_ts"])

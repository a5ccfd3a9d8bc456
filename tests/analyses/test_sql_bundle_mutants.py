"""The `opprofile` and `ops` SQL views of a run bundle built in code: every entry of every
annotated level with its key and every `ProfileData` field in its SQL type, a level without an
opprofile file left out, and the friendly `ops` columns.

Written from the mutants of `analyses/sql_bundle.py`. Expected rows are the entries written
here, field by field.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from irprof.analyses.sql_bundle import BUNDLE_VIEWS, bundle_views
from irprof.bundle import Manifest, RunBundle
from irprof.errors import BundleError
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData

MATMUL = OpProfileEntry(
    OpKey(name="net/dense/MatMul", source="m.py:3:1", origin="tf#4", ordinal=2),
    ProfileData(
        count=3, total_ns=900, mean_ns=300, min_ns=200, max_ns=400, first_ts_ns=10,
        fraction=0.75, kernels=("gemm", "gemm2"), fused_with=("bias",), source="xplane:x",
        event_ts=(10, 2**62),
    ),
    op_name="tf.MatMul",
    location="m.py:3:1",
)  # fmt: skip
SHARED = OpProfileEntry(
    OpKey(name="fused/add"),
    ProfileData(
        count=1, total_ns=40, mean_ns=40, min_ns=40, max_ns=40, first_ts_ns=0, fraction=0.25,
        group="fusion.1", group_total_ns=60, group_size=2, share_basis="flops",
    ),
    op_name="stablehlo.add",
    location="f.py:1:1",
)  # fmt: skip


def bundle_with(root: Path, profiles: dict[str, OpProfile | None]) -> RunBundle:
    """A bundle whose annotated levels are the keys; a level mapped to None has no opprofile."""
    bundle = RunBundle(root)
    (root / "annotated").mkdir(parents=True)
    bundle.write_manifest(
        Manifest(
            framework="tf", model="m.py", entry="serve", steps=1, device="cpu",
            versions={"irprof": "0.1.0"}, ir_levels=tuple(profiles), trace_files=(),
        )
    )  # fmt: skip
    for level, profile in profiles.items():
        bundle.annotated_path(level).write_text("module {}\n")
        if profile is not None:
            profile.save(bundle.opprofile_level_path(level))
    return bundle


def rows(connection: duckdb.DuckDBPyConnection, query: str) -> list[dict[str, object]]:
    result = connection.execute(query)
    names = [column[0] for column in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def test_opprofile_holds_every_entry_field_by_field(tmp_path: Path) -> None:
    bundle = bundle_with(
        tmp_path / "run",
        {
            "tf": OpProfile("tf", "tf", (MATMUL,)),
            "stablehlo": OpProfile("stablehlo", "jax", (SHARED,)),
            "llvm": None,  # annotated, never profiled: no rows
        },
    )
    connection = duckdb.connect()
    bundle_views(connection, bundle)
    found = rows(connection, "SELECT * FROM opprofile ORDER BY level")
    fields = [field.name for field in dataclasses.fields(ProfileData)]
    keys = ["name", "source", "origin", "ordinal"]
    expected = []
    for level, framework, entry in (("stablehlo", "jax", SHARED), ("tf", "tf", MATMUL)):
        row: dict[str, object] = {
            "level": level,
            "framework": framework,
            "op": entry.op_name,
            "location": entry.location,
        }
        row.update({f"key_{key}": getattr(entry.key, key) for key in keys})
        for name in fields:
            value = getattr(entry.data, name)
            row[name] = list(value) if isinstance(value, tuple) else value
        row["estimated"] = entry.data.group_size > 1
        expected.append(row)
    assert found == expected
    assert list(found[0]) == list(expected[0])  # the columns in this order


def test_opprofile_columns_have_their_sql_types(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", {"tf": OpProfile("tf", "tf", (MATMUL, SHARED))})
    connection = duckdb.connect()
    bundle_views(connection, bundle)
    table: pa.Table = connection.sql("SELECT * FROM opprofile").to_arrow_table()
    types = {field.name: field.type for field in table.schema}
    sql_type = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_(),
                "tuple[int, ...]": pa.list_(pa.int64())}  # fmt: skip
    for field in dataclasses.fields(ProfileData):
        annotation = str(field.type)
        assert types[field.name] == sql_type.get(annotation, pa.list_(pa.string())), field.name
    assert types["count"] == pa.int64() and types["fraction"] == pa.float64()
    assert types["kernels"] == pa.list_(pa.string()) and types["source"] == pa.string()
    assert types["event_ts"] == pa.list_(pa.int64())
    assert connection.sql("SELECT event_ts FROM opprofile").fetchall() == [([10, 2**62],), ([],)]
    assert types["key_ordinal"] == pa.int64() and types["estimated"] == pa.bool_()
    for name in ("level", "framework", "op", "location", "key_name", "key_source", "key_origin"):
        assert types[name] == pa.string(), name


def test_ops_view_has_friendly_columns_and_the_group_fields(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", {"tf": OpProfile("tf", "tf", (MATMUL, SHARED))})
    connection = duckdb.connect()
    bundle_views(connection, bundle)
    found = rows(connection, "SELECT * FROM ops ORDER BY total_ns DESC")
    assert found == [
        {"level": "tf", "op": "tf.MatMul", "location": "m.py:3:1", "name": "net/dense/MatMul",
         "source": "m.py:3:1", "count": 3, "total_ns": 900, "mean_ns": 300, "share": 0.75,
         "estimated": False, "group": "", "group_total_ns": 0, "group_size": 0,
         "share_basis": ""},
        {"level": "tf", "op": "stablehlo.add", "location": "f.py:1:1", "name": "fused/add",
         "source": None, "count": 1, "total_ns": 40, "mean_ns": 40, "share": 0.25,
         "estimated": True, "group": "fusion.1", "group_total_ns": 60, "group_size": 2,
         "share_basis": "flops"},
    ]  # fmt: skip
    assert BUNDLE_VIEWS == ("ops", "opprofile")


def test_a_bundle_without_profiles_has_empty_views(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path / "run", {"tf": None})
    connection = duckdb.connect()
    bundle_views(connection, bundle)
    assert rows(connection, "SELECT count(*) AS n FROM opprofile") == [{"n": 0}]
    assert rows(connection, "SELECT count(*) AS n FROM ops") == [{"n": 0}]


def test_columns_keep_their_types_when_every_value_is_empty(tmp_path: Path) -> None:
    # one entry: no source, origin or ordinal in its key, no kernels, fused ops or groups
    bundle = bundle_with(tmp_path / "run", {"tf": OpProfile("tf", "tf", (SHARED,))})
    connection = duckdb.connect()
    bundle_views(connection, bundle)
    table: pa.Table = connection.sql("SELECT * FROM opprofile").to_arrow_table()
    types = {field.name: field.type for field in table.schema}
    assert SHARED.key.origin is None and SHARED.data.kernels == SHARED.data.fused_with == ()
    assert (types["key_source"], types["key_origin"]) == (pa.string(), pa.string())
    assert types["key_ordinal"] == pa.int64()
    assert types["kernels"] == types["fused_with"] == pa.list_(pa.string())
    assert rows(connection, "SELECT kernels, key_origin FROM opprofile") == [
        {"kernels": [], "key_origin": None}
    ]


def test_a_profile_linked_from_outside_the_bundle_is_refused_by_its_level(
    tmp_path: Path,
) -> None:
    bundle = bundle_with(tmp_path / "run", {"tf": None})
    outside = tmp_path / "elsewhere.json"
    OpProfile("tf", "tf", (MATMUL,)).save(outside)
    bundle.opprofile_level_path("tf").symlink_to(outside)
    with pytest.raises(BundleError) as caught:
        bundle_views(duckdb.connect(), bundle)
    assert str(caught.value) == (
        f"{bundle.opprofile_level_path('tf')}: tf profile resolves to {outside.resolve()}, "
        "outside the bundle; refusing to read it"
    )

"""The `ops` and `opprofile` SQL views of a run bundle (see `sql_views`).

`opprofile` is every entry of every annotated level's `opprofile.<level>.json` with its key and
every field `ProfileData` has (read from the dataclass, so fields added later, like the group and
share fields, appear without a change here); `ops` is one friendly row per op.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from irprof.bundle import RunBundle
from irprof.opprofile import OpProfile, ProfileData

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

BUNDLE_VIEWS = ("ops", "opprofile")
_KEY_FIELDS = ("name", "source", "origin", "ordinal")
_GROUP_FIELDS = ("group", "group_total_ns", "group_size", "share_basis")


def _field_type(annotation: Any) -> pa.DataType:
    import pyarrow as pa

    text = str(annotation)
    return {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_(),
            "tuple[int, ...]": pa.list_(pa.int64())}.get(text, pa.list_(pa.string()))  # fmt: skip


def _opprofile_table(profiles: list[OpProfile]) -> pa.Table:
    """Every entry of every level, with every `ProfileData` field (whatever fields it has)."""
    import pyarrow as pa

    fields = dataclasses.fields(ProfileData)
    columns: dict[str, list[Any]] = {"level": [], "framework": [], "op": [], "location": []}
    columns.update({f"key_{key}": [] for key in _KEY_FIELDS})
    columns.update({field.name: [] for field in fields})
    columns["estimated"] = []
    for profile in profiles:
        for entry in profile.entries:
            columns["level"].append(profile.level)
            columns["framework"].append(profile.framework)
            columns["op"].append(entry.op_name)
            columns["location"].append(entry.location)
            for key in _KEY_FIELDS:
                columns[f"key_{key}"].append(getattr(entry.key, key))
            for field in fields:
                value = getattr(entry.data, field.name)
                columns[field.name].append(list(value) if isinstance(value, tuple) else value)
            columns["estimated"].append(entry.data.estimated)
    types = {"key_ordinal": pa.int64(), "estimated": pa.bool_()}
    types.update({field.name: _field_type(field.type) for field in fields})
    return pa.table(
        {name: pa.array(values, type=types.get(name, pa.string()))
         for name, values in columns.items()}
    )  # fmt: skip


def bundle_views(connection: duckdb.DuckDBPyConnection, bundle: RunBundle) -> None:
    """Register `opprofile` and create `ops` for every annotated level of `bundle`."""
    profiles = []
    for level in bundle.annotated_levels():
        name = f"opprofile.{level}.json"
        if (bundle.root / name).is_file():
            profiles.append(OpProfile.load(bundle.member(name, what=f"{level} profile")))
    connection.register("opprofile", _opprofile_table(profiles))
    names = {field.name for field in dataclasses.fields(ProfileData)}
    group = "".join(f', "{name}"' for name in _GROUP_FIELDS if name in names)
    connection.execute(
        "CREATE VIEW ops AS SELECT level, op, location, key_name AS name, key_source AS source, "
        f"count, total_ns, mean_ns, fraction AS share, estimated{group} FROM opprofile"
    )

"""The SQL views (`events`, `tracks`, `flows`) of small traces built in code, as events.json, as
Parquet and as rank datasets, every column compared with the trace written; query results
(truncation, CSV values), exports, and every refusal compared in full.

Written from the mutants of `analyses/sql_views.py`. Expected rows are computed here from the
trace built (its columns, tracks and flows), expected DuckDB messages from a bare DuckDB
connection.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from irprof.analyses.rank_cluster import ClusterOptions, SerialRunner
from irprof.analyses.rank_dataset import convert_ranks
from irprof.analyses.sql_views import SqlResult, open_dataset_session, open_sql
from irprof.bundle import Manifest, RunBundle
from irprof.errors import TraceFormatError, UsageError
from irprof.opprofile import OpKey, OpProfile, OpProfileEntry, ProfileData
from irprof.trace.builder import TraceBuilder
from irprof.trace.io import save_events_json, save_parquet
from irprof.trace.model import EventKind, Trace

SANDBOXED = (
    ": queries run sandboxed, with no file access beyond the views; pass --allow-external "
    "(allow_external=True) for full DuckDB"
)
EVENT_TYPES = (
    "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "INTEGER", "VARCHAR", "VARCHAR", "BIGINT",
    "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR",
)  # fmt: skip


def small_trace(rank: int | None, shift: int = 0, flows: bool = True) -> Trace:
    """Three events on two tracks, one flow; `rank` in distributedInfo (None: no rank)."""
    builder = TraceBuilder("small")
    host = builder.track(10 + shift, 1, "host", "main")
    stream = builder.track(10 + shift, 7, "gpu", "stream 7")
    step = builder.add(100 + shift, 50, host, "step 1", EventKind.STEP, {"n": 1})
    kernel = builder.add(120 + shift, 20, stream, "gemm", EventKind.KERNEL)
    builder.add(160 + shift, 5 + shift, stream, "gemm", EventKind.KERNEL, {"correlation": 9})
    if flows:
        builder.flow(step, kernel, 42 + shift)
    if rank is not None:
        builder.metadata["trace_fields"] = {"distributedInfo": {"rank": rank}}
    return builder.build()


def event_rows(trace: Trace, rank: int) -> list[tuple[Any, ...]]:
    """The `events` rows of `trace`, from its columns."""
    rows = []
    for row in range(len(trace)):
        track = int(trace.track[row])
        start, stop = int(trace.args_offsets[row]), int(trace.args_offsets[row + 1])
        args = trace.args_blob[start:stop].decode() if stop > start else None
        rows.append(
            (
                rank, row, int(trace.ts_ns[row]), int(trace.dur_ns[row]),
                int(trace.ts_ns[row]) + int(trace.dur_ns[row]), track,
                trace.tracks.process[track], trace.tracks.thread[track],
                trace.tracks.pid[track], trace.tracks.tid[track], trace.name_of(row),
                EventKind(int(trace.kind[row])).label, args,
            )
        )  # fmt: skip
    return rows


def track_rows(trace: Trace, rank: int) -> list[tuple[Any, ...]]:
    tracks = trace.tracks
    return [
        (rank, index, tracks.process[index], tracks.thread[index], tracks.pid[index],
         tracks.tid[index])
        for index in range(len(tracks.process))
    ]  # fmt: skip


def flow_rows(trace: Trace, rank: int) -> list[tuple[Any, ...]]:
    flows = trace.flows
    return [
        (rank, int(flows.flow_id[index]), int(flows.src[index]), int(flows.dst[index]))
        for index in range(len(flows))
    ]


def views(source: Path, **options: Any) -> dict[str, SqlResult]:
    with open_sql(source, **options) as session:
        return {
            "events": session.query("SELECT * FROM events ORDER BY rank, row"),
            "tracks": session.query("SELECT * FROM tracks ORDER BY rank, track"),
            "flows": session.query("SELECT * FROM flows ORDER BY rank, flow_id"),
        }


def check_views(found: dict[str, SqlResult], traces: dict[int, Trace]) -> None:
    """Every view holds the rows of every rank's trace, in the documented columns and types."""
    expected = {
        "events": [row for rank, trace in traces.items() for row in event_rows(trace, rank)],
        "tracks": [row for rank, trace in traces.items() for row in track_rows(trace, rank)],
        "flows": [row for rank, trace in traces.items() for row in flow_rows(trace, rank)],
    }
    for name, rows in expected.items():
        if name == "events":  # args compared as JSON
            got = [(*row[:-1], None if row[-1] is None else json.loads(row[-1])) for row in
                   found[name].rows]  # fmt: skip
            want = [(*row[:-1], None if row[-1] is None else json.loads(row[-1])) for row in rows]
            assert got == want
        else:
            assert found[name].rows == rows, name
    assert found["events"].columns == (
        "rank", "row", "ts_ns", "dur_ns", "end_ns", "track", "process", "thread", "pid", "tid",
        "name", "kind", "args",
    )  # fmt: skip
    assert found["events"].types == EVENT_TYPES
    assert found["tracks"].columns == (
        "rank",
        "track",
        "process",
        "thread",
        "pid",
        "tid",
    )
    assert found["tracks"].types == (
        "BIGINT",
        "INTEGER",
        "VARCHAR",
        "VARCHAR",
        "BIGINT",
        "BIGINT",
    )
    assert found["flows"].columns == ("rank", "flow_id", "src", "dst")
    assert found["flows"].types == ("BIGINT", "BIGINT", "BIGINT", "BIGINT")


@pytest.mark.parametrize("suffix", [".json", ".parquet"])
@pytest.mark.parametrize("rank", [None, 3])
@pytest.mark.parametrize("with_flows", [True, False])
def test_a_trace_s_views_hold_every_event_track_and_flow(
    tmp_path: Path, suffix: str, rank: int | None, with_flows: bool
) -> None:
    # GIVEN a trace with or without a rank (no digit in the file name: no rank there either)
    trace = small_trace(rank, flows=with_flows)
    path = tmp_path / f"trace{suffix}"
    (save_parquet if suffix == ".parquet" else save_events_json)(trace, path)
    # THEN its views hold its rows, under rank 0 when it has none
    check_views(views(path), {rank if rank is not None else 0: trace})


def test_parquet_is_known_by_its_content_and_a_named_rank(tmp_path: Path) -> None:
    trace = small_trace(None)
    path = tmp_path / "trace_rank5.bin"
    save_parquet(trace, path)
    with open_sql(path) as session:
        assert session.description == f"Parquet trace {path}"
        assert session.readable == (path,)
        assert session.views == ("events", "tracks", "flows")
        assert (session.ranks, session.failures, session.missing) == (1, (), ())
    check_views(views(path), {5: trace})
    events = tmp_path / "trace.json"
    save_events_json(trace, events)
    with open_sql(events) as session:
        assert session.description == f"trace {events}"
        assert session.readable == ()


@pytest.fixture(name="small")
def fixture_small(tmp_path: Path) -> Path:
    """The small trace without a rank, as events.json."""
    path = tmp_path / "small.json"
    save_events_json(small_trace(None), path)
    return path


def rank_files(folder: Path) -> dict[int, Trace]:
    """Two rank traces (events.json, ranks 2 and 0 in their metadata) in `folder`."""
    folder.mkdir()
    traces = {2: small_trace(2, shift=1000), 0: small_trace(0)}
    for number, trace in enumerate(traces.values()):
        save_events_json(trace, folder / f"part{number}.json")
    return dict(sorted(traces.items()))


def test_rank_traces_are_converted_with_progress_and_removed_after(
    tmp_path: Path,
) -> None:
    traces = rank_files(tmp_path / "raw")
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))

    cluster = ClusterOptions(workers=0)
    with open_sql(tmp_path / "raw", cluster=cluster, on_progress=progress) as session:
        assert session.description == (
            f"2 rank traces in {tmp_path / 'raw'} ({SerialRunner().description})"
        )
        assert (session.ranks, session.failures, session.missing) == (2, (), ())
        readable = session.readable
        assert len(readable) == 2 and all(path.is_file() for path in readable)
        found = {
            "events": session.query("SELECT * FROM events ORDER BY rank, row"),
            "tracks": session.query("SELECT * FROM tracks ORDER BY rank, track"),
            "flows": session.query("SELECT * FROM flows ORDER BY rank, flow_id"),
        }
    assert calls == [(1, 2), (2, 2)]
    check_views(found, traces)
    # The temporary dataset is gone with the session
    assert not any(path.exists() for path in readable)
    # Into a dataset folder given: kept; the views read it where it lies
    with open_sql(tmp_path / "raw", cluster=cluster, dataset=tmp_path / "ds") as session:
        assert all(path.is_relative_to(tmp_path / "ds") for path in session.readable)
    assert all(path.is_file() for path in session.readable)
    check_views(views(tmp_path / "ds"), traces)


def test_the_format_given_reads_the_rank_traces(tmp_path: Path) -> None:
    rank_files(tmp_path / "raw")
    cluster = ClusterOptions(workers=0)
    with open_sql(tmp_path / "raw", cluster=cluster, format="events") as session:
        assert session.ranks == 2
    with pytest.raises(UsageError) as caught:
        open_sql(tmp_path / "raw", cluster=cluster, format="xplane").__enter__()
    # Each file's own error, as a conversion of that file alone gives it
    errors = [
        convert_ranks([path], tmp_path / path.stem, SerialRunner(), "xplane").failures[0].error
        for path in sorted((tmp_path / "raw").iterdir())
    ]
    assert "part0.json" in errors[0] and "part1.json" in errors[1]
    assert str(caught.value) == (
        f"{tmp_path / 'raw'}: no rank file could be converted: {errors[0]}; {errors[1]}"
    )


def test_a_rank_that_fails_is_reported_beside_the_others(tmp_path: Path) -> None:
    traces = rank_files(tmp_path / "raw")
    (tmp_path / "raw" / "part9.json").write_text("{not json")
    with open_sql(tmp_path / "raw", cluster=ClusterOptions(workers=0)) as session:
        assert session.ranks == 2
        assert [failure.source for failure in session.failures] == [
            str(tmp_path / "raw" / "part9.json")
        ]
        assert session.missing == ()
        assert session.query("SELECT DISTINCT rank FROM events ORDER BY rank").rows == [
            (rank,) for rank in traces
        ]
    # Opened again as a dataset: the failure is what an earlier conversion missed
    dataset = tmp_path / "ds"
    convert_ranks(sorted((tmp_path / "raw").iterdir()), dataset, SerialRunner())
    with open_sql(dataset) as session:
        assert session.description == f"rank dataset {dataset}"
        assert session.views == ("events", "tracks", "flows")
        assert session.failures == ()
        assert [failure.source for failure in session.missing] == [
            str(tmp_path / "raw" / "part9.json")
        ]
        assert session.ranks == 2


def test_query_rows_are_truncated_at_the_limit(small: Path) -> None:
    with open_sql(small) as session:
        query = "SELECT range AS n FROM range(3)"
        assert session.query(query, limit=2) == SqlResult(("n",), ("BIGINT",), [(0,), (1,)], True)
        assert session.query(query, limit=3) == SqlResult(
            ("n",), ("BIGINT",), [(0,), (1,), (2,)], False
        )
        assert session.query(query, limit=4).truncated is False
        assert session.query(query) == SqlResult(("n",), ("BIGINT",), [(0,), (1,), (2,)], False)
        assert session.query(query, limit=1).rows == [(0,)]
        # A statement without a result (DuckDB returns no relation for comments only)
        assert session.query("-- nothing to run", limit=2) == SqlResult((), (), [], False)
        assert session.query("CREATE TABLE t AS SELECT 1 AS x").columns == ("Count",)
        assert session.query("SELECT x FROM t").rows == [(1,)]


def test_csv_text_writes_booleans_lists_structs_and_nulls(small: Path) -> None:
    with open_sql(small) as session:
        result = session.query(
            "SELECT true AS t, false AS f, [1, 2] AS l, {'a': 1, 'b': 'x'} AS s, NULL AS z, "
            "[DATE '2020-01-02'] AS d, 'plain' AS p, 7 AS i"
        )
    text = result.csv_text()
    assert text == (
        "t,f,l,s,z,d,p,i\n"
        'true,false,"[1, 2]","{""a"": 1, ""b"": ""x""}",,"[""2020-01-02""]",plain,7\n'
    )
    assert list(csv.reader(io.StringIO(text)))[1][:4] == [
        "true", "false", "[1, 2]", '{"a": 1, "b": "x"}'
    ]  # fmt: skip
    assert result.table_columns() == ("t", "f", "l", "s", "z", "d", "p", "i")
    assert result.table_rows() == result.rows


def duckdb_message(sql: str) -> str:
    """DuckDB's own first line for `sql` on an empty connection."""
    with pytest.raises(duckdb.Error) as caught:
        duckdb.connect().sql(sql)
    return str(caught.value).strip().splitlines()[0]


def test_errors_name_the_views_and_the_sandbox(tmp_path: Path, small: Path) -> None:
    with open_sql(small) as session:
        for sql in ("SELEC 1", "SELECT * FROM nowhere"):
            with pytest.raises(UsageError) as caught:
                session.query(sql)
            assert str(caught.value) == (
                f"SQL: {duckdb_message(sql)} (views here: events, tracks, flows; ops and "
                "opprofile: run bundles only; see `irprof sql --help`)"
            )
        secret = tmp_path / "secret.csv"
        secret.write_text("a\n1\n")
        with pytest.raises(UsageError) as caught:
            session.query(f"SELECT * FROM read_csv('{secret}')")
        message = str(caught.value)
        assert message.startswith("SQL: ") and message.endswith(SANDBOXED)
        assert "disabled by configuration" in message
        with pytest.raises(UsageError) as caught:
            session.query("SET enable_external_access = true")
        message = str(caught.value)
        assert message.startswith("SQL: ") and message.endswith(SANDBOXED)
        assert "configuration has been locked" in message
        # The relation's own errors too (at fetch)
        with pytest.raises(UsageError, match=r"^SQL: .*views here: events, tracks, flows; "):
            session.query("SELECT 1 / 0 AS x, error('boom')")
    # Open with allow_external: DuckDB may read the file
    with open_sql(small, allow_external=True) as session:
        assert session.query(f"SELECT a FROM read_csv('{secret}')").rows == [(1,)]


def test_exports_write_parquet_and_csv_in_new_folders(tmp_path: Path, small: Path) -> None:
    trace = small_trace(None)
    query = "SELECT name, dur_ns FROM events ORDER BY row"
    expected = [(trace.name_of(row), int(trace.dur_ns[row])) for row in range(len(trace))]
    with open_sql(small) as session:
        session.export(query, tmp_path / "a" / "b" / "out.PARQUET")
        session.export(query, tmp_path / "c" / "out.CSV")
        table = pq.read_table(tmp_path / "a" / "b" / "out.PARQUET")
        assert list(zip(*table.to_pydict().values(), strict=True)) == expected
        metadata = pq.ParquetFile(tmp_path / "a" / "b" / "out.PARQUET").metadata
        assert metadata.row_group(0).column(0).compression == "ZSTD"
        with (tmp_path / "c" / "out.CSV").open() as handle:
            rows = list(csv.reader(handle))
        assert rows == [["name", "dur_ns"]] + [[name, str(dur)] for name, dur in expected]
        assert sorted(path.name for path in (tmp_path / "c").iterdir()) == ["out.CSV"]
        # Refusals: the suffix, and a statement without rows (named by its first 60 characters)
        with pytest.raises(UsageError) as caught:
            session.export(query, tmp_path / "out.txt")
        assert (
            str(caught.value) == f"{tmp_path / 'out.txt'}: the output must end in .parquet or .csv"
        )
        statement = "-- a comment, no statement: DuckDB gives no relation for it, nothing to write"
        with pytest.raises(UsageError) as caught:
            session.export(statement, tmp_path / "d" / "x.csv")
        assert str(caught.value) == (
            f"SQL: {statement[:60]!r} returns no rows to write to {tmp_path / 'd' / 'x.csv'}"
        )
        with pytest.raises(UsageError, match=r"^SQL: .*views here"):
            session.export("SELECT 1 / 0 AS x, error('boom')", tmp_path / "e" / "x.csv")
        assert list((tmp_path / "e").iterdir()) == []


def test_missing_sources_and_raw_ranks_without_a_dataset_are_refused(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "nothing.json"
    with pytest.raises(TraceFormatError) as caught:
        open_sql(missing).__enter__()
    assert str(caught.value) == f"{missing}: no such file or directory"
    with pytest.raises(TraceFormatError) as caught:
        open_dataset_session(missing)
    assert str(caught.value) == f"{missing}: no such file or directory"
    raw = tmp_path / "raw"
    traces = rank_files(raw)
    with pytest.raises(UsageError) as caught_usage:
        open_dataset_session(raw)
    assert str(caught_usage.value) == (
        f"{raw}: a directory of rank traces; pass dataset=FOLDER to convert it into "
        "(or convert it first: irprof trace convert DIR -o FOLDER)"
    )
    session = open_dataset_session(raw, cluster=ClusterOptions(workers=0), dataset=tmp_path / "d")
    try:
        assert session.ranks == 2
        assert session.query("SELECT count(*) FROM events").rows == [
            (sum(len(trace) for trace in traces.values()),)
        ]
        with pytest.raises(UsageError, match="sandboxed"):
            session.query(f"SELECT * FROM read_text('{raw / 'part0.json'}')")
    finally:
        session.close()
    # A rank dataset, a single trace and a folder of one trace need no dataset folder
    for source in (tmp_path / "d", raw / "part0.json"):
        session = open_dataset_session(source)
        try:
            assert session.query("SELECT count(*) FROM events").rows[0][0] > 0
        finally:
            session.close()
    opened = open_dataset_session(raw / "part0.json", allow_external=True)
    try:
        assert opened.query(f"SELECT count(*) FROM read_text('{raw / 'part1.json'}')").rows == [
            (1,)
        ]
    finally:
        opened.close()


def test_partitions_must_be_real_files_inside_the_dataset(tmp_path: Path) -> None:
    rank_files(tmp_path / "raw")
    dataset = tmp_path / "ds"
    convert_ranks(sorted((tmp_path / "raw").iterdir()), dataset, SerialRunner())
    # A rank folder that is a symbolic link (to a real copy elsewhere)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(dataset / "rank=2", elsewhere)
    (dataset / "rank=2").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(TraceFormatError) as caught:
        open_sql(dataset).__enter__()
    assert str(caught.value) == (
        f"{dataset / 'rank=2'}: a symbolic link inside rank dataset {dataset}: partitions must "
        "be real files and folders inside the dataset"
    )
    (dataset / "rank=2").unlink()
    shutil.move(elsewhere, dataset / "rank=2")
    # A partition file that is a symbolic link
    partition = dataset / "rank=0" / "events.parquet"
    shutil.move(partition, tmp_path / "real.parquet")
    partition.symlink_to(tmp_path / "real.parquet")
    with pytest.raises(TraceFormatError) as caught:
        open_sql(dataset).__enter__()
    assert str(caught.value) == (
        f"{partition}: a symbolic link inside rank dataset {dataset}: partitions must "
        "be real files and folders inside the dataset"
    )


def small_bundle(root: Path) -> Path:
    """A run bundle whose trace is the small trace (rank 3 in its metadata) and whose one
    annotated level has an opprofile: two JSON files at its top, like two rank traces."""
    bundle = RunBundle(root)
    (root / "trace").mkdir(parents=True)
    save_events_json(small_trace(3), root / "trace" / "small.json")
    (root / "annotated").mkdir()
    bundle.write_manifest(
        Manifest(
            framework="tf", model="m.py", entry="serve", steps=1, device="cpu",
            versions={"irprof": "0.1.0"}, ir_levels=("tf",), trace_files=("trace/small.json",),
        )
    )  # fmt: skip
    bundle.annotated_path("tf").write_text("module {}\n")
    entry = OpProfileEntry(
        OpKey(name="net/MatMul"),
        ProfileData(count=2, total_ns=40, mean_ns=20, min_ns=10, max_ns=30, first_ts_ns=120,
                    fraction=0.5),
        op_name="tf.MatMul",
        location="m.py:3:1",
    )  # fmt: skip
    OpProfile("tf", "tf", (entry,)).save(bundle.opprofile_level_path("tf"))
    assert len(list(root.glob("*.json"))) == 2
    return root


def test_a_bundle_s_views_are_its_trace_as_rank_0_and_its_profile(
    tmp_path: Path,
) -> None:
    bundle = small_bundle(tmp_path / "run")
    with open_sql(bundle) as session:
        assert session.description == f"run bundle {bundle}"
        assert session.views == ("events", "tracks", "flows", "ops", "opprofile")
        assert session.query("SELECT op, count, total_ns FROM ops").rows == [("tf.MatMul", 2, 40)]
        found = {
            "events": session.query("SELECT * FROM events ORDER BY rank, row"),
            "tracks": session.query("SELECT * FROM tracks ORDER BY rank, track"),
            "flows": session.query("SELECT * FROM flows ORDER BY rank, flow_id"),
        }
        # No "run bundles only" hint where the bundle views are
        with pytest.raises(UsageError) as caught:
            session.query("SELEC 1")
        assert str(caught.value) == (
            f"SQL: {duckdb_message('SELEC 1')} (views here: events, tracks, flows, ops, "
            "opprofile; see `irprof sql --help`)"
        )
    check_views(found, {0: small_trace(3)})
    # Two JSON files at its top do not make the bundle a folder of rank traces
    session = open_dataset_session(bundle)
    try:
        assert session.description == f"run bundle {bundle}"
        with pytest.raises(UsageError, match="sandboxed"):
            session.query(f"SELECT * FROM read_text('{bundle / 'manifest.json'}')")
    finally:
        session.close()


def test_the_dataset_session_runs_on_the_cluster_given(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    rank_files(raw)
    session = open_dataset_session(raw, cluster=ClusterOptions(workers=0), dataset=tmp_path / "d")
    try:
        assert session.description == f"2 rank traces in {raw} ({SerialRunner().description})"
    finally:
        session.close()


def test_paths_with_quotes_are_quoted_in_the_views(tmp_path: Path) -> None:
    folder = tmp_path / "it's here"
    folder.mkdir()
    trace = small_trace(None)
    save_parquet(trace, folder / "trace.parquet")
    check_views(views(folder / "trace.parquet"), {0: trace})
    raw = folder / "raw"
    traces = rank_files(raw)
    check_views(views(raw, cluster=ClusterOptions(workers=0)), traces)


def test_the_format_given_reads_a_single_trace_and_the_name_says_parquet(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.json"
    save_events_json(small_trace(None), path)
    with open_sql(path, format="events") as session:
        assert session.query("SELECT count(*) FROM events").rows == [(3,)]
    with pytest.raises(TraceFormatError, match="^" + re.escape(f"{path}: ")):
        open_sql(path, format="xplane").__enter__()
    # A file named .parquet is read as Parquet, whatever it holds
    named = tmp_path / "trace.parquet"
    shutil.copy(path, named)
    with pytest.raises(TraceFormatError) as caught:
        open_sql(named).__enter__()
    assert str(caught.value).startswith(f"{named}: not a readable Parquet file")


def test_exports_need_no_system_temporary_folder(
    tmp_path: Path, small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The temporary file sits beside the output (renamed in one folder): not in TMPDIR
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no such folder"))
    with open_sql(small) as session:
        session.export("SELECT count(*) AS n FROM events", tmp_path / "out" / "n.csv")
    with (tmp_path / "out" / "n.csv").open() as handle:
        assert list(csv.reader(handle)) == [["n"], ["3"]]

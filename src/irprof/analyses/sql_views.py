"""DuckDB views over a trace, a Parquet trace, a rank dataset or a run bundle (`irprof sql`).

Every source gives the same views, so one query works on all of them:

- `events`: one row per event: `rank`, `row` (the event's row in its rank's Trace, what flows
  point at), `ts_ns`, `dur_ns`, `end_ns`, `track`, `process`, `thread`, `pid`, `tid`, `name`,
  `kind` (label), `args` (the event's arguments as JSON text: `args->>'correlation'`);
- `tracks`: `rank`, `track`, `process`, `thread`, `pid`, `tid`;
- `flows`: `rank`, `flow_id`, `src`, `dst` (event `row`s of the same rank);
- for a run bundle, `opprofile`: every entry of every annotated level's `opprofile.<level>.json`
  (`level`, `framework`, `op`, `location`, the key fields `key_name`, `key_source`,
  `key_origin`, `key_ordinal`, and every field of `ProfileData`, group/share fields included),
  and `ops`: the same, one friendly row per op (`level`, `op`, `location`, `name`, `source`,
  `count`, `total_ns`, `mean_ns`, `share`, `estimated` and the group fields).

Parquet traces and datasets are queried where they lie (DuckDB reads only the columns and row
groups a query needs); other trace files are read into memory first. A directory of rank traces
is converted to a rank dataset first (`rank_dataset.convert_ranks`, in parallel), into a
temporary folder unless one is given.

A session is a sandbox unless opened with `allow_external=True` (`irprof sql --allow-external`):
once the views exist, DuckDB's file system access is switched off except for the Parquet files
the views read, and the configuration is locked, so a query cannot read, write, attach or
install anything (`read_csv('/etc/passwd')`, `COPY ... TO`, `ATTACH`, `INSTALL`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irprof.analyses.rank_cluster import ClusterOptions, open_runner
from irprof.analyses.rank_dataset import (
    RankDataset,
    RankFailure,
    convert_ranks,
    is_rank_dataset,
    open_rank_dataset,
)
from irprof.analyses.ranks import rank_from_metadata, rank_trace_files
from irprof.analyses.sql_bundle import BUNDLE_VIEWS, bundle_views
from irprof.analyses.table import Tabular
from irprof.bundle import RunBundle
from irprof.errors import TraceFormatError, UsageError
from irprof.trace.io import parquet_header, trace_to_arrow
from irprof.trace.model import Trace

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

EVENT_VIEWS = ("events", "tracks", "flows")
_EVENTS_SQL = """
CREATE VIEW events AS
SELECT e.rank, e.row, e.ts_ns, e.dur_ns, e.ts_ns + e.dur_ns AS end_ns, e.track,
       t.process, t.thread, t.pid, t.tid, e.name, e.kind, e.args
FROM {source} AS e LEFT JOIN tracks AS t ON t.rank = e.rank AND t.track = e.track
"""


@dataclass(frozen=True)
class SqlResult(Tabular):
    """A query's columns, their DuckDB types and (up to the limit asked) its rows."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool  # more rows than `rows` holds

    def table_columns(self) -> tuple[str, ...]:
        """The query's columns."""
        return self.columns

    def table_rows(self) -> list[tuple[Any, ...]]:
        """The rows fetched."""
        return self.rows

    def csv_text(self) -> str:
        """The rows as CSV with a header line."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows([_csv_value(value) for value in row] for row in self.rows)
        return out.getvalue()


def _csv_value(value: Any) -> Any:
    """Lists and structs as JSON, booleans as `true`/`false` (as DuckDB's own CSV writes them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict | tuple):
        return json.dumps(value, default=str)
    return value


class SqlSession:
    """A DuckDB connection with the views of one source; close it (or use `with`)."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        description: str,
        views: tuple[str, ...],
        failures: tuple[RankFailure, ...] = (),
        cleanup: contextlib.ExitStack | None = None,
        ranks: int = 1,
        missing: tuple[RankFailure, ...] = (),
        readable: tuple[Path, ...] = (),
    ) -> None:
        self.connection = connection
        self.readable = readable  # the files the views read where they lie
        self.description = description
        self.views = views
        self.failures = failures  # rank files that failed to convert for this session
        self.ranks = ranks  # ranks the views hold
        self.missing = missing  # rank files an earlier conversion of the dataset could not read
        self._cleanup = cleanup or contextlib.ExitStack()

    def __enter__(self) -> SqlSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def seal(self) -> None:
        """Switch off DuckDB's file system access (but for the views' own files) and lock the
        configuration, so that no query can turn it back on."""
        if self.readable:
            allowed = ", ".join(_quote(path) for path in self.readable)
            self.connection.execute(f"SET allowed_paths = [{allowed}]")
        self.connection.execute("SET enable_external_access = false")
        self.connection.execute("SET lock_configuration = true")

    def close(self) -> None:
        """Close the connection and remove temporary files."""
        self.connection.close()
        self._cleanup.close()

    def _run(self, action: Callable[[], Any], sql: str) -> Any:
        import duckdb

        try:
            return action()
        except duckdb.Error as exc:
            message = str(exc).strip().splitlines()[0]
            if "disabled by configuration" in message or "configuration has been locked" in message:
                raise UsageError(
                    f"SQL: {message}: queries run sandboxed, with no file access beyond the "
                    "views; pass --allow-external (allow_external=True) for full DuckDB"
                ) from exc
            bundle_only = "" if "ops" in self.views else "; ops and opprofile: run bundles only"
            raise UsageError(
                f"SQL: {message} (views here: {', '.join(self.views)}{bundle_only}; "
                "see `irprof sql --help`)"
            ) from exc

    def relation(self, sql: str) -> duckdb.DuckDBPyRelation:
        """The query as a DuckDB relation (lazy; valid while the session is open)."""
        return self._run(lambda: self.connection.sql(sql), sql)  # type: ignore[no-any-return]

    def query(self, sql: str, limit: int | None = None) -> SqlResult:
        """Run `sql`; at most `limit` rows are fetched (None: all)."""
        relation: Any = self.relation(sql)
        if relation is None:  # a statement without a result (CREATE, SET, ...)
            return SqlResult((), (), [], False)
        limited = relation if limit is None else relation.limit(limit + 1)
        fetched = self._run(limited.fetchall, sql)
        truncated = limit is not None and len(fetched) > limit
        return SqlResult(
            tuple(relation.columns),
            tuple(str(kind) for kind in relation.types),
            fetched[:limit] if truncated else fetched,
            truncated,
        )

    def export(self, sql: str, output: Path) -> None:
        """Write the query's result to `output` (.parquet or .csv), atomically."""
        suffix = output.suffix.lower()
        if suffix not in (".parquet", ".csv"):
            raise UsageError(f"{output}: the output must end in .parquet or .csv")
        relation: Any = self.relation(sql)
        if relation is None:
            raise UsageError(f"SQL: {sql[:60]!r} returns no rows to write to {output}")
        output.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
        os.close(handle)
        try:
            # Written by pyarrow from DuckDB's record batches: a sealed session's DuckDB may
            # not write files itself.
            batches = self._run(lambda: relation.to_arrow_reader(_EXPORT_BATCH_ROWS), sql)
            _write_batches(batches, Path(temporary), suffix)
            os.replace(temporary, output)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


_EXPORT_BATCH_ROWS = 1 << 17


def _write_batches(batches: pa.RecordBatchReader, path: Path, suffix: str) -> None:
    """Stream record batches into a Parquet (zstd) or CSV (with a header) file."""
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    writer: Any
    if suffix == ".parquet":
        writer = pq.ParquetWriter(path, batches.schema, compression="zstd")
    else:
        writer = pa_csv.CSVWriter(path, batches.schema)
    with writer:
        for batch in batches:
            writer.write_batch(batch)


def _connection() -> duckdb.DuckDBPyConnection:
    import duckdb

    return duckdb.connect(":memory:")


def _header_tables(headers: list[tuple[int, dict[str, Any]]]) -> tuple[pa.Table, pa.Table]:
    """`tracks` and `flows` tables of every rank from their trace headers."""
    import pyarrow as pa

    tracks: dict[str, list[Any]] = {key: [] for key in ("rank", "track", "process", "thread",
                                                        "pid", "tid")}  # fmt: skip
    flows: dict[str, list[Any]] = {key: [] for key in ("rank", "flow_id", "src", "dst")}
    for rank, header in headers:
        table = header["tracks"]
        count = len(table["process"])
        tracks["rank"] += [rank] * count
        tracks["track"] += list(range(count))
        for key in ("process", "thread", "pid", "tid"):
            tracks[key] += table[key]
        links = header["flows"]
        flows["rank"] += [rank] * len(links["src"])
        for key in ("flow_id", "src", "dst"):
            flows[key] += links[key]
    types = {"rank": pa.int64(), "track": pa.int32(), "process": pa.string(),
             "thread": pa.string(), "pid": pa.int64(), "tid": pa.int64(),
             "flow_id": pa.int64(), "src": pa.int64(), "dst": pa.int64()}  # fmt: skip
    return (
        pa.table({key: pa.array(values, type=types[key]) for key, values in tracks.items()}),
        pa.table({key: pa.array(values, type=types[key]) for key, values in flows.items()}),
    )


def _register_headers(
    connection: duckdb.DuckDBPyConnection, headers: list[tuple[int, dict[str, Any]]]
) -> None:
    tracks, flows = _header_tables(headers)
    connection.register("tracks", tracks)
    connection.register("flows", flows)


def _trace_views(connection: duckdb.DuckDBPyConnection, trace: Trace, rank: int) -> None:
    import numpy as np
    import pyarrow as pa

    table = trace_to_arrow(trace).replace_schema_metadata(None)
    table = table.append_column("rank", pa.array(np.full(len(trace), rank, dtype=np.int64)))
    table = table.append_column("row", pa.array(np.arange(len(trace), dtype=np.int64)))
    connection.register("events_data", table)
    tracks = trace.tracks
    header = {
        "tracks": {"process": list(tracks.process), "thread": list(tracks.thread),
                   "pid": list(tracks.pid), "tid": list(tracks.tid)},
        "flows": {"flow_id": trace.flows.flow_id.tolist(), "src": trace.flows.src.tolist(),
                  "dst": trace.flows.dst.tolist()},
    }  # fmt: skip
    _register_headers(connection, [(rank, header)])
    connection.execute(_EVENTS_SQL.format(source="events_data"))


def _parquet_views(
    connection: duckdb.DuckDBPyConnection, files: list[tuple[Path, int]]
) -> tuple[Path, ...]:
    """Views over Parquet traces (one per rank) read where they lie; returns those files."""
    headers = [(rank, parquet_header(path)) for path, rank in files]
    _register_headers(connection, headers)
    selects = [
        f"SELECT ts_ns, dur_ns, track, name, kind, args, file_row_number AS row, "
        f"{int(rank)}::BIGINT AS rank FROM read_parquet({_quote(path)}, file_row_number = true)"
        for path, rank in files
    ]
    connection.execute(f"CREATE VIEW events_data AS {' UNION ALL '.join(selects)}")
    connection.execute(_EVENTS_SQL.format(source="events_data"))
    return tuple(path for path, _rank in files)


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


@contextlib.contextmanager
def open_sql(
    source: Path,
    *,
    cluster: ClusterOptions | None = None,
    dataset: Path | None = None,
    format: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    allow_external: bool = False,
) -> Iterator[SqlSession]:
    """A session with the views of `source` (see the module doc); rank traces are converted
    on `cluster` into `dataset` (a temporary folder when None). Sealed (no file system access
    for queries) unless `allow_external`."""
    if not source.exists():
        raise TraceFormatError(source, "no such file or directory")
    connection = _connection()
    session: SqlSession | None = None
    try:
        session = _open(connection, source, cluster or ClusterOptions(), dataset, format,
                        on_progress)  # fmt: skip
        if not allow_external:
            session.seal()
        yield session
    finally:
        if session is not None:
            session.close()
        else:
            connection.close()


def open_dataset_session(
    source: Path,
    *,
    cluster: ClusterOptions | None = None,
    dataset: Path | None = None,
    allow_external: bool = False,
) -> SqlSession:
    """A session that lives as long as its relations (for the Python API): no temporary
    folder, so a directory of rank traces needs `dataset`, the folder to convert it into."""
    # A run bundle's trace folder may hold several traces of one run: it is not ranks.
    raw_ranks = (
        source.is_dir()
        and not RunBundle(source).is_bundle()
        and not is_rank_dataset(source)
        and rank_trace_files(source)
    )
    if raw_ranks and dataset is None:
        raise UsageError(
            f"{source}: a directory of rank traces; pass dataset=FOLDER to convert it into "
            "(or convert it first: irprof trace convert DIR -o FOLDER)"
        )
    if not source.exists():
        raise TraceFormatError(source, "no such file or directory")
    connection = _connection()
    try:
        session = _open(connection, source, cluster or ClusterOptions(), dataset, None, None)
        if not allow_external:
            session.seal()
        return session
    except BaseException:
        connection.close()
        raise


def _open(
    connection: duckdb.DuckDBPyConnection,
    source: Path,
    cluster: ClusterOptions,
    dataset: Path | None,
    format: str | None,
    on_progress: Callable[[int, int], None] | None,
) -> SqlSession:
    from irprof.readers import read_trace

    if source.is_dir() and RunBundle(source).is_bundle():
        bundle = RunBundle(source)
        _trace_views(connection, bundle.trace(), 0)
        bundle_views(connection, bundle)
        return SqlSession(connection, f"run bundle {source}", EVENT_VIEWS + BUNDLE_VIEWS)
    if source.is_dir() and is_rank_dataset(source):
        opened = open_rank_dataset(source)
        session = _dataset_session(connection, opened, f"rank dataset {source}")
        session.failures, session.missing = (), opened.failures
        return session
    rank_files = rank_trace_files(source) if source.is_dir() else []
    if rank_files:
        return _ranks_session(connection, source, rank_files, cluster, dataset, format,
                              on_progress)  # fmt: skip
    if source.is_file() and (source.suffix == ".parquet" or _head(source) == b"PAR1"):
        rank = rank_from_metadata(parquet_header(source)["metadata"], source, default=0)
        readable = _parquet_views(connection, [(source, rank)])
        return SqlSession(connection, f"Parquet trace {source}", EVENT_VIEWS, readable=readable)
    trace = read_trace(source, format)
    _trace_views(connection, trace, rank_from_metadata(trace.metadata, source, default=0))
    return SqlSession(connection, f"trace {source}", EVENT_VIEWS)


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(4)


def _ranks_session(
    connection: duckdb.DuckDBPyConnection,
    source: Path,
    rank_files: list[Path],
    cluster: ClusterOptions,
    dataset: Path | None,
    format: str | None,
    on_progress: Callable[[int, int], None] | None,
) -> SqlSession:
    """Rank traces converted (in parallel) into `dataset` or a temporary folder, then viewed."""
    cleanup = contextlib.ExitStack()
    try:
        if dataset is None:
            dataset = Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
        done = 0

        def progress(_outcome: object) -> None:
            nonlocal done
            done += 1
            if on_progress is not None:
                on_progress(done, len(rank_files))

        with open_runner(cluster, len(rank_files)) as runner:
            converted = convert_ranks(rank_files, dataset, runner, format, on_done=progress)
        if not converted.parts:
            errors = "; ".join(failure.error for failure in converted.failures)
            raise UsageError(f"{source}: no rank file could be converted: {errors}")
        description = f"{len(rank_files)} rank traces in {source} ({runner.description})"
        return _dataset_session(connection, converted, description, cleanup)
    except BaseException:
        cleanup.close()
        raise


def _dataset_session(
    connection: duckdb.DuckDBPyConnection,
    dataset: RankDataset,
    description: str,
    cleanup: contextlib.ExitStack | None = None,
) -> SqlSession:
    files = [(_inside(dataset.root, part.partition), part.rank) for part in dataset.parts]
    readable = _parquet_views(connection, files)
    return SqlSession(
        connection, description, EVENT_VIEWS, dataset.failures, cleanup, len(dataset.parts),
        readable=readable,
    )  # fmt: skip


def _inside(root: Path, relative: str) -> Path:
    """`root / relative`, a regular file reached through real folders inside the dataset:
    a partition that is (or sits under) a symbolic link may lead anywhere on the system."""
    path = root / relative
    step = root
    for part in Path(relative).parts:
        step = step / part
        if step.is_symlink():
            raise TraceFormatError(
                step, f"a symbolic link inside rank dataset {root}: partitions must be real "
                "files and folders inside the dataset"
            )  # fmt: skip
    if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
        raise TraceFormatError(path, f"not a regular file inside rank dataset {root}")
    return path

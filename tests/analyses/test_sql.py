"""`irprof sql` and `irprof.open_dataset`: DuckDB views over traces, Parquet, rank datasets and
run bundles, checked against numbers computed from the Trace and the opprofile directly; the
README's queries each run on a real fixture."""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import irprof
from irprof.analyses.rank_cluster import ClusterOptions, SerialRunner
from irprof.analyses.rank_dataset import convert_ranks
from irprof.analyses.sql_views import open_sql
from irprof.cli.main import main
from irprof.opprofile import OpProfile
from irprof.readers import read_trace
from irprof.trace.model import EventKind

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "tests" / "fixtures" / "traces" / "public"
PAIR = [PUBLIC / f"trace_filter__sampled_rank-{rank}.json.gz" for rank in (0, 1)]
WITH_FLOWS = PUBLIC / "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"
MLP_RUN = ROOT / "tests" / "fixtures" / "jax" / "mlp_run"


@pytest.fixture(scope="module", name="dataset")
def fixture_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two ranks of a real NCCL pair as a rank dataset (converted in this process)."""
    root = tmp_path_factory.mktemp("dataset") / "ranks"
    done = convert_ranks(PAIR, root, SerialRunner())
    assert [part.rank for part in done.parts] == [0, 1] and done.failures == ()
    return root


@pytest.fixture(scope="module", name="annotated_run")
def fixture_annotated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JAX MLP bundle, annotated (its opprofile has estimated group shares)."""
    target = tmp_path_factory.mktemp("bundle") / "run"
    shutil.copytree(MLP_RUN, target)
    irprof.annotate(target)
    return target


def run_csv(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, str]]:
    assert main(["sql", *argv, "--csv"]) == 0, capsys.readouterr().err
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_top_kernels_of_a_trace_match_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a real Kineto trace, WHEN the top kernels are asked for in SQL
    query = (
        "SELECT name, count(*) AS n, sum(dur_ns) AS total FROM events "
        "WHERE kind = 'kernel' GROUP BY name ORDER BY total DESC LIMIT 3"
    )
    rows = run_csv(capsys, str(PAIR[1]), query)
    # THEN they are the trace's own totals
    trace = read_trace(PAIR[1])
    kernels = trace.rows_of_kind(EventKind.KERNEL)
    totals: dict[str, int] = {}
    for row in kernels.tolist():
        totals[trace.name_of(row)] = totals.get(trace.name_of(row), 0) + int(trace.dur_ns[row])
    expected = sorted(totals.items(), key=lambda item: -item[1])[:3]
    assert [(row["name"], int(row["total"])) for row in rows] == expected


def test_json_parquet_and_dataset_sources_give_the_same_answers(
    tmp_path: Path, dataset: Path
) -> None:
    # GIVEN one trace as JSON, as a streamed Parquet file and as rank 1 of a dataset
    parquet = tmp_path / "rank1.parquet"
    assert main(["trace", "convert", str(PAIR[1]), "-o", str(parquet)]) == 0
    query = (
        "SELECT process, thread, kind, count(*), sum(dur_ns), min(ts_ns), max(row) "
        "FROM events WHERE rank = 1 GROUP BY ALL ORDER BY ALL"
    )
    answers = []
    for source in (PAIR[1], parquet, dataset):
        with open_sql(source) as session:
            answers.append(session.query(query).rows)
    # THEN every source answers alike, with tracks resolved to their names
    assert answers[0] == answers[1] == answers[2] and len(answers[0]) > 5
    assert any(row[0].startswith("pyper:trainer") for row in answers[0])


def test_flows_join_events_by_row(tmp_path: Path) -> None:
    trace = read_trace(WITH_FLOWS)
    with open_sql(WITH_FLOWS) as session:
        rows = session.query(
            "SELECT src.name, dst.name, f.flow_id FROM flows f "
            "JOIN events src ON src.row = f.src JOIN events dst ON dst.row = f.dst ORDER BY ALL"
        ).rows
    links = zip(trace.flows.src, trace.flows.dst, trace.flows.flow_id, strict=True)
    expected = sorted(
        (trace.name_of(int(src)), trace.name_of(int(dst)), int(flow_id))
        for src, dst, flow_id in links
    )
    assert rows == expected and len(rows) == len(trace.flows) > 100


def test_bundle_ops_and_opprofile_views(
    annotated_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an annotated run bundle
    profile = OpProfile.load(annotated_run / "opprofile.stablehlo.json")
    rows = run_csv(capsys, str(annotated_run), "SELECT * FROM opprofile ORDER BY total_ns DESC")
    # THEN opprofile holds every entry with its key and group/share fields
    assert len(rows) == len(profile.entries)
    hottest = max(profile.entries, key=lambda entry: entry.data.total_ns)
    first = rows[0]
    assert first["op"] == hottest.op_name and int(first["total_ns"]) == hottest.data.total_ns
    assert first["key_name"] == (hottest.key.name or "")
    shared = [entry for entry in profile.entries if entry.data.estimated]
    assert shared, "the MLP fixture has XLA fusions whose time is shared"
    query = 'SELECT "group", group_size, share_basis FROM ops WHERE estimated ORDER BY ALL'
    estimated = run_csv(capsys, str(annotated_run), query)
    assert len(estimated) == len(shared)
    assert {row["group"] for row in estimated} == {entry.data.group for entry in shared}
    assert all(int(row["group_size"]) > 1 and row["share_basis"] for row in estimated)
    # AND the bundle's trace is the events view
    events = run_csv(capsys, str(annotated_run), "SELECT count(*) AS n FROM events")
    assert int(events[0]["n"]) == len(irprof.open_run(annotated_run).trace())


def test_outputs_are_whole_files_and_errors_leave_none(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = "SELECT rank, kind, count(*) AS n FROM events GROUP BY ALL ORDER BY ALL"
    for name in ("out.parquet", "out.csv"):
        assert main(["sql", str(dataset), query, "-o", str(tmp_path / name)]) == 0
    table = pq.read_table(tmp_path / "out.parquet")
    with (tmp_path / "out.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert table.num_rows == len(rows) > 10 and table.column_names == ["rank", "kind", "n"]
    # A table on the terminal: the first rows, and how many there were
    assert main(["sql", str(dataset), query, "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "first 3 rows" in out and "annotation" in out and "framework_op" not in out
    # A bad query names the views; no file is written
    assert main(["sql", str(dataset), "SELECT * FROM ops", "-o", str(tmp_path / "bad.csv")]) == 2
    assert "views here: events, tracks, flows" in capsys.readouterr().err
    assert main(["sql", str(dataset), "SELEC 1", "-o", str(tmp_path / "bad.parquet")]) == 2
    assert "syntax error" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.csv", "out.parquet"]


def test_open_dataset_returns_a_duckdb_relation(dataset: Path, tmp_path: Path) -> None:
    relation = irprof.open_dataset(dataset)
    counts = dict(relation.aggregate("rank, count(*)", "rank").fetchall())
    assert counts == {0: len(read_trace(PAIR[0])), 1: len(read_trace(PAIR[1]))}
    steps = relation.filter("kind = 'step'").aggregate("rank, avg(dur_ns)", "rank").fetchall()
    assert len(steps) == 2
    # A directory of raw rank traces needs a folder to convert into
    raw = tmp_path / "raw"
    raw.mkdir()
    for path in PAIR:
        shutil.copy(path, raw / path.name)
    with pytest.raises(irprof.UsageError, match="pass dataset=FOLDER"):
        irprof.open_dataset(raw)
    converted = irprof.open_dataset(raw, dataset=tmp_path / "converted", workers=0)
    assert dict(converted.aggregate("rank, count(*)", "rank").fetchall()) == counts


def documented_queries() -> list[str]:
    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    section = text[text.index("<!-- sql -->") : text.index("<!-- /sql -->")]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


@pytest.mark.parametrize("query", documented_queries(), ids=lambda query: query.split(".")[0][3:])
def test_documented_queries_run_on_real_fixtures(
    query: str, dataset: Path, annotated_run: Path
) -> None:
    # GIVEN each documented query, on the source it is meant for (a bundle for ops, a trace
    # with flows for flows, else the two-rank dataset), THEN it runs and finds rows
    source = (
        annotated_run
        if re.search(r"\bFROM (ops|opprofile)\b", query)
        else WITH_FLOWS
        if re.search(r"\bFROM flows\b", query)
        else dataset
    )
    with open_sql(source, cluster=ClusterOptions(workers=0)) as session:
        result = session.query(query)
    assert result.rows, f"no rows: {query}"
    assert all(value is not None for value in result.rows[0][:2])


def test_docs_document_ten_queries() -> None:
    queries = documented_queries()
    assert len(queries) >= 10
    assert [int(query.split(".")[0].removeprefix("-- ")) for query in queries] == list(
        range(1, len(queries) + 1)
    )
    assert np.all([query.startswith("-- ") for query in queries])

"""`analyses/rank_dataset.py` on tiny rank files, in this process: what a conversion writes
(partitions by rank, `dataset.json`, the failures and a rank given twice), partitions of an
earlier conversion removed, the dataset folder's checks and `open_rank_dataset`'s, one-file
conversions streamed or not, and per-rank summaries with their failures."""

from __future__ import annotations

import gzip
import json
import os
import resource
import socket
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from irprof.analyses import rank_dataset
from irprof.analyses.rank_cluster import SerialRunner
from irprof.analyses.rank_dataset import (
    DATASET_FILE,
    RankDataset,
    RankFailure,
    RankPart,
    _failure,
    _is_chrome,
    convert_ranks,
    convert_trace_file,
    dataset_rank_table,
    is_rank_dataset,
    open_rank_dataset,
)
from irprof.errors import IrprofError, UsageError
from irprof.progress import listen
from irprof.trace.io import load_events_json, load_parquet


def rank_file(path: Path, kernels: int, rank: int | None = None) -> Path:
    """A Chrome trace of `kernels` 5 us kernels 10 us apart (and `distributedInfo.rank`)."""
    fields = {"distributedInfo": {"rank": rank}} if rank is not None else {}
    events = [
        {"ph": "X", "name": f"k{i}", "cat": "kernel", "pid": 1, "tid": 7, "ts": i * 10, "dur": 5}
        for i in range(kernels)
    ]
    path.write_text(json.dumps({"traceEvents": events, **fields}))
    return path


def bad_file(path: Path) -> Path:
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "ts": "x"}]}))
    return path


def test_ranks_go_to_their_partitions_with_the_failures_listed(tmp_path: Path) -> None:
    three = rank_file(tmp_path / "host_3.json", 2)  # rank from the file name
    zero = rank_file(tmp_path / "x.json", 3, rank=0)  # rank from distributedInfo
    again = rank_file(tmp_path / "other_0.json", 1)  # rank 0 again
    bad = bad_file(tmp_path / "bad_9.json")
    root = tmp_path / "out"
    done: list[object] = []
    dataset = convert_ranks([three, zero, again, bad], root, SerialRunner(), on_done=done.append)
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert len(done) == 4
    assert [(p.rank, p.source, p.partition, p.events, p.flows) for p in dataset.parts] == [
        (0, str(zero), "rank=0/events.parquet", 3, 0),
        (3, str(three), "rank=3/events.parquet", 2, 0),
    ]
    assert dataset.partition_paths() == [
        root / "rank=0/events.parquet",
        root / "rank=3/events.parquet",
    ]
    assert [f.source for f in dataset.failures] == [str(again), str(bad)]
    assert dataset.failures[0].error == f"rank 0 is also the rank of {zero}"
    assert "traceEvents[0] field 'ts'" in dataset.failures[1].error
    for part in dataset.parts:
        assert part.worker == f"{socket.gethostname()}:{os.getpid()}"
        # The converting thread's CPU time: no more than the wall time it took.
        assert 0 < part.cpu_seconds <= part.seconds + 0.01
        # This process's peak RSS in MB (getrusage counts kB), as it was by then.
        assert 10 < part.peak_rss_mb <= peak_after
        assert part.warnings == ()
    assert [len(load_parquet(path)) for path in dataset.partition_paths()] == [3, 2]
    # The folder holds the partitions and the list, nothing staged.
    assert sorted(p.name for p in root.iterdir()) == [DATASET_FILE, "rank=0", "rank=3"]
    assert is_rank_dataset(root) and not is_rank_dataset(tmp_path)
    document = json.loads((root / DATASET_FILE).read_text())
    assert document["format"] == "irprof.rank-dataset" and document["version"] == 1
    assert [r["rank"] for r in document["ranks"]] == [0, 3]
    assert document["failures"] == [
        {"source": f.source, "error": f.error} for f in dataset.failures
    ]
    assert (root / DATASET_FILE).read_text().startswith('{\n  "format"')  # indented
    assert open_rank_dataset(root) == dataset


def test_a_new_conversion_removes_the_earlier_partitions_it_did_not_write(tmp_path: Path) -> None:
    root = tmp_path / "out"
    files = [rank_file(tmp_path / f"r_{rank}.json", 1) for rank in (0, 1, 2)]
    convert_ranks(files, root, SerialRunner())
    (root / "rank=2" / "notes.txt").write_text("mine")
    dataset = convert_ranks(files[1:2], root, SerialRunner())
    assert [part.rank for part in dataset.parts] == [1]
    assert not (root / "rank=0").exists()  # its only file gone: the folder too
    assert sorted(p.name for p in (root / "rank=2").iterdir()) == ["notes.txt"]
    assert (root / "rank=1" / "events.parquet").is_file()
    assert open_rank_dataset(root).parts == dataset.parts


def test_a_dataset_folder_must_be_a_folder_of_real_partitions(tmp_path: Path) -> None:
    source = [rank_file(tmp_path / "r_0.json", 1)]
    runner = SerialRunner()
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        convert_ranks(source, afile, runner)
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    with pytest.raises(UsageError, match=r"not empty and not an irprof rank dataset \(no dataset"):
        convert_ranks(source, other, runner)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [p.rank for p in convert_ranks(source, empty, runner).parts] == [0]
    # Inside a dataset: a rank=* that is a link or a file, a partition that is a link.
    root = tmp_path / "out"
    convert_ranks(source, root, runner)
    (root / "rank=5").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="this is a symbolic link"):
        convert_ranks(source, root, runner)
    (root / "rank=5").unlink()
    (root / "rank=6").write_text("x")
    with pytest.raises(UsageError, match="this is not a folder"):
        convert_ranks(source, root, runner)
    (root / "rank=6").unlink()
    (root / "rank=7").mkdir()
    (root / "rank=7" / "events.parquet").symlink_to(afile)
    with pytest.raises(UsageError, match="a partition file must be a regular file"):
        convert_ranks(source, root, runner)
    assert afile.read_text() == "x"  # never written or removed through the link
    (root / "rank=7" / "events.parquet").unlink()
    (root / "notes_rank=1").mkdir()  # not partitions: their names do not start with rank=
    (root / "ranking.txt").write_text("x")
    assert [p.rank for p in convert_ranks(source, root, runner).parts] == [0]
    assert (root / "notes_rank=1").is_dir() and (root / "rank=7").is_dir()
    assert (root / "ranking.txt").read_text() == "x"


def manifest(root: Path, **changes: Any) -> None:
    document = json.loads((root / DATASET_FILE).read_text())
    for key, value in changes.items():
        if key == "partition":
            document["ranks"][0]["partition"] = value
        else:
            document[key] = value
    (root / DATASET_FILE).write_text(json.dumps(document))


def test_open_refuses_what_is_not_a_whole_dataset(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not an irprof rank dataset \(no dataset\.json\)"):
        open_rank_dataset(tmp_path)
    root = tmp_path / "out"
    convert_ranks([rank_file(tmp_path / "r_0.json", 1)], root, SerialRunner())
    good = (root / DATASET_FILE).read_text()
    (root / DATASET_FILE).write_text("{")
    with pytest.raises(UsageError, match="malformed rank dataset manifest"):
        open_rank_dataset(root)
    (root / DATASET_FILE).write_text(good)
    manifest(root, version=2)
    with pytest.raises(
        UsageError,
        match=r"expected irprof\.rank-dataset version 1, found irprof\.rank-dataset version 2",
    ):
        open_rank_dataset(root)
    manifest(root, version=1, format="other")
    with pytest.raises(
        UsageError, match=r"expected irprof\.rank-dataset version 1, found other version 1"
    ):
        open_rank_dataset(root)
    manifest(root, format="irprof.rank-dataset", partition="../r_0.json")
    with pytest.raises(UsageError, match=r"partition '\.\./r_0\.json' is outside the dataset"):
        open_rank_dataset(root)
    manifest(root, partition=str(root / "rank=0" / "events.parquet"))
    with pytest.raises(UsageError, match="is outside the dataset"):
        open_rank_dataset(root)
    manifest(root, partition="rank=9/events.parquet")
    with pytest.raises(UsageError, match=r"partition listed in .* is missing; convert again"):
        open_rank_dataset(root)
    manifest(root, partition="rank=0/events.parquet")
    assert [p.rank for p in open_rank_dataset(root).parts] == [0]


def test_one_file_is_streamed_to_parquet_unless_asked_or_not_chrome(tmp_path: Path) -> None:
    source = rank_file(tmp_path / "one.json", 4)
    streamed = convert_trace_file(source, tmp_path / "a.parquet")
    whole = convert_trace_file(source, tmp_path / "b.parquet", in_memory=True)
    events_json = convert_trace_file(source, tmp_path / "c.json")
    named = convert_trace_file(source, tmp_path / "d.parquet", "chrome")
    assert [c.streamed for c in (streamed, whole, events_json, named)] == [True, False, False, True]
    for converted in (streamed, whole, events_json):
        assert (converted.events, converted.tracks, converted.flows) == (4, 1, 0)
        assert converted.source == str(source) and converted.metadata["format"] == "chrome"
    assert streamed.output == str(tmp_path / "a.parquet")
    assert len(load_parquet(tmp_path / "a.parquet")) == len(load_parquet(tmp_path / "b.parquet"))
    assert len(load_events_json(tmp_path / "c.json")) == 4


def test_chrome_is_told_by_its_first_bytes_even_compressed(tmp_path: Path) -> None:
    plain = rank_file(tmp_path / "t.bin", 1)
    packed = tmp_path / "t.gz.bin"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert _is_chrome(plain, None) and _is_chrome(packed, None)
    assert not _is_chrome(plain, "xplane") and _is_chrome(packed, "chrome")
    blank = tmp_path / "blank"
    blank.write_bytes(b"  \n")
    assert not _is_chrome(blank, None)
    cut = tmp_path / "cut"
    cut.write_bytes(b"\x1f\x8b" + b"\0" * 4)  # gzip magic, then no valid stream
    assert not _is_chrome(cut, None)


def test_a_task_s_exception_is_its_file_s_failure() -> None:
    assert _failure("a.json", ValueError("boom")) == RankFailure("a.json", "ValueError: boom")
    failure = RankFailure("b.json", "bad")
    assert _failure("b.json", failure) is failure
    part = RankPart(0, "c.json", "rank=0/events.parquet", 1, 0)
    assert _failure("c.json", part) is None


def test_rank_summaries_with_unreadable_partitions(tmp_path: Path) -> None:
    files = [rank_file(tmp_path / "r_0.json", 2), rank_file(tmp_path / "r_1.json", 4)]
    bad = bad_file(tmp_path / "r_2.json")
    root = tmp_path / "out"
    dataset = convert_ranks([*files, bad], root, SerialRunner())
    table, failures = dataset_rank_table(dataset, SerialRunner(), 1.5)
    # Kernels of 5 us every 10 us: the window is (n - 1) * 10 + 5 us, the compute n * 5 us.
    assert [(r.rank, r.step_ns, r.compute_ns) for r in table.ranks] == [
        (0, 15_000, 10_000),
        (1, 35_000, 20_000),
    ]
    assert table.threshold == 1.5 and failures == ()
    (root / "rank=1" / "events.parquet").write_bytes(b"not parquet")
    table, failures = dataset_rank_table(dataset, SerialRunner(), 1.5)
    assert [r.rank for r in table.ranks] == [0]
    assert [f.source for f in failures] == [str(files[1])]
    assert "not a readable Parquet file" in failures[0].error
    (root / "rank=0" / "events.parquet").write_bytes(b"")
    with pytest.raises(IrprofError) as raised:
        dataset_rank_table(dataset, SerialRunner(), 1.5)
    message = str(raised.value)
    assert message.startswith(f"{root}: no rank could be summarized\n  {bad}: ")
    lines = message.splitlines()
    assert [line.split(": ", 1)[0].strip() for line in lines[1:]] == [
        str(bad),
        str(files[0]),
        str(files[1]),
    ]
    assert RankDataset(root, ()).partition_paths() == []


def test_the_named_format_is_used_for_every_file(tmp_path: Path) -> None:
    """`format` reaches every rank's conversion: Chrome JSON named as XPlane is not read."""
    source = rank_file(tmp_path / "r_0.json", 2)
    named = convert_ranks([source], tmp_path / "chrome", SerialRunner(), "chrome")
    assert [part.rank for part in named.parts] == [0] and named.failures == ()
    wrong = convert_ranks([source], tmp_path / "xplane", SerialRunner(), "xplane")
    assert wrong.parts == () and [f.source for f in wrong.failures] == [str(source)]
    for output, in_memory in (("a.parquet", False), ("b.parquet", True), ("c.json", False)):
        with pytest.raises(IrprofError):
            convert_trace_file(source, tmp_path / output, "xplane", in_memory=in_memory)


def test_a_file_without_a_rank_takes_the_default_rank(tmp_path: Path) -> None:
    source = rank_file(tmp_path / "host.json", 1)  # no number in the name, no distributedInfo
    dataset = convert_ranks([source], tmp_path / "a", SerialRunner(), default_rank=4)
    assert [(part.rank, part.partition) for part in dataset.parts] == [(4, "rank=4/events.parquet")]
    refused = convert_ranks([source], tmp_path / "b", SerialRunner())
    assert refused.parts == () and "no rank" in refused.failures[0].error


def test_os_errors_memory_errors_and_bugs_are_failures_of_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError or MemoryError in a conversion comes back as data; any other exception
    escapes the task and the runner hands it back: all three are their file's failure."""
    sources = [rank_file(tmp_path / f"r_{rank}.json", 1) for rank in (0, 1, 2, 3)]
    raised: dict[str, BaseException] = {
        str(sources[0]): OSError("disk full"),
        str(sources[1]): MemoryError(),
        str(sources[2]): RuntimeError("a bug"),
    }

    def convert(source: Path, output: Path, format: str | None = None) -> Any:
        if str(source) in raised:
            raise raised[str(source)]
        return original(source, output, format)

    original = rank_dataset.convert_trace_file
    monkeypatch.setattr(rank_dataset, "convert_trace_file", convert)
    dataset = convert_ranks(sources, tmp_path / "out", SerialRunner())
    assert [part.rank for part in dataset.parts] == [3]
    assert dataset.failures == (
        RankFailure(str(sources[0]), "OSError: disk full"),
        RankFailure(str(sources[1]), "MemoryError: "),
        RankFailure(str(sources[2]), "RuntimeError: a bug"),
    )


def test_a_rank_keeps_its_warnings_and_its_conversion_time(tmp_path: Path) -> None:
    source = tmp_path / "r_0.json"
    event = {"ph": "X", "name": "k", "cat": "kernel", "pid": 1, "tid": 7, "ts": 0, "dur": -5}
    source.write_text(json.dumps({"traceEvents": [event]}))
    start = time.perf_counter()
    dataset = convert_ranks([source], tmp_path / "out", SerialRunner())
    took = time.perf_counter() - start
    (part,) = dataset.parts
    assert part.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)
    assert 0 < part.seconds <= took
    assert open_rank_dataset(tmp_path / "out").parts[0].warnings == part.warnings


def test_cpu_time_is_user_plus_system_and_peak_rss_is_in_mb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    usage = SimpleNamespace(ru_utime=1.5, ru_stime=0.25, ru_maxrss=3072)  # maxrss in kB
    monkeypatch.setattr(resource, "getrusage", lambda who: usage)
    assert rank_dataset._thread_cpu_seconds() == 1.75
    assert rank_dataset._peak_rss_mb() == 3.0


def test_refusals_of_a_dataset_folder_in_full_and_before_converting(tmp_path: Path) -> None:
    source = [rank_file(tmp_path / "r_0.json", 1)]
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("x")
    with pytest.raises(UsageError) as not_dataset:
        convert_ranks(source, other, SerialRunner())
    assert str(not_dataset.value) == (
        f"{other}: not empty and not an irprof rank dataset (no dataset.json); "
        "choose an empty or new folder"
    )
    root = tmp_path / "out"
    convert_ranks([rank_file(tmp_path / "r_1.json", 1)], root, SerialRunner())
    (root / "rank=5").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="this is a symbolic link"):
        convert_ranks(source, root, SerialRunner())
    assert not (root / "rank=0").exists()  # refused before any rank was converted
    (root / "rank=5").unlink()
    (root / "rank=7").mkdir()
    (root / "rank=7" / "events.parquet").symlink_to(other / "x")
    with pytest.raises(UsageError) as linked:
        convert_ranks(source, root, SerialRunner())
    assert str(linked.value) == (
        f"{root / 'rank=7' / 'events.parquet'}: a partition file must be a regular file, not a "
        "link or a special file; remove it or convert into a new folder"
    )


def test_rank_summaries_name_their_files_report_progress_and_keep_bugs_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [rank_file(tmp_path / f"r_{rank}.json", 2) for rank in (0, 1, 2)]
    dataset = convert_ranks(files, tmp_path / "out", SerialRunner())
    done: list[object] = []
    table, failures = dataset_rank_table(dataset, SerialRunner(), 1.5, done.append)
    assert [(r.rank, r.source) for r in table.ranks] == [(k, str(files[k])) for k in range(3)]
    assert len(done) == 3 and failures == ()

    def load(path: Any, **kwargs: Any) -> Any:
        if "rank=1" in str(path):
            raise RuntimeError("a bug")
        return original(path, **kwargs)

    original = load_parquet
    monkeypatch.setattr(rank_dataset, "load_parquet", load)
    table, failures = dataset_rank_table(dataset, SerialRunner(), 1.5)
    assert [r.rank for r in table.ranks] == [0, 2]
    assert failures == (RankFailure(str(files[1]), "RuntimeError: a bug"),)


def test_the_reasons_no_rank_could_be_summarized_are_one_per_line(tmp_path: Path) -> None:
    files = [rank_file(tmp_path / f"r_{rank}.json", 1) for rank in (0, 1)]
    bad = bad_file(tmp_path / "r_2.json")
    root = tmp_path / "out"
    dataset = convert_ranks([*files, bad], root, SerialRunner())
    for rank in (0, 1):
        (root / f"rank={rank}" / "events.parquet").write_bytes(b"")
    with pytest.raises(IrprofError) as raised:
        dataset_rank_table(dataset, SerialRunner(), 1.5)
    lines = str(raised.value).split("\n")
    assert lines[0] == f"{root}: no rank could be summarized"
    assert lines[1] == f"  {bad}: {dataset.failures[0].error}"
    assert [line.split(": ", 1)[0] for line in lines[2:]] == [f"  {f}" for f in files]


def test_one_file_read_whole_keeps_its_output_warnings_and_progress(tmp_path: Path) -> None:
    source = rank_file(tmp_path / "one.json", 2)
    seen: list[str] = []
    with listen(seen.append):
        streamed = convert_trace_file(source, tmp_path / "a.parquet")
        whole = convert_trace_file(source, tmp_path / "b.parquet", in_memory=True)
    assert "streaming one.json to a.parquet" in seen and "writing b.parquet" in seen
    assert streamed.streamed and not whole.streamed
    assert (whole.output, whole.warnings) == (str(tmp_path / "b.parquet"), ())
    negative = tmp_path / "neg.json"
    event = {"ph": "X", "name": "k", "cat": "kernel", "pid": 1, "tid": 7, "ts": 0, "dur": -5}
    negative.write_text(json.dumps({"traceEvents": [event]}))
    read = convert_trace_file(negative, tmp_path / "c.json")
    assert read.warnings == ("1 event(s) with a negative 'dur' read as 0 ns",)


def test_a_file_of_no_known_format_is_named_in_the_error(tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_text("hello, not a trace")
    with pytest.raises(IrprofError) as raised:
        convert_trace_file(source, tmp_path / "a.parquet")
    assert str(raised.value).startswith(f"{source}: unknown trace format")

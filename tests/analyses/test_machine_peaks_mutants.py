"""`analyses/machine_peaks.py` with its clock, thread pool and measurements replaced: the GEMM
sizes and the streamed slices, the rates computed from fixed times, the method text, the cache
read back field by field, the fingerprint and its parts, the caption, the refusals in full."""

from __future__ import annotations

import os
import platform
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import orjson
import pytest

from irprof.analyses import machine_peaks
from irprof.analyses.machine_peaks import (
    MachinePeaks,
    PeakSettings,
    given_peaks,
    load_or_measure_peaks,
    machine_fingerprint,
    measure_peaks,
    resolve_peaks,
    usable_cpus,
)
from irprof.errors import UsageError


class Clock:
    """`perf_counter` of a fake `time` module: the given readings, else one second per call."""

    def __init__(self, readings: Iterable[float] = ()) -> None:
        self.readings: Iterator[float] = iter(readings)
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now = next(self.readings, self.now + 1.0)
        return self.now


def test_best_is_the_fastest_of_at_least_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[int] = []
    monkeypatch.setattr(machine_peaks, "time", Clock([0, 3, 10, 11, 20, 22]))
    assert machine_peaks._best(lambda: runs.append(1), 3) == 1.0
    assert len(runs) == 3
    for repeats in (1, 0):
        runs.clear()
        monkeypatch.setattr(machine_peaks, "time", Clock([5, 7]))
        assert machine_peaks._best(lambda: runs.append(1), repeats) == 2.0
        assert len(runs) == 1


def _gemm(monkeypatch: pytest.MonkeyPatch, settings: PeakSettings) -> tuple[float, int, list[Any]]:
    """`_gemm_gflops` with every timed product taking one second; the matrices it multiplied."""
    matrices: list[Any] = []

    def spy(function: Callable[..., Any], left: Any, right: Any) -> Callable[[], Any]:
        matrices.append((left.shape, left.dtype, right.shape, right.dtype))
        assert left.shape[0] <= 1024, "past every cap of these tests: doubling without end"
        return lambda: function(left, right)

    monkeypatch.setattr(machine_peaks, "time", Clock())
    monkeypatch.setattr(machine_peaks, "partial", spy)
    gflops, size = machine_peaks._gemm_gflops(settings)
    return gflops, size, matrices


def test_gemm_matrices_double_from_256_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    f32 = np.dtype(np.float32)
    # One second is below 2.5 s: 256, then 512 (512 <= the cap); 1024 would pass the cap.
    gflops, size, matrices = _gemm(monkeypatch, PeakSettings(gemm_max_n=512, gemm_seconds=2.5))
    assert size == 512
    assert matrices == [((n, n), f32, (n, n), f32) for n in (256, 512)]
    assert gflops == 2.0 * 512**3 / 1.0 / 1e9
    # A product of exactly `gemm_seconds` is long enough; so is one above it.
    for enough in (1.0, 0.5):
        gflops, size, matrices = _gemm(
            monkeypatch, PeakSettings(gemm_max_n=512, gemm_seconds=enough)
        )
        assert (size, len(matrices)) == (256, 1)
        assert gflops == 2.0 * 256**3 / 1e9
    # Below the cap of 1000 after 256 and 512: 1024 would pass it.
    _, size, _ = _gemm(monkeypatch, PeakSettings(gemm_max_n=1000, gemm_seconds=10.0))
    assert size == 512


class Pool:
    """A `ThreadPoolExecutor` that runs the parts in order and keeps what it was given."""

    made: ClassVar[list[Pool]] = []

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self.parts: list[slice] = []
        self.results: list[Any] = []
        Pool.made.append(self)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, function: Callable[[slice], Any], parts: list[slice]) -> Iterator[Any]:
        self.parts = list(parts)
        self.results = [function(part) for part in parts]
        return iter(self.results)


def test_stream_adds_float32_arrays_in_one_slice_per_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    Pool.made.clear()
    monkeypatch.setattr(machine_peaks, "time", Clock())
    monkeypatch.setattr(machine_peaks, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(machine_peaks, "usable_cpus", lambda: 3)
    gbps, workers = machine_peaks._stream_gbps(PeakSettings(stream_bytes=4 * 3000, repeats=2))
    assert workers == 3
    assert gbps == 3.0 * 3000 * 4 / 1.0 / 1e9  # three arrays of 3000 float32, one second
    (pool,) = Pool.made
    assert pool.max_workers == 3
    assert [(part.start, part.stop) for part in pool.parts] == [
        (0, 1000),
        (1000, 2000),
        (2000, 3000),
    ]
    for result in pool.results:
        assert result.dtype == np.float32 and len(result) == 1000 and (result == 2.0).all()
    # Never fewer than 1024 floats per array.
    gbps, _ = machine_peaks._stream_gbps(PeakSettings(stream_bytes=100, repeats=1))
    assert gbps == 3.0 * 1024 * 4 / 1e9
    assert Pool.made[-1].parts[-1].stop == 1024


def test_measured_peaks_are_rounded_and_say_how(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_peaks, "_gemm_gflops", lambda settings: (123.4567, 512))
    monkeypatch.setattr(machine_peaks, "_stream_gbps", lambda settings: (45.6789, 3))
    before = datetime.now(UTC).replace(microsecond=0)
    peaks = measure_peaks(PeakSettings(stream_bytes=3 << 20, repeats=4))
    after = datetime.now(UTC)
    assert (peaks.gflops, peaks.gbps, peaks.source) == (123.46, 45.68, "measured")
    assert peaks.method == (
        "numpy float32 GEMM 512x512, best of 4; numpy add of 3 MiB arrays on 3 threads "
        "(3 bytes moved per array byte), best of 4"
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", peaks.measured_at)
    stamp = datetime.strptime(peaks.measured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= stamp <= after
    assert peaks.machine == machine_fingerprint()
    sized = measure_peaks(PeakSettings(stream_bytes=12 << 20, repeats=1))
    assert "numpy add of 12 MiB arrays" in sized.method
    # Whole float32 values: 2.5 MiB and 2 bytes hold 2.5 MiB of floats, 2 at ".0f" (half to even).
    odd = measure_peaks(PeakSettings(stream_bytes=(5 << 19) + 2, repeats=1))
    assert "numpy add of 2 MiB arrays" in odd.method


def test_the_measurement_time_is_utc_whatever_the_local_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(machine_peaks, "_gemm_gflops", lambda settings: (1.0, 256))
    monkeypatch.setattr(machine_peaks, "_stream_gbps", lambda settings: (1.0, 1))
    monkeypatch.setenv("TZ", "Etc/GMT-9")  # nine hours east of UTC
    time.tzset()
    try:
        peaks = measure_peaks(PeakSettings())
    finally:
        monkeypatch.undo()
        time.tzset()
    stamp = datetime.strptime(peaks.measured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 600


MEASURED = MachinePeaks(
    gflops=7.0,
    gbps=2.0,
    source="measured",
    measured_at="2026-01-02T03:04:05Z",
    method="by hand",
    machine={"cpu": "Test CPU"},
)


def _no_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        machine_peaks,
        "measure_peaks",
        lambda settings=None: replace(MEASURED, machine=machine_fingerprint()),
    )


def _cache(path: Path, **fields: Any) -> Path:
    document: dict[str, Any] = {
        "version": 1,
        "gflops": 0.5,
        "gbps": 0.25,
        "measured_at": "2025-05-05T05:05:05Z",
        "method": "earlier",
        "machine": machine_fingerprint(),
    }
    document.update(fields)
    path.write_bytes(orjson.dumps({k: v for k, v in document.items() if v is not None}))
    return path


def test_the_cache_is_read_back_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_measuring(monkeypatch)
    cache = _cache(tmp_path / "peaks.json")
    read = load_or_measure_peaks(cache)
    assert read == MachinePeaks(
        gflops=0.5,
        gbps=0.25,
        source=f"cache {cache}",
        measured_at="2025-05-05T05:05:05Z",
        method="earlier",
        machine=machine_fingerprint(),
    )
    bare = load_or_measure_peaks(_cache(tmp_path / "bare.json", measured_at=None, method=None))
    assert (bare.measured_at, bare.method, bare.gflops) == ("", "", 0.5)
    # A zero rate is not a peak: measured again.
    for zero in ({"gflops": 0}, {"gbps": 0}, {"gflops": 0, "gbps": 0}):
        again = load_or_measure_peaks(_cache(tmp_path / "zero.json", **zero))
        assert (again.source, again.gflops) == ("measured", 7.0)


def test_a_measurement_is_cached_in_new_folders_as_indented_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_measuring(monkeypatch)
    cache = tmp_path / "a" / "b" / "peaks.json"
    peaks = load_or_measure_peaks(cache)
    assert peaks.source == "measured"
    text = cache.read_text()
    assert text.startswith('{\n  "version": 1,\n  "gflops": 7.0,')
    assert orjson.loads(text) == peaks.to_json()


def test_to_json_holds_every_field() -> None:
    assert MEASURED.to_json() == {
        "version": 1,
        "gflops": 7.0,
        "gbps": 2.0,
        "source": "measured",
        "measured_at": "2026-01-02T03:04:05Z",
        "method": "by hand",
        "machine": {"cpu": "Test CPU"},
    }


def test_the_caption_names_the_numbers_their_origin_and_the_cpu() -> None:
    assert MEASURED.describe() == (
        "peaks 7.0 GFLOP/s, 2.0 GB/s (ridge 3.5 FLOP/B; measured 2026-01-02T03:04:05Z; Test CPU)"
    )
    cached = replace(MEASURED, gflops=12345.67, source="cache /p.json", machine={})
    assert cached.describe() == (
        "peaks 12,345.7 GFLOP/s, 2.0 GB/s (ridge 6172.8 FLOP/B; cache /p.json, "
        "measured 2026-01-02T03:04:05Z)"
    )
    assert given_peaks(100.0, 10.0).describe() == (
        "peaks 100.0 GFLOP/s, 10.0 GB/s (ridge 10.0 FLOP/B; given)"
    )


def test_given_peaks_must_both_be_positive() -> None:
    assert given_peaks(0.5, 0.5).gflops == 0.5
    for gflops, gbps in ((0.0, 10.0), (10.0, 0.0), (-1.0, 1.0)):
        with pytest.raises(UsageError) as refused:
            given_peaks(gflops, gbps)
        assert str(refused.value) == (
            f"peaks must be positive numbers, got {gflops} GFLOP/s, {gbps} GB/s"
        )


def test_resolve_takes_both_numbers_or_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_measuring(monkeypatch)
    for gflops, gbps in ((1.0, None), (None, 1.0)):
        with pytest.raises(UsageError) as refused:
            resolve_peaks(tmp_path / "c.json", gflops, gbps)
        assert str(refused.value) == (
            "give both --peak-gflops and --peak-gbps, or neither (to measure)"
        )
    assert resolve_peaks(None, 3.0, 4.0) == given_peaks(3.0, 4.0)
    mine = tmp_path / "mine.json"
    assert resolve_peaks(mine, None, None).source == "measured" and mine.is_file()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    default = tmp_path / "home" / ".cache" / "irprof" / "peaks.json"
    assert machine_peaks.default_peaks_cache() == default
    assert resolve_peaks(None, None, None).source == "measured" and default.is_file()


def test_the_fingerprint_and_its_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert machine_fingerprint() == {
        "host": platform.node(),
        "cpu": machine_peaks._cpu_model(),
        "cpus": str(len(os.sched_getaffinity(0))),
        "arch": platform.machine(),
        "numpy": np.__version__,
        "blas": machine_peaks._blas(),
    }
    assert usable_cpus() == len(os.sched_getaffinity(0))
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    assert usable_cpus() == 5
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cpus() == 1


def test_the_cpu_model_is_the_first_model_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    real_path = Path
    monkeypatch.setattr(
        machine_peaks, "Path", lambda name: cpuinfo if name == "/proc/cpuinfo" else real_path(name)
    )
    cpuinfo.write_bytes(
        b"processor\t: 0\nflags\t: \xff\nmodel name\t: Some: CPU @ 2GHz \nmodel name\t: B\n"
    )
    assert machine_peaks._cpu_model() == "Some: CPU @ 2GHz"
    cpuinfo.write_text("processor\t: 0\n")
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert machine_peaks._cpu_model() == "riscv64"
    monkeypatch.setattr(platform, "processor", lambda: "arm")
    assert machine_peaks._cpu_model() == "arm"
    cpuinfo.unlink()
    assert machine_peaks._cpu_model() == "arm"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"Build Dependencies": {"blas": {"name": "openblas", "version": "0.3.27"}}},
            "openblas 0.3.27",
        ),
        ({"Build Dependencies": {"blas": {"name": "mkl"}}}, "mkl"),
        ({"Build Dependencies": {"blas": {"version": "1.0"}}}, "? 1.0"),
        ({"Build Dependencies": {}}, "?"),
        ({}, "?"),
        (None, "?"),
    ],
)
def test_blas_is_read_from_numpy_s_build_config(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, Any] | None, expected: str
) -> None:
    if config is None:
        monkeypatch.delattr(np.__config__, "CONFIG", raising=False)
    else:
        monkeypatch.setattr(np.__config__, "CONFIG", config, raising=False)
    assert machine_peaks._blas() == expected

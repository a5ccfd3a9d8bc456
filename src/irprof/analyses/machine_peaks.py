"""This machine's roofs: peak FLOP rate (a float32 GEMM) and memory bandwidth (a streaming add),
measured with numpy once and kept in a cache file the caller names.

Design notes: docs/views.md, "Module notes", `analyses/machine_peaks.py`.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from irprof.fileio import write_bytes_atomic

PEAKS_VERSION = 1


@dataclass(frozen=True)
class PeakSettings:
    """How hard to measure (tests use small sizes; the defaults take a few seconds)."""

    gemm_max_n: int = 4096
    gemm_seconds: float = 0.25
    stream_bytes: int = 64 << 20  # per array (three arrays); beyond the last-level cache
    repeats: int = 5


@dataclass(frozen=True)
class MachinePeaks:
    """Peak GFLOP/s and GB/s of a machine and where the numbers come from."""

    gflops: float
    gbps: float
    source: str  # "measured", "cache <path>" or "given"
    measured_at: str = ""  # ISO 8601 UTC ("" for given numbers)
    method: str = ""
    machine: dict[str, str] = field(default_factory=dict)

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.gflops / self.gbps

    def describe(self) -> str:
        """One line for captions: the numbers and their origin."""
        origin = self.source
        if self.measured_at:
            origin = ("" if self.source == "measured" else f"{self.source}, ") + (
                f"measured {self.measured_at}"
            )
        host = self.machine.get("cpu", "")
        return (
            f"peaks {self.gflops:,.1f} GFLOP/s, {self.gbps:,.1f} GB/s"
            f" (ridge {self.ridge:.1f} FLOP/B; {origin}{'; ' + host if host else ''})"
        )

    def to_json(self) -> dict[str, Any]:
        """The cache file's (and the report's) form."""
        return {
            "version": PEAKS_VERSION,
            "gflops": self.gflops,
            "gbps": self.gbps,
            "source": self.source,
            "measured_at": self.measured_at,
            "method": self.method,
            "machine": dict(self.machine),
        }


def given_peaks(gflops: float, gbps: float) -> MachinePeaks:
    """Peaks the user states (a data sheet, another machine's measurement)."""
    if not (gflops > 0 and gbps > 0):
        from irprof.errors import UsageError

        raise UsageError(f"peaks must be positive numbers, got {gflops} GFLOP/s, {gbps} GB/s")
    return MachinePeaks(gflops=gflops, gbps=gbps, source="given")


def default_peaks_cache() -> Path:
    """`~/.cache/irprof/peaks.json`: where the CLI keeps this machine's measured peaks."""
    return Path.home() / ".cache" / "irprof" / "peaks.json"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    config = getattr(np.__config__, "CONFIG", {})
    blas = config.get("Build Dependencies", {}).get("blas", {})
    return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def machine_fingerprint() -> dict[str, str]:
    """What must match for cached peaks to hold: host, CPU, usable CPUs, numpy and its BLAS."""
    return {
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cpus": str(usable_cpus()),
        "arch": platform.machine(),
        "numpy": np.__version__,
        "blas": _blas(),
    }


def _best(run: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _gemm_gflops(settings: PeakSettings) -> tuple[float, int]:
    rng = np.random.default_rng(0)
    size, seconds = 128, 0.0
    product: Any = None
    # Matrices double from 256 until one product takes `gemm_seconds` (or reach the cap).
    while product is None or (seconds < settings.gemm_seconds and size * 2 <= settings.gemm_max_n):
        size *= 2
        left = rng.standard_normal((size, size), dtype=np.float32)
        right = rng.standard_normal((size, size), dtype=np.float32)
        product = partial(np.matmul, left, right)
        product()  # warm the BLAS threads and the caches
        seconds = _best(product, 1)
    seconds = _best(product, settings.repeats)
    return 2.0 * size**3 / seconds / 1e9, size


def _stream_gbps(settings: PeakSettings) -> tuple[float, int]:
    count = max(1024, settings.stream_bytes // 4)
    first = np.ones(count, dtype=np.float32)
    second = np.ones(count, dtype=np.float32)
    out = np.empty(count, dtype=np.float32)
    workers = usable_cpus()
    bounds = np.linspace(0, count, workers + 1, dtype=np.int64).tolist()
    slices = [slice(bounds[i], bounds[i + 1]) for i in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:

        def add_all() -> None:
            list(pool.map(lambda part: np.add(first[part], second[part], out=out[part]), slices))

        add_all()  # touch every page before timing
        seconds = _best(add_all, settings.repeats)
    return 3.0 * count * 4 / seconds / 1e9, workers


def measure_peaks(settings: PeakSettings | None = None) -> MachinePeaks:
    """Measure this machine's peaks now (a few seconds with the default settings)."""
    settings = settings or PeakSettings()
    gflops, size = _gemm_gflops(settings)
    gbps, workers = _stream_gbps(settings)
    array_mib = max(1024, settings.stream_bytes // 4) * 4 / (1 << 20)
    method = (
        f"numpy float32 GEMM {size}x{size}, best of {settings.repeats}; numpy add of "
        f"{array_mib:.0f} MiB arrays on {workers} threads (3 bytes moved per array byte), "
        f"best of {settings.repeats}"
    )
    return MachinePeaks(
        gflops=round(gflops, 2),
        gbps=round(gbps, 2),
        source="measured",
        measured_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        method=method,
        machine=machine_fingerprint(),
    )


def _read_cache(path: Path) -> MachinePeaks | None:
    """The cached peaks when the file is readable, current and of this machine; else None."""
    try:
        data = orjson.loads(path.read_bytes())
        if data.get("version") != PEAKS_VERSION or data.get("machine") != machine_fingerprint():
            return None
        gflops, gbps = float(data["gflops"]), float(data["gbps"])
        if not (gflops > 0 and gbps > 0):
            return None
        return MachinePeaks(
            gflops=gflops,
            gbps=gbps,
            source=f"cache {path}",
            measured_at=str(data.get("measured_at", "")),
            method=str(data.get("method", "")),
            machine={str(k): str(v) for k, v in data["machine"].items()},
        )
    except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return None


def load_or_measure_peaks(cache: Path, settings: PeakSettings | None = None) -> MachinePeaks:
    """This machine's peaks from `cache`, or measured now and written there."""
    cached = _read_cache(cache)
    if cached is not None:
        return cached
    peaks = measure_peaks(settings)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(cache, orjson.dumps(peaks.to_json(), option=orjson.OPT_INDENT_2))
    except OSError as exc:
        # The numbers hold without a cache; the next command measures again, and says why.
        return dataclasses.replace(peaks, source=f"measured (not cached: {cache}: {exc})")
    return peaks


def resolve_peaks(cache: Path | None, gflops: float | None, gbps: float | None) -> MachinePeaks:
    """Given numbers when both are given, else this machine's from `cache` (measured on a miss;
    None means `default_peaks_cache()`)."""
    if (gflops is None) != (gbps is None):
        from irprof.errors import UsageError

        raise UsageError("give both --peak-gflops and --peak-gbps, or neither (to measure)")
    if gflops is not None and gbps is not None:
        return given_peaks(gflops, gbps)
    return load_or_measure_peaks(cache or default_peaks_cache())

"""The Python face of irprof: what each CLI command does, as one call returning plain data.

import irprof
run = irprof.capture_model("jax", "examples/jax_mlp.py", "run")      # or irprof.open_run("run")
irprof.annotate(run)                                            # -> AnnotateOutcome
for row in run.top(limit=5).rows: print(row.label, row.total_ns)
irprof.report(run)                                              # -> Path of report.html
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from irprof.bundle import RunBundle

if TYPE_CHECKING:
    import duckdb

    from irprof.analyses.hotspots import GroupBy, HotspotTable
    from irprof.analyses.machine_peaks import MachinePeaks
    from irprof.annotation import AnnotateOutcome
    from irprof.opprofile import OpProfile
    from irprof.trace.model import Trace


class Run(RunBundle):
    """A run bundle with the views of it: everything a CLI command prints, as data."""

    def profile(self, level: str) -> OpProfile:
        """The per-op profile `irprof annotate` wrote for `level`."""
        from irprof.opprofile import OpProfile

        return OpProfile.load(self.member(f"opprofile.{level}.json", what=f"{level} profile"))

    def top(
        self, level: str | None = None, *, by: GroupBy = "op", limit: int | None = 20
    ) -> HotspotTable:
        """The hottest ops (or op kinds, or scopes) of an annotated level, hottest first."""
        from irprof.analyses.annotated_levels import load_annotated_level
        from irprof.analyses.hotspots import hotspots

        loaded = load_annotated_level(self, level)
        return hotspots(
            loaded.profiled.ops, by=by, limit=limit, profiled_ns=loaded.profiled.profiled_ns
        )


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """Read any supported trace file (XPlane, Chrome/Kineto/Perfetto JSON, ...) into a `Trace`."""
    from irprof.readers import read_trace as read

    return read(path, format)


def open_run(path: str | Path) -> Run:
    """The run bundle at `path`, loaded on demand (the manifest is validated on first use)."""
    run = Run(path)
    run.manifest()
    return run


def capture_model(framework: str, script: str | Path, out: str | Path, **options: Any) -> Run:
    """Run `script` under `framework`'s profiler into the bundle `out` (options: the capture's
    options dataclass fields, e.g. `steps=5`)."""
    from irprof.frameworks import get_all_frameworks

    get_all_frameworks().get(framework).capture_run(script, out, **options)
    return open_run(out)


def annotate(
    run: RunBundle | str | Path,
    level: str | None = None,
    *,
    attr: str = "irprof",
    allow_low_coverage: bool = False,
    allow_mismatch: bool = False,
) -> AnnotateOutcome:
    """Correlate one IR level of `run` and write annotated IR, opprofile and coverage into it
    (refused when the IR or trace differs from its capture fingerprint, unless
    `allow_mismatch`)."""
    from irprof.annotation import annotate_bundle
    from irprof.errors import UsageError
    from irprof.mlir.profile_attrs import LAYOUTS

    if attr not in LAYOUTS:
        raise UsageError(f"attr {attr!r}: expected one of {'|'.join(LAYOUTS)}")
    bundle = run if isinstance(run, RunBundle) else open_run(run)
    return annotate_bundle(
        bundle,
        level=level,
        attr=attr,
        allow_low_coverage=allow_low_coverage,
        allow_mismatch=allow_mismatch,
    )


def report(
    run: RunBundle | str | Path,
    out: str | Path | None = None,
    *,
    max_nodes: int = 300,
    against: RunBundle | str | Path | None = None,
    peaks: MachinePeaks | None = None,
) -> Path:
    """Write the static HTML report of an annotated run; returns its path. `against`: another
    run of the model, shown as a diff from it to `run`; `peaks`: the roofline's roofs (without
    them the roofline tab shows achieved rates only; see `irprof.analyses.machine_peaks`)."""
    from irprof.analyses.op_graph import OpGraphOptions
    from irprof.analyses.report_data import build_report_data
    from irprof.fileio import write_bytes_atomic
    from irprof.renderers.report_html import RENDERER

    bundle = run if isinstance(run, RunBundle) else open_run(run)
    other = None
    if against is not None:
        other = against if isinstance(against, RunBundle) else open_run(against)
    data = build_report_data(
        bundle, graph_options=OpGraphOptions(max_nodes=max_nodes), peaks=peaks, against=other
    )
    target = Path(out) if out is not None else bundle.report_path
    write_bytes_atomic(target, RENDERER.render(data))
    return target


def open_dataset(
    path: str | Path,
    *,
    dataset: str | Path | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> duckdb.DuckDBPyRelation:
    """The `events` view of a rank dataset, Parquet trace, trace file or run bundle as a DuckDB
    relation (`.filter`, `.aggregate`, `.arrow()`, ...; `rel.query("events", "SELECT ...")` for
    SQL). A directory of rank traces is first converted in parallel (on `scheduler`, else a
    local Dask cluster of `workers`) into the folder `dataset`, which it then requires."""
    from irprof.analyses.rank_cluster import ClusterOptions
    from irprof.analyses.sql_views import open_dataset_session

    session = open_dataset_session(
        Path(path),
        cluster=ClusterOptions(scheduler, workers),
        dataset=Path(dataset) if dataset is not None else None,
    )
    return session.relation("SELECT * FROM events")

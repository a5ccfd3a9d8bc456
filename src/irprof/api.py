"""The Python face of irprof: a `Run` does what every CLI command does, returning plain data.

    run = irprof.open_run("run")            # or irprof.capture_model("jax", "model.py", "run")
    run.annotate()                          # -> AnnotateOutcome (coverage, written paths)
    for row in run.top(limit=5).rows: print(row.key, row.total_ns, row.location)
    run.top().to_arrow(); run.report()      # -> a pyarrow Table; the Path of report.html

The whole tour, runnable: docs/api.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from irprof.bundle import RunBundle

if TYPE_CHECKING:
    import duckdb

    from irprof.analyses.critical_path import CriticalPath
    from irprof.analyses.dag_view import DagView
    from irprof.analyses.hotspots import GroupBy, HotspotTable
    from irprof.analyses.machine_peaks import MachinePeaks
    from irprof.analyses.op_graph import Grouping, OpGraph, OpGraphOptions
    from irprof.analyses.rank_cluster import ClusterOptions
    from irprof.analyses.rank_dataset import ConvertedTrace, RankDataset
    from irprof.analyses.roofline import Roofline
    from irprof.analyses.run_diff import DiffOptions, RunDiff
    from irprof.analyses.sql_views import SqlResult, SqlSession
    from irprof.analyses.step_stats import Stat, TimeBasis
    from irprof.analyses.top_view import TopView
    from irprof.analyses.trace_summary import TraceSummary
    from irprof.annotation import AnnotateOutcome
    from irprof.frameworks.iree.tune import TuneOptions, TuneResult
    from irprof.mlir.safe_parse import ParseLimits
    from irprof.opprofile import OpProfile
    from irprof.renderers.mlgo_log import DatasetEntry
    from irprof.trace.model import Trace


class Run(RunBundle):
    """A run bundle and everything irprof shows of it: each method is one CLI command, as data."""

    @classmethod
    def of(cls, bundle: RunBundle) -> Run:
        """`bundle` as a Run, sharing what it has loaded (and what the Run records later)."""
        if isinstance(bundle, Run):
            return bundle
        run = cls.__new__(cls)
        # One loader state for both: no file is read twice, and coverage the Run records is
        # seen through `bundle` too.
        run.__dict__ = bundle.__dict__
        return run

    def __repr__(self) -> str:
        return f"Run({str(self.root)!r})"

    def framework_name(self) -> str:
        """The registered framework that captured the run (a BundleError for an unknown one)."""
        from irprof.annotation import bundle_framework

        return bundle_framework(self).name

    def annotatable_levels(self) -> list[str]:
        """The IR levels the framework's correlator can annotate, in lowering order."""
        from irprof.annotation import annotatable_levels

        return annotatable_levels(self)

    def annotate(
        self,
        level: str | None = None,
        *,
        attr: str = "irprof",
        allow_low_coverage: bool = False,
        allow_mismatch: bool = False,
    ) -> AnnotateOutcome:
        """Correlate one IR level (default: the framework's) and write annotated IR, opprofile
        and coverage into the run (refused when the IR or trace differs from its capture
        fingerprint, unless `allow_mismatch`)."""
        from irprof.annotation import annotate_bundle
        from irprof.errors import UsageError
        from irprof.mlir.profile_attrs import LAYOUTS

        if attr not in LAYOUTS:
            raise UsageError(f"attr {attr!r}: expected one of {'|'.join(LAYOUTS)}")
        return annotate_bundle(
            self,
            level=level,
            attr=attr,
            allow_low_coverage=allow_low_coverage,
            allow_mismatch=allow_mismatch,
        )

    def profile(self, level: str) -> OpProfile:
        """The per-op profile `annotate` wrote for `level`."""
        from irprof.opprofile import OpProfile

        return OpProfile.load(self.member(f"opprofile.{level}.json", what=f"{level} profile"))

    def top_view(
        self,
        level: str | None = None,
        *,
        by: GroupBy = "op",
        limit: int | None = 20,
        expand_groups: bool = False,
        roofline: bool = False,
        peaks: MachinePeaks | None = None,
        stat: Stat = "median",
        time: TimeBasis = "oncpu",
    ) -> TopView:
        """What `irprof top` shows: the hotspot table (ranked by `stat` of the per-step times:
        median | sum | min | mean; of on-CPU time when `time` is "oncpu" and the capture
        recorded the scheduler, else wall time), the ops behind it, the model script and, with
        `roofline`, the rows on the roofline of `peaks`."""
        from irprof.analyses.top_view import load_top_view

        self.framework_name()  # a bundle of an unknown stack is not a run irprof wrote
        return load_top_view(
            self,
            level,
            by=by,
            limit=limit,
            expand_groups=expand_groups,
            with_roofline=roofline,
            peaks=peaks,
            stat=stat,
            time=time,
        )

    def top(
        self,
        level: str | None = None,
        *,
        by: GroupBy = "op",
        limit: int | None = 20,
        expand_groups: bool = False,
        stat: Stat = "median",
        time: TimeBasis = "oncpu",
    ) -> HotspotTable:
        """The hottest ops (or op kinds, or scopes) of an annotated level, hottest first by
        `stat` (median step x steps by default; "sum", "min", "mean") of `time` (as
        `top_view`); `expand_groups`: each op of a fused or decomposed event on its own
        (estimated)."""
        view = self.top_view(
            level, by=by, limit=limit, expand_groups=expand_groups, stat=stat, time=time
        )
        return view.table

    def roofline(
        self,
        level: str | None = None,
        *,
        by: GroupBy = "op",
        limit: int | None = 20,
        peaks: MachinePeaks | None = None,
    ) -> Roofline:
        """The rows of `top` on the roofline: FLOPs and bytes per row against `peaks` (see
        `irprof.analyses.machine_peaks`; without them, achieved rates only)."""
        view = self.top_view(level, by=by, limit=limit, roofline=True, peaks=peaks)
        return cast("Roofline", view.roofline)

    def report(
        self,
        out: str | Path | None = None,
        *,
        max_nodes: int = 300,
        against: RunBundle | str | Path | None = None,
        peaks: MachinePeaks | None = None,
        stat: Stat = "median",
        time: TimeBasis = "oncpu",
    ) -> Path:
        """Write the static HTML report (default `RUN/report.html`); returns its path.
        `against`: another run of the model, shown as a diff from it to this one; `peaks`: the
        roofline's roofs (without them the roofline tab shows achieved rates only); `stat` and
        `time`: what the hotspot tables rank by (as `top`)."""
        import os

        from irprof.analyses.op_graph import OpGraphOptions
        from irprof.analyses.report_data import build_report_data
        from irprof.fileio import write_bytes_atomic
        from irprof.renderers.report_html import RENDERER

        self.framework_name()
        if os.path.lexists(self.dag_path):  # the report embeds it: same rules as named files
            self.member("dag.json", what="event DAG")
        other = None
        if against is not None:
            other = _as_run(against)
            other.framework_name()
        from irprof.progress import stage

        with stage(f"building the report of {self.root.name}"):
            data = build_report_data(
                self,
                graph_options=OpGraphOptions(max_nodes=max_nodes),
                peaks=peaks,
                against=other,
                stat=stat,
                time=time,
            )
        target = Path(out) if out is not None else self.report_path
        with stage(f"writing {target.name}"):
            write_bytes_atomic(target, RENDERER.render(data))
        return target

    def diff(
        self,
        other: RunBundle | str | Path,
        level: str | None = None,
        *,
        other_level: str | None = None,
        options: DiffOptions | None = None,
    ) -> RunDiff:
        """This run (A) against `other` (B) op by op, scope by scope and kind by kind, per
        step with bootstrap intervals; `level`: default the first annotated in both."""
        from irprof.analyses.run_diff import common_level, diff_runs, load_diff_side

        run_b = _as_run(other)
        chosen = level if level is not None else common_level(self, run_b)
        side_a = load_diff_side(self, chosen, str(self.root))
        side_b = load_diff_side(run_b, other_level or chosen, str(run_b.root))
        return diff_runs(side_a, side_b, options)

    def export(self, fmt: str, path: str | Path, level: str | None = None) -> Path:
        """Write the run as `fmt` (perfetto, chrome, model-explorer, mlgo-log) to `path`;
        `level`: model-explorer's (default the first annotated), the traces' (default all)."""
        from irprof.fileio import write_bytes_atomic
        from irprof.registry import load_reference
        from irprof.renderers.base import get_export_renderers

        renderer = get_export_renderers().get(fmt)
        build_input = cast(Callable[[RunBundle, str | None], Any], load_reference(renderer.input))
        self.framework_name()
        data = build_input(self, level)
        target = Path(path)
        write_bytes_atomic(target, renderer.render(data))
        return target

    def dag(
        self,
        mode: str = "causal",
        *,
        min_dur_ns: int = 0,
        track: str | None = None,
        name: str | None = None,
        critical_path: bool = False,
        step: int | None = None,
    ) -> DagView:
        """The event DAG of the run's trace (`causal` or `levels`) over the events passing the
        filters, and with `critical_path` the critical path of `step` (default: the longest),
        naming the IR ops of each event when the run is annotated."""
        return _dag_view(
            self.trace(), self, str(self.root), mode, min_dur_ns, track, name, critical_path, step
        )

    def critical_path(self, step: int | None = None) -> CriticalPath:
        """The critical path of `step` (default: the longest) on the causal DAG of the trace."""
        return cast("CriticalPath", self.dag(critical_path=True, step=step).critical_path)

    def graph(
        self,
        level: str | None = None,
        *,
        function: str | None = None,
        expand: Sequence[str] = (),
        max_nodes: int = 300,
        grouping: Grouping = "auto",
    ) -> OpGraph:
        """The heat-coloured data-flow graph of one function (default: the one with the most
        time) of an annotated level; render it with `irprof.renderers.base`."""
        from irprof.analyses.annotated_level import require_annotated
        from irprof.analyses.op_graph import OpGraphOptions

        chosen = require_annotated(self, level)
        options = OpGraphOptions(
            function=function,
            expand=tuple(expand),
            grouping=grouping,
            max_nodes=max_nodes,
        )
        return op_graph(self.member(f"annotated/{chosen}.mlir", what="annotated IR"), options)

    def sql(self, query: str, limit: int | None = None) -> SqlResult:
        """Run an SQL query (DuckDB) over the run's views: events, tracks, flows, ops and
        opprofile (see `irprof sql --help`); at most `limit` rows (None: all)."""
        with open_sql(self.root) as session:
            return session.query(query, limit)


def _as_run(run: RunBundle | str | Path) -> Run:
    """A Run of a loaded bundle (sharing its state) or of a path (validated now)."""
    return Run.of(run) if isinstance(run, RunBundle) else open_run(run)


def _dag_view(
    trace: Trace,
    bundle: RunBundle | None,
    source: str,
    mode: str,
    min_dur_ns: int,
    track: str | None,
    name: str | None,
    critical_path: bool,
    step: int | None,
) -> DagView:
    from irprof.analyses.dag_view import dag_view
    from irprof.event_dag.model import DagFilter

    return dag_view(
        trace,
        source=source,
        bundle=bundle,
        mode=mode,
        event_filter=DagFilter(min_dur_ns, track, name),
        with_critical_path=critical_path,
        step=step,
    )


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """Read any supported trace file (XPlane, Chrome/Kineto/Perfetto JSON, ...) into a `Trace`."""
    from irprof.readers import read_trace as read

    return read(path, format)


def summarize_trace(path: str | Path, *, top: int = 15, format: str | None = None) -> TraceSummary:
    """Counts, span, top names, device and stream time of one trace file (`irprof trace
    summary TRACE`)."""
    from irprof.analyses.trace_summary import summarize_trace as summarize

    return summarize(read_trace(path, format), top=top)


def convert_trace(
    path: str | Path,
    output: str | Path,
    *,
    format: str | None = None,
    in_memory: bool = False,
    scheduler: str | None = None,
    workers: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ConvertedTrace | RankDataset:
    """`irprof trace convert`: a trace to `events.json` / `.parquet` (Chrome JSON streamed in
    bounded memory unless `in_memory`), or a folder of rank traces (or one trace, when `output`
    has no suffix) to a Parquet dataset partitioned by rank, converted in parallel on Dask
    (`scheduler`, else `workers` local workers; 0: this process). `on_progress(done, total)`
    after each rank; failed ranks are listed in the dataset's `failures`."""
    import dataclasses

    from irprof.analyses.rank_cluster import ClusterOptions, open_runner
    from irprof.analyses.rank_dataset import (
        TRACE_OUTPUT_SUFFIXES,
        convert_ranks,
        convert_trace_file,
    )
    from irprof.analyses.ranks import rank_trace_files
    from irprof.errors import UsageError
    from irprof.fileio import make_parent_folder

    source, target = Path(path), Path(output)
    cluster = ClusterOptions(scheduler, workers)
    cluster.check()
    rank_files = rank_trace_files(source) if source.is_dir() else []
    if target.suffix and target.suffix not in TRACE_OUTPUT_SUFFIXES and not target.is_dir():
        # `x.csv` is a typo for a format more often than the name of a dataset folder.
        raise UsageError(
            f"-o {target}: unknown output format {target.suffix!r}; write .json or .parquet, "
            "or name a folder (no suffix) for a rank dataset"
        )
    if not rank_files and target.suffix in TRACE_OUTPUT_SUFFIXES:
        make_parent_folder(target)
        return convert_trace_file(source, target, format, in_memory=in_memory)
    if target.suffix in TRACE_OUTPUT_SUFFIXES:
        raise UsageError(
            f"-o {target}: {len(rank_files)} rank traces convert to a dataset folder, not one "
            "file; name a folder"
        )
    # One trace into a dataset folder is rank 0 unless its metadata or name says otherwise.
    sources = rank_files or [source]
    done = 0

    def advance(_outcome: object) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, len(sources))

    runner_options = cluster if rank_files else ClusterOptions(workers=0)
    with open_runner(runner_options, len(sources)) as runner:
        dataset = convert_ranks(sources, target, runner, format, on_done=advance)
    return dataclasses.replace(dataset, converted_by=runner.description)


def opt(source: str | Path, pipeline: str, *, verify_each: bool = False) -> Any:
    """Parse an MLIR file or text and run a pass pipeline in MLIR's textual syntax on it, irprof
    and native passes mixed (`irprof opt`); returns the module (`iree.compiler.ir.Module`)."""
    from irprof.mlir.context import make_context
    from irprof.mlir.load import load_module
    from irprof.passes.pipeline import RunOptions, run_pipeline

    module = load_module(source, make_context())
    if pipeline.strip():
        run_pipeline(module, pipeline, RunOptions(verify_each=verify_each))
    return module


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
    """`Run.annotate` of a run or a path."""
    return _as_run(run).annotate(
        level, attr=attr, allow_low_coverage=allow_low_coverage, allow_mismatch=allow_mismatch
    )


def report(
    run: RunBundle | str | Path,
    out: str | Path | None = None,
    *,
    max_nodes: int = 300,
    against: RunBundle | str | Path | None = None,
    peaks: MachinePeaks | None = None,
    stat: Stat = "median",
    time: TimeBasis = "oncpu",
) -> Path:
    """`Run.report` of a run or a path: write the HTML report; returns its path."""
    return _as_run(run).report(
        out, max_nodes=max_nodes, against=against, peaks=peaks, stat=stat, time=time
    )


def trace_dag(
    source: str | Path,
    mode: str = "causal",
    *,
    format: str | None = None,
    min_dur_ns: int = 0,
    track: str | None = None,
    name: str | None = None,
    critical_path: bool = False,
    step: int | None = None,
) -> DagView:
    """`Run.dag` of a trace file, its folder or a run bundle (its trace, unless `format` asks
    for the file to be read with that reader)."""
    bundle = Run(source)
    if bundle.is_bundle() and format is None:
        trace = bundle.trace()
        if len(trace):
            return _dag_view(
                trace, bundle, str(source), mode, min_dur_ns, track, name, critical_path, step
            )
    trace = read_trace(source, format)
    return _dag_view(trace, None, str(source), mode, min_dur_ns, track, name, critical_path, step)


def op_graph(
    mlir: str | Path, options: OpGraphOptions | None = None, limits: ParseLimits | None = None
) -> OpGraph:
    """The heat-coloured data-flow graph of an annotated `.mlir` file (`limits`: bounds on
    hostile input, see `irprof.mlir.safe_parse`)."""
    from irprof.analyses.op_graph import OpGraphOptions, build_op_graph
    from irprof.analyses.profiled_ops import profiled_ops_of
    from irprof.errors import UsageError
    from irprof.mlir.context import make_context
    from irprof.mlir.load import load_module
    from irprof.mlir.safe_parse import DEFAULT_LIMITS, call_with_stack

    path = Path(mlir)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    chosen = limits or DEFAULT_LIMITS
    wanted = options or OpGraphOptions()

    def build() -> OpGraph:
        module = load_module(path, make_context(), limits=chosen)
        return build_op_graph(module, profiled_ops_of(module, path=str(path)), wanted)

    # Walking and freeing the module recurse per nesting level: stay on the parse-sized stack.
    return call_with_stack(build, chosen.stack_bytes)


def open_sql(
    source: str | Path,
    *,
    cluster: ClusterOptions | None = None,
    dataset: str | Path | None = None,
    format: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> AbstractContextManager[SqlSession]:
    """`with open_sql(source) as session:` a DuckDB session with the views of a trace, Parquet
    trace, rank dataset, folder of rank traces (converted on `cluster` first, into `dataset`
    when given, else a temporary folder) or run bundle (`session.query("SELECT ...")`)."""
    from irprof.analyses.sql_views import open_sql as open_session

    return open_session(
        Path(source),
        cluster=cluster,
        dataset=Path(dataset) if dataset is not None else None,
        format=format,
        on_progress=on_progress,
    )


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


def mlgo_dataset(runs: Sequence[str | Path], level: str | None = None) -> list[DatasetEntry]:
    """One MLGO training log per annotated run (an observation per profiled op at `level`,
    default every annotated level), each with the file name it is written under."""
    from irprof.analyses.mlgo_features import load_mlgo_features
    from irprof.errors import UsageError
    from irprof.renderers.mlgo_log import RENDERER, DatasetEntry

    entries: list[DatasetEntry] = []
    for number, run in enumerate(Path(run) for run in runs):
        log = load_mlgo_features(RunBundle(run), level)
        if log.observation_count == 0:
            raise UsageError(f"{run}: no profiled op to log at level {level or 'any'}")
        # Two runs may share a folder name (a/run, b/run): the position keeps files apart.
        entries.append(DatasetEntry(str(run), f"{number:03d}-{run.name}{RENDERER.extension}", log))
    return entries


def tune(
    run: str | Path,
    out: str | Path | None = None,
    *,
    options: TuneOptions | None = None,
    say: Callable[[str], None] | None = None,
) -> TuneResult:
    """`irprof tune`: measured code-generation choices for the hot dispatches of an IREE run
    (annotating its source level first when needed); a `TuneResult` (record, files)."""
    from irprof.frameworks.iree.tune import TuneOptions, tune_run

    bundle = open_run(run)
    level = str(bundle.manifest().options.get("source_level", bundle.manifest().ir_levels[0]))
    if bundle.manifest().framework == "iree" and not bundle.annotated_path(level).is_file():
        bundle.annotate(level)
    return tune_run(
        bundle.root, out, options or TuneOptions(), say if say is not None else lambda _line: None
    )

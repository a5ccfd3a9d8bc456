"""What `irprof top` shows, as data: one level's hotspot table, the ops it was built from, the
model script its locations point into and, when asked, the roofline of its rows (docs/views.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from irprof.analyses.annotated_level import load_annotated_level, model_script
from irprof.analyses.hotspots import GroupBy, HotspotTable, hotspots
from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledModule
from irprof.analyses.roofline import Roofline, roofline
from irprof.analyses.step_stats import (
    Stat,
    TimeBasis,
    bundle_step_samples,
    noise_verdict,
    step_totals,
)
from irprof.bundle import RunBundle


@dataclass(frozen=True)
class TopView:
    """A hotspot table with what its renderers need beside it."""

    table: HotspotTable
    profiled: ProfiledModule  # the level's ops: rows point into it by `op_index`
    script: str  # the model script as the user can open it
    roofline: Roofline | None  # None unless asked for

    @property
    def level(self) -> str:
        """The IR level of the rows."""
        return self.table.level


def load_top_view(
    bundle: RunBundle,
    level: str | None = None,
    *,
    by: GroupBy = "op",
    limit: int | None = 20,
    expand_groups: bool = False,
    with_roofline: bool = False,
    peaks: MachinePeaks | None = None,
    stat: Stat = "median",
    time: TimeBasis = "oncpu",
) -> TopView:
    """The hottest rows of an annotated level (default: the first) ranked by `stat` of their
    per-step times, with the run's outliers and noise verdict, and their roofline when
    `with_roofline` (against `peaks`; without them, achieved rates only). `time`: "oncpu" takes
    each event's waits for a CPU out of the samples when the capture recorded them."""
    loaded = load_annotated_level(bundle, level)
    samples = bundle_step_samples(bundle, loaded.profiled.ops, time)
    table = hotspots(
        loaded.profiled.ops,
        by=by,
        limit=limit,
        profiled_ns=loaded.profiled.profiled_ns,
        expand_groups=expand_groups,
        level=loaded.level,
        samples=samples.values,
        stat=stat,
        typical=samples.typical,
    )
    manifest = bundle.manifest()
    table = replace(
        table,
        noise=noise_verdict(step_totals(samples), manifest.options.get("noise")),
        oncpu_note=samples.oncpu_note,
        untimed_ns=untimed_in_timed_steps(bundle, loaded.level),
    )
    points = None
    if with_roofline:
        points = roofline(table, loaded.profiled, loaded.module, level=loaded.level, peaks=peaks)
    script = model_script(bundle, bundle.manifest())
    return TopView(table=table, profiled=loaded.profiled, script=script, roofline=points)


def untimed_in_timed_steps(bundle: RunBundle, level: str) -> int:
    """The op time only the untimed reference steps recorded (ops the timed steps' tracer
    level leaves out), scaled from the reference steps to as many steps as were timed; 0 when
    the level's coverage has none."""
    coverage = bundle.coverage(level)
    manifest = bundle.manifest()
    untimed = coverage.extra.get("untimed_reference_ns") if coverage is not None else None
    reference_steps = manifest.options.get("reference_steps")
    if not isinstance(untimed, int) or untimed <= 0:
        return 0
    if not isinstance(reference_steps, int) or reference_steps <= 0:
        return untimed
    return untimed * manifest.steps // reference_steps

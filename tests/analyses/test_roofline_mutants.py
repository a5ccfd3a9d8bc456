"""Roofline figures of one point at their edges: the roof, the fraction reached and the bound.

Written from the mutants of `analyses/roofline.py` the first tests let through. Peaks of
100 GFLOP/s and 10 GB/s put the ridge at 10 FLOP/B; each case states the work and the time and
the test works out the roof (the larger of FLOPs over the compute peak and bytes over the
memory peak), the fraction of it the measured time reached, and the bound: overhead when a
small run (mean at most `overhead_ns`) reached less than `overhead_fraction` of its roof or
moved nothing, else compute from the ridge on, else memory.
"""

from __future__ import annotations

import pytest

from irprof.analyses.machine_peaks import MachinePeaks
from irprof.analyses.profiled_ops import ProfiledOp
from irprof.analyses.roofline import (
    Roofline,
    RooflineOptions,
    RooflinePoint,
    runs,
)
from irprof.analyses.roofline import executions as op_executions
from irprof.opprofile import ProfileData

PEAKS = MachinePeaks(100.0, 10.0, "given")
OPTIONS = RooflineOptions()


def point(
    flops: int | None,
    moved: int | None,
    total_ns: int,
    executions: int = 1,
    peaks: MachinePeaks | None = PEAKS,
    options: RooflineOptions = OPTIONS,
) -> RooflinePoint:
    return RooflinePoint(
        key="k",
        op_name="linalg.matmul",
        location="m.py:1:1",
        op_index=3,
        group="",
        ops=1,
        total_ns=total_ns,
        share=0.5,
        estimated=False,
        executions=executions,
        category="matmul",
        flops=flops,
        bytes=moved,
        peaks=peaks,
        options=options,
    )


@pytest.mark.parametrize(
    ("flops", "moved", "total_ns", "executions", "bound"),
    [
        (1000, 100, 100, 1, "compute"),  # intensity 10 = ridge; roof 10 ns: 0.1 of it, not less
        (999, 100, 100, 1, "memory"),  # just below the ridge
        (1000, 100, 101, 1, "overhead"),  # 10/101 < 0.1 of the roof in a small run
        (1000, 100, 20_000 * 3, 3, "overhead"),  # mean 20 us: still small
        (1000, 100, 20_001, 1, "compute"),  # mean past 20 us: not overhead however slow
        (0, 0, 50, 1, "overhead"),  # nothing to do at all
        (0, 100, 20_001, 1, "memory"),  # bytes only, a long run
        (1000, 0, 20_001, 1, "memory"),  # FLOPs, no bytes: no intensity
        (None, 100, 100, 1, "unknown"),
        (1000, None, 100, 1, "unknown"),
        (1000, 100, 0, 1, "unknown"),  # no time: no fraction
    ],
)
def test_bound_at_its_edges(
    flops: int | None, moved: int | None, total_ns: int, executions: int, bound: str
) -> None:
    assert point(flops, moved, total_ns, executions).bound == bound


def test_without_peaks_only_achieved_rates() -> None:
    bare = point(1000, 100, 50, peaks=None)
    assert (bare.roof_ns, bare.roof_gflops, bare.roof_fraction, bare.bound) == (
        None,
        None,
        None,
        "unknown",
    )
    assert (bare.achieved_gflops, bare.achieved_gbps, bare.intensity) == (20.0, 2.0, 10.0)


def test_roof_and_rates_of_a_point() -> None:
    work = point(3000, 200, 60, executions=4)
    # roof: max(3000 / 100, 200 / 10) = 30 ns; the intensity 15 is past the ridge.
    assert work.roof_ns == 30.0
    assert work.roof_fraction == 30.0 / 60
    assert work.roof_gflops == 100.0  # min(100, 15 * 10)
    assert work.intensity == 15.0
    assert (work.achieved_gflops, work.achieved_gbps) == (50.0, 200 / 60)
    assert (work.flops_per_run, work.bytes_per_run) == (750.0, 50.0)
    memory = point(100, 200, 60)
    assert memory.roof_gflops == 0.5 * 10.0  # below the ridge: intensity x bandwidth
    assert memory.roof_ns == 20.0  # bytes over bandwidth: the larger
    never_ran = point(100, 200, 0, executions=0)
    assert (never_ran.flops_per_run, never_ran.bytes_per_run) == (100.0, 200.0)
    assert (never_ran.achieved_gflops, never_ran.achieved_gbps) == (None, None)
    unknown = point(None, None, 60)
    assert (unknown.flops_per_run, unknown.bytes_per_run, unknown.known) == (None, None, False)
    assert (unknown.intensity, unknown.roof_gflops) == (None, None)
    assert point(5, None, 60).known is False and point(None, 5, 60).known is False


def test_options_move_the_overhead_edge() -> None:
    options = RooflineOptions(overhead_ns=100, overhead_fraction=0.5)
    # roof 10 ns; 30 ns is a third of it reached, below 0.5, with a mean of 30 ns <= 100.
    assert point(1000, 100, 30, options=options).bound == "overhead"
    assert point(1000, 100, 20, options=options).bound == "compute"  # exactly 0.5
    assert point(1000, 100, 101, options=options).bound == "compute"  # mean past 100 ns
    assert RooflineOptions() == RooflineOptions(20_000, 0.1)


def test_json_of_a_point_names_every_figure() -> None:
    work = point(3000, 200, 60, executions=4)
    assert work.to_json() == {
        "key": "k",
        "op_name": "linalg.matmul",
        "location": "m.py:1:1",
        "op_index": 3,
        "group": "",
        "ops": 1,
        "total_ns": 60,
        "share": 0.5,
        "estimated": False,
        "executions": 4,
        "category": "matmul",
        "flops": 3000,
        "bytes": 200,
        "intensity": 15.0,
        "achieved_gflops": 50.0,
        "achieved_gbps": 200 / 60,
        "roof_gflops": 100.0,
        "roof_fraction": 0.5,
        "bound": "compute",
    }


def test_a_roofline_adds_time_per_bound() -> None:
    points = (
        point(1000, 100, 100),  # compute
        point(999, 100, 20_001),  # memory (a long run)
        point(None, 100, 300),  # unknown
        point(1000, 100, 101),  # overhead
    )
    chart = Roofline("linalg", "op", PEAKS, OPTIONS, points)
    assert chart.total_ns == 20_502
    assert chart.costed_ns == 20_202
    assert chart.bound_ns() == {"compute": 100, "memory": 20_001, "overhead": 101, "unknown": 300}
    assert list(chart.bound_ns()) == ["compute", "memory", "overhead", "unknown"]
    document = chart.to_json()
    assert document == {
        "level": "linalg",
        "by": "op",
        "peaks": PEAKS.to_json(),
        "ridge": 10.0,
        "overhead_ns": 20_000,
        "overhead_fraction": 0.1,
        "total_ns": 20_502,
        "costed_ns": 20_202,
        "bound_ns": {"compute": 100, "memory": 20_001, "overhead": 101, "unknown": 300},
        "points": [item.to_json() for item in points],
    }
    bare = Roofline("tf", "type", None, OPTIONS, ())
    assert (bare.to_json()["peaks"], bare.to_json()["ridge"]) == (None, None)
    assert bare.bound_ns() == {"compute": 0, "memory": 0, "overhead": 0, "unknown": 0}
    assert bare.table_caption() == "level tf, by type; no peaks: achieved rates only"
    assert chart.table_caption() == f"level linalg, by op; {PEAKS.describe()}"
    columns = chart.table_columns()
    assert "peaks" not in columns and "options" not in columns
    assert columns[:2] == ("key", "op_name")
    assert columns[-8:] == (
        "flops_per_run",
        "bytes_per_run",
        "intensity",
        "achieved_gflops",
        "achieved_gbps",
        "roof_gflops",
        "roof_fraction",
        "bound",
    )
    rows = chart.table_rows()
    assert len(rows) == 4
    assert rows[1][columns.index("bound")] == "memory"
    assert rows[3][columns.index("total_ns")] == 101


@pytest.mark.parametrize(
    ("count", "kernels", "expected"),
    [(6, 3, 2), (7, 3, 7), (6, 1, 6), (6, 0, 6), (0, 2, 0), (4, 2, 2), (2, 2, 1)],
)
def test_runs_are_events_per_kernel_when_they_divide(
    count: int, kernels: int, expected: int
) -> None:
    assert runs(count, kernels) == expected


def test_runs_are_whole_numbers() -> None:
    assert isinstance(runs(6, 3), int)


def test_executions_of_an_op_from_its_profile() -> None:
    def profiled(count: int, kernels: tuple[str, ...]) -> ProfiledOp:
        data = ProfileData(count, 100, 10, 1, 50, 0, 0.5, kernels=kernels)
        return ProfiledOp(3, "tf.X", "main", "x", "", "", (), "loc", data, False)

    assert op_executions(profiled(6, ("a", "b", "c"))) == 2
    assert op_executions(profiled(7, ("a", "b"))) == 7
    assert op_executions(profiled(5, ())) == 5
    unprofiled = ProfiledOp(3, "tf.X", "main", "x", "", "", (), "loc", None, False)
    assert op_executions(unprofiled) == 0


def test_points_of_one_bound_add_up() -> None:
    points = (point(1000, 100, 100), point(1000, 100, 90), point(None, 1, 7))
    chart = Roofline("linalg", "op", PEAKS, OPTIONS, points)
    assert chart.bound_ns() == {"compute": 190, "memory": 0, "overhead": 0, "unknown": 7}

"""The roofline as a standalone SVG: log-log axes (FLOP/byte against GFLOP/s), the machine's
memory and compute roofs, one circle per hotspot row sized by its time and coloured by what
bounds it; hovering a circle shows the op, its location and its figures (an SVG `<title>`).

Rows without FLOPs (copies, views) or without a known cost have no place on these axes; the
caption counts them. Every name is escaped as XML text, and bidi controls are shown escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from irprof.analyses.roofline import Roofline, RooflinePoint
from irprof.renderers.html_page import reveal_bidi
from irprof.renderers.units import format_ns, format_share

WIDTH, HEIGHT = 760, 470
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 20, 60
BOUND_COLOURS = {
    "compute": "#b53355",
    "memory": "#1f6fb4",
    "overhead": "#8a8a8a",
    "unknown": "#c8c8c8",
}


def _text(value: str) -> str:
    return escape(reveal_bidi(value))


def _decades(low: float, high: float) -> tuple[int, int]:
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return first, max(last, first + 1)  # at least one decade, even for a single value


def _tick_label(exponent: int) -> str:
    value = 10.0**exponent
    if exponent >= 3:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def plotted(point: RooflinePoint) -> bool:
    """A row with a place on the axes: positive intensity and achieved FLOP rate."""
    return bool(point.intensity and point.achieved_gflops)


@dataclass(frozen=True)
class _Axes:
    x_decades: tuple[int, int]
    y_decades: tuple[int, int]

    def x(self, intensity: float) -> float:
        low, high = self.x_decades
        span = (math.log10(intensity) - low) / (high - low)
        return LEFT + span * (WIDTH - LEFT - RIGHT)

    def y(self, gflops: float) -> float:
        low, high = self.y_decades
        span = (math.log10(gflops) - low) / (high - low)
        return HEIGHT - BOTTOM - span * (HEIGHT - TOP - BOTTOM)


def _axes(data: Roofline, points: list[RooflinePoint]) -> _Axes:
    xs = [p.intensity or 1.0 for p in points] or [1.0]
    ys = [p.achieved_gflops or 1.0 for p in points] or [1.0]
    if data.peaks is not None:
        xs += [data.peaks.ridge / 10, data.peaks.ridge * 10]
        ys += [data.peaks.gflops * 2]
    return _Axes(_decades(min(xs), max(xs)), _decades(min(ys), max(ys)))


def _grid(axes: _Axes) -> list[str]:
    parts: list[str] = []
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    for exponent in range(axes.x_decades[0], axes.x_decades[1] + 1):
        x = axes.x(10.0**exponent)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{_tick_label(exponent)}</text>"
        )
    for exponent in range(axes.y_decades[0], axes.y_decades[1] + 1):
        y = axes.y(10.0**exponent)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_tick_label(exponent)}</text>"
        )
    parts.append(
        f'<text class="label" x="{(LEFT + right) / 2:.0f}" y="{HEIGHT - 18}" '
        'text-anchor="middle">arithmetic intensity (FLOP/byte)</text>'
    )
    parts.append(
        f'<text class="label" transform="translate(18 {(TOP + bottom) / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">achieved GFLOP/s</text>'
    )
    return parts


def _roofs(data: Roofline, axes: _Axes) -> list[str]:
    peaks = data.peaks
    if peaks is None:
        return []
    low_x = 10.0 ** axes.x_decades[0]
    high_x = 10.0 ** axes.x_decades[1]
    start = max(low_x, 10.0 ** axes.y_decades[0] / peaks.gbps)
    ridge = peaks.ridge
    path = (
        f"M{axes.x(start):.1f},{axes.y(start * peaks.gbps):.1f} "
        f"L{axes.x(ridge):.1f},{axes.y(peaks.gflops):.1f} "
        f"L{axes.x(high_x):.1f},{axes.y(peaks.gflops):.1f}"
    )
    return [
        f'<path class="roof" d="{path}"/>',
        f'<text class="roof-label" x="{axes.x(high_x) - 4:.1f}" y="{axes.y(peaks.gflops) - 6:.1f}"'
        f' text-anchor="end">{peaks.gflops:,.1f} GFLOP/s</text>',
        f'<text class="roof-label" x="{axes.x(ridge) + 6:.1f}" y="{axes.y(peaks.gflops) + 16:.1f}"'
        f">ridge {ridge:.2g} FLOP/B · {peaks.gbps:,.1f} GB/s</text>",
    ]


def point_title(point: RooflinePoint) -> str:
    """The hover text of a point: op, kind, location and its figures."""
    lines = [point.key, point.op_name, point.location or "(no location)"]
    share = format_share(point.share)
    lines.append(f"{format_ns(point.total_ns)} ({share}) over {point.executions} runs")
    if point.intensity is not None:
        lines.append(f"{point.intensity:.3g} FLOP/B")
    if point.achieved_gflops is not None and point.achieved_gbps is not None:
        lines.append(f"{point.achieved_gflops:.3g} GFLOP/s, {point.achieved_gbps:.3g} GB/s")
    if point.roof_fraction is not None:
        lines.append(f"{point.roof_fraction * 100:.1f}% of roof · {point.bound}-bound")
    if point.estimated:
        lines.append("time partly an estimated share of a fused group")
    return "\n".join(lines)


def _points(points: list[tuple[int, RooflinePoint]], axes: _Axes) -> list[str]:
    longest = max((p.total_ns for _, p in points), default=1) or 1
    parts: list[str] = []
    # Largest first, so small circles stay on top and clickable.
    for index, point in sorted(points, key=lambda item: -item[1].total_ns):
        assert point.intensity is not None and point.achieved_gflops is not None
        radius = 3.0 + 15.0 * math.sqrt(point.total_ns / longest)
        colour = BOUND_COLOURS.get(point.bound, BOUND_COLOURS["unknown"])
        parts.append(
            f'<g class="node point" id="node-p{index}" data-bound={quoteattr(point.bound)}>'
            f"<title>{_text(point_title(point))}</title>"
            f'<circle cx="{axes.x(point.intensity):.1f}" cy="{axes.y(point.achieved_gflops):.1f}"'
            f' r="{radius:.1f}" fill="{colour}"/></g>'
        )
    return parts


def _legend() -> list[str]:
    parts = []
    for position, (bound, colour) in enumerate(BOUND_COLOURS.items()):
        x = LEFT + 10 + position * 100
        parts.append(f'<circle cx="{x}" cy="{TOP + 10}" r="5" fill="{colour}"/>')
        parts.append(f'<text class="tick" x="{x + 9}" y="{TOP + 14}">{bound}</text>')
    return parts


STYLE = (
    "<style>.grid{stroke:#e4e4e4;stroke-width:1}.tick{font:11px sans-serif;fill:#555}"
    ".label{font:12px sans-serif;fill:#333}.roof{fill:none;stroke:#222;stroke-width:2}"
    ".roof-label{font:11px sans-serif;fill:#222}.point circle{fill-opacity:.72;stroke:#fff;"
    "stroke-width:1}.caption{font:11px sans-serif;fill:#666}</style>"
)


@dataclass(frozen=True)
class RooflineSvgRenderer:
    """`roofline.svg`: the rows of a roofline on log-log axes under the machine's roofs."""

    name: str = "roofline-svg"
    extension: str = ".svg"

    def render(self, data: Roofline) -> bytes:
        """The SVG document."""
        drawn = [(i, p) for i, p in enumerate(data.points) if plotted(p)]
        axes = _axes(data, [p for _, p in drawn])
        left_out = len(data.points) - len(drawn)
        caption = (
            f"level {data.level} · {len(drawn)} rows drawn"
            + (f", {left_out} without FLOPs or a known cost not drawn" if left_out else "")
            + (f" · {data.peaks.describe()}" if data.peaks else " · no peaks: no roofs")
        )
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="{WIDTH}" height="{HEIGHT}" class="roofline">',
            STYLE,
            '<rect x="0" y="0" width="100%" height="100%" fill="#fff"/>',
            *_grid(axes),
            *_roofs(data, axes),
            *_points(drawn, axes),
            *_legend(),
            f'<text class="caption" x="{LEFT}" y="{HEIGHT - 4}">{_text(caption)}</text>',
            "</svg>",
        ]
        return ("\n".join(parts) + "\n").encode("utf-8")


RENDERER = RooflineSvgRenderer()

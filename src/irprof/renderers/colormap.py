"""Perceptual colour maps computed in code (no plotting library) and text colours that contrast.

The maps are the degree-6 polynomial fits of matplotlib's viridis and inferno by Matt Zucker
(public domain, shadertoy "WlfXRN"): within 1/255 of the originals, monotonic in lightness.
"""

from __future__ import annotations

from dataclasses import dataclass

from irprof.registry import Registry

NO_DATA_FILL = "#d9d9d9"  # neutral grey: ops without measurements stay visible
NO_DATA_TEXT = "#333333"

Coefficients = tuple[tuple[float, float, float], ...]

_VIRIDIS: Coefficients = (
    (0.2777273272234177, 0.005407344544966578, 0.3340998053353061),
    (0.1050930431085774, 1.404613529898575, 1.384590162594685),
    (-0.3308618287255563, 0.214847559468213, 0.09509516302823659),
    (-4.634230498983486, -5.799100973351585, -19.33244095627987),
    (6.228269936347081, 14.17993336680509, 56.69055260068105),
    (4.776384997670288, -13.74514537774601, -65.35303263337234),
    (-5.435455855934631, 4.645852612178535, 26.3124352495832),
)
_INFERNO: Coefficients = (
    (0.0002189403691192265, 0.001651004631001012, -0.01948089843709184),
    (0.1065134194856116, 0.5639564367884091, 3.932712388889277),
    (11.60249308247187, -3.972853965665698, -15.9423941062914),
    (-41.70399613139459, 17.43639888205313, 44.35414519872813),
    (77.162935699427, -33.40235894210092, -81.80730925738993),
    (-71.31942824499214, 32.62606426397723, 73.20951985803202),
    (25.13112622477341, -12.24266895238567, -23.07032500287172),
)


@dataclass(frozen=True)
class ColorMap:
    """A colour map over [0, 1]; `low` lifts the bottom so cold nodes are not black."""

    name: str
    coefficients: Coefficients
    low: float = 0.0
    high: float = 1.0

    def rgb(self, t: float) -> tuple[int, int, int]:
        """8-bit RGB at position `t` (clamped to [0, 1])."""
        t = self.low + (self.high - self.low) * min(max(t, 0.0), 1.0)
        channels = []
        for channel in range(3):
            value = 0.0
            for coefficient in reversed(self.coefficients):  # Horner's scheme
                value = value * t + coefficient[channel]
            channels.append(round(min(max(value, 0.0), 1.0) * 255))
        return (channels[0], channels[1], channels[2])

    def hex(self, t: float) -> str:
        """`#rrggbb` at position `t`."""
        red, green, blue = self.rgb(t)
        return f"#{red:02x}{green:02x}{blue:02x}"

    def text_on(self, t: float) -> str:
        """Black or white, whichever reads better on the colour at `t` (WCAG luminance)."""
        return "#000000" if relative_luminance(self.rgb(t)) > 0.18 else "#ffffff"

    def stops(self, count: int = 6) -> tuple[tuple[float, str], ...]:
        """`count` evenly spaced (position, colour) pairs for legends and gradients."""
        return tuple((i / (count - 1), self.hex(i / (count - 1))) for i in range(count))


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an 8-bit sRGB colour."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(c) for c in rgb)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


INFERNO = ColorMap("inferno", _INFERNO, low=0.12, high=0.98)
VIRIDIS = ColorMap("viridis", _VIRIDIS)

_MAPS: Registry[ColorMap] = Registry("colour map")
_MAPS.register("inferno", "irprof.renderers.colormap:INFERNO")
_MAPS.register("viridis", "irprof.renderers.colormap:VIRIDIS")


def get_all_colormaps() -> Registry[ColorMap]:
    """Colour map name -> map."""
    return _MAPS


def heat_scale(share: float | None, max_share: float) -> float | None:
    """Position on the colour scale of a node's share (None: no data)."""
    if share is None:
        return None
    return share / max_share if max_share > 0 else 0.0

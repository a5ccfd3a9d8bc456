"""Human-readable durations and shares shared by every renderer."""

from __future__ import annotations


def format_ns(value: int | None) -> str:
    """`812 ns`, `3.41 us`, `12.7 ms`, `2.05 s`; `-` for None."""
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude < 1_000:
        return f"{value} ns"
    for scale, unit in ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")):
        if magnitude >= scale:
            scaled = value / scale
            digits = 0 if abs(scaled) >= 100 else 1 if abs(scaled) >= 10 else 2
            return f"{scaled:.{digits}f} {unit}"
    return f"{value} ns"


def format_share(share: float | None) -> str:
    """`12.3%`; `-` for None."""
    return "-" if share is None else f"{share * 100:.1f}%"


def shorten(text: str, width: int) -> str:
    """Keep the tail of long scoped names (the op's own part matters most)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]

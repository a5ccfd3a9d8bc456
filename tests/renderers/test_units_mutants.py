"""Durations, shares and shortened names as every table prints them, on each unit boundary.

Written from the mutants of `renderers/units.py`: no test read these strings directly, so a
unit switching one nanosecond late or a digit too many passed. Expected texts follow the
documented rule (three significant digits, the largest unit the value reaches) by hand.
"""

from __future__ import annotations

import pytest

from irprof.renderers.units import format_ns, format_share, shorten


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0 ns"),
        (999, "999 ns"),
        (-999, "-999 ns"),
        (1_000, "1.00 us"),
        (-1_000, "-1.00 us"),
        (9_990, "9.99 us"),
        (10_000, "10.0 us"),
        (12_340, "12.3 us"),
        (99_900, "99.9 us"),
        (100_000, "100 us"),
        (812_000, "812 us"),
        (1_000_000, "1.00 ms"),
        (-12_700_000, "-12.7 ms"),
        (345_000_000, "345 ms"),
        (1_000_000_000, "1.00 s"),
        (2_050_000_000, "2.05 s"),
        (-20_500_000_000, "-20.5 s"),
        (123_000_000_000, "123 s"),
    ],
)
def test_format_ns_switches_unit_and_digits_at_the_boundaries(value: int | None, text: str) -> None:
    assert format_ns(value) == text


@pytest.mark.parametrize(
    ("share", "text"),
    [(None, "-"), (0.0, "0.0%"), (0.123, "12.3%"), (0.0004, "0.0%"), (1.0, "100.0%")],
)
def test_format_share_is_a_percentage_with_one_decimal(share: float | None, text: str) -> None:
    assert format_share(share) == text


def test_shorten_keeps_names_that_fit_and_the_tail_of_longer_ones() -> None:
    name = "model/layer_3/attention/matmul"
    assert shorten(name, len(name)) == name
    assert shorten(name, len(name) + 1) == name
    cut = shorten(name, 10)
    assert len(cut) == 10
    assert cut == "…" + name[len(name) - 9 :]
    assert cut.endswith("matmul")

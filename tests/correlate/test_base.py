"""The options every correlator shares: a fused-time rule maps to a share basis, or is refused
naming the known rules."""

from __future__ import annotations

import pytest

from irprof.correlate.base import CorrelationOptions
from irprof.errors import CorrelationError

RULES = {"default": "flops", "flops": "flops", "even": "even"}


def test_a_known_rule_gives_its_basis() -> None:
    assert CorrelationOptions().share_basis(RULES) == "flops"
    assert CorrelationOptions(fused_time_rule="even").share_basis(RULES) == "even"


def test_an_unknown_rule_names_the_known_ones() -> None:
    with pytest.raises(CorrelationError, match=r"'bytes' \(known: default, flops, even\)"):
        CorrelationOptions(fused_time_rule="bytes").share_basis(RULES)

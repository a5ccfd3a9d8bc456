"""The options every correlator shares: their defaults, the basis of each rule and the whole
error for an unknown rule.

Written for `correlate/base.py`; the rules table is written out here.
"""

from __future__ import annotations

import pytest

from irprof.correlate.base import CorrelationOptions
from irprof.errors import CorrelationError

RULES = {"default": "flops", "bytes": "bytes", "even": "even"}


def test_defaults() -> None:
    options = CorrelationOptions()
    assert options.fused_time_rule == "default"
    assert options.reference_time is False
    assert options == CorrelationOptions("default", False)


def test_each_rule_gives_its_own_basis() -> None:
    for rule, basis in RULES.items():
        assert CorrelationOptions(fused_time_rule=rule).share_basis(RULES) == basis


def test_an_unknown_rule_is_refused_with_every_known_one() -> None:
    with pytest.raises(CorrelationError) as error:
        CorrelationOptions(fused_time_rule="flop").share_basis(RULES)
    assert str(error.value) == "unknown fused-time rule 'flop' (known: default, bytes, even)"
    with pytest.raises(CorrelationError) as error:
        CorrelationOptions().share_basis({})
    assert str(error.value) == "unknown fused-time rule 'default' (known: )"

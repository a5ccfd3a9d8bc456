"""Every test in this folder needs jax: the `jax` marker selects or deselects them."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests collected from this folder."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.jax)

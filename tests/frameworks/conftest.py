"""The tests of `tests/frameworks/<fw>/` get the `<fw>` marker, which selects or deselects them.

A framework's tests capture with it (in this process or a child), so they need it installed. A
test file that only reads shipped fixtures and MLIR (no framework, no capture) says so with
`NEEDS_FRAMEWORK = False`: it keeps running where the framework's tests are deselected (mutation
runs deselect every framework marker, since mutmut cannot trace their child processes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test collected below this folder with its framework's marker."""
    for item in items:
        if HERE not in item.path.parents or item.path.parent == HERE:
            continue
        if getattr(getattr(item, "module", None), "NEEDS_FRAMEWORK", True) is False:
            continue
        item.add_marker(getattr(pytest.mark, item.path.relative_to(HERE).parts[0]))

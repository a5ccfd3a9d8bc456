"""The pass registry: kebab-case name -> lazily imported pass class.

To add a pass, write `irprof/passes/<module>.py` with a frozen dataclass (ClassVar `name`,
`summary`, option fields, `run(root)`) and add ONE line to `_PASSES` below, e.g.
    ("irprof-tf-pgo", "irprof.passes.tf_pgo", "TfPgoPass"),
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from irprof.registry import Registry

_PASSES = (
    ("irprof-annotate", "irprof.passes.annotate", "AnnotatePass"),
    ("irprof-strip", "irprof.passes.strip", "StripPass"),
    ("irprof-stamp-origin", "irprof.passes.stamp_origin", "StampOriginPass"),
    ("irprof-copy-loc-to-body", "irprof.passes.copy_loc_to_body", "CopyLocToBodyPass"),
    ("irprof-reattach", "irprof.passes.reattach", "ReattachPass"),
    ("irprof-tf-pgo", "irprof.passes.tf_pgo", "TfPgoPass"),
)


def _load(module: str, attribute: str) -> type[Any]:
    loaded: type[Any] = getattr(importlib.import_module(module), attribute)
    return loaded


def _loader(module: str, attribute: str) -> Callable[[], type[Any]]:
    return lambda: _load(module, attribute)


def _build_registry() -> Registry[type[Any]]:
    registry: Registry[type[Any]] = Registry("pass")
    for name, module, attribute in _PASSES:
        registry.register(name, _loader(module, attribute))
    return registry


_REGISTRY = _build_registry()


def get_all_passes() -> Registry[type[Any]]:
    """Pass name -> pass class (a frozen dataclass implementing `ModulePass`)."""
    return _REGISTRY

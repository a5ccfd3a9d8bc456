"""Registries of lazily imported extensions: a name maps to a `"module:attribute"` reference.

Every extension point (trace readers, frameworks, passes, renderers, colour maps) is a `Registry`
filled with one line per entry, so nothing is imported until a command asks for it by name:

    READERS.register("chrome", "irprof.readers.chrome.reader:READER")
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

from irprof.errors import UsageError

T = TypeVar("T")


def load_reference(reference: str) -> object:
    """The object a `"package.module:attribute"` reference names, importing the module."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"registry reference {reference!r} is not 'module:attribute'")
    loaded: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        loaded = getattr(loaded, part)
    return loaded


class Registry(Generic[T]):
    """Name -> lazily imported object; registering a name twice is an error."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._references: dict[str, str] = {}
        self._loaded: dict[str, T] = {}

    def register(self, name: str, reference: str) -> None:
        """Add `name` -> `"module:attribute"`; a taken name raises ValueError (no shadowing)."""
        if name in self._references:
            raise ValueError(f"duplicate {self.kind} name {name!r}")
        if ":" not in reference:
            raise ValueError(f"{self.kind} {name!r}: reference {reference!r} is not 'module:attr'")
        self._references[name] = reference

    def get(self, name: str) -> T:
        """The object registered as `name`, imported on first use."""
        if name not in self._references:
            known = ", ".join(self.names()) or "none"
            raise UsageError(f"unknown {self.kind} {name!r}; known: {known}")
        if name not in self._loaded:
            loaded: T = load_reference(self._references[name])  # type: ignore[assignment]
            self._loaded[name] = loaded
        return self._loaded[name]

    def reference(self, name: str) -> str:
        """The `"module:attribute"` string registered for `name`."""
        if name not in self._references:
            raise UsageError(f"unknown {self.kind} {name!r}")
        return self._references[name]

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._references)

    def in_order(self) -> list[str]:
        """Registered names in registration order (where order carries meaning, e.g. sniffing)."""
        return list(self._references)

    def __contains__(self, name: object) -> bool:
        return name in self._references

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

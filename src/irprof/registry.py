"""Registries of lazy factories: a name maps to a zero-argument loader, imported on first use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from irprof.errors import UsageError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> lazily imported object; registering a name twice is an error."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[[], T]] = {}
        self._loaded: dict[str, T] = {}

    def register(self, name: str, factory: Callable[[], T]) -> None:
        """Add `name`; raises ValueError when it is taken, since silent shadowing hides bugs."""
        if name in self._factories:
            raise ValueError(f"duplicate {self.kind} name {name!r}")
        self._factories[name] = factory

    def get(self, name: str) -> T:
        """The object registered as `name`, loading it on first use."""
        if name not in self._factories:
            known = ", ".join(sorted(self._factories)) or "none"
            raise UsageError(f"unknown {self.kind} {name!r}; known: {known}")
        if name not in self._loaded:
            self._loaded[name] = self._factories[name]()
        return self._loaded[name]

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

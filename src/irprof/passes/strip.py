"""`irprof-strip`: remove every profile attribute and the module summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.profile_attrs import strip_profiles


@dataclass(frozen=True)
class StripPass:
    """Removes `irprof.profile`, `profiler_data`, the compact layout's `irprof.row` and
    `irprof.profile_table`, and `irprof.summary` (the round-trip inverse)."""

    name: ClassVar[str] = "irprof-strip"
    summary: ClassVar[str] = (
        "remove irprof.profile / profiler_data / irprof.row / irprof.profile_table / "
        "irprof.summary attributes"
    )

    def run(self, root: ir.Operation) -> None:
        """Strip in place."""
        strip_profiles(root)

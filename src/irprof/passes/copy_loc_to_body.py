"""`irprof-copy-loc-to-body`: give the body ops of linalg ops their parent's location."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.copy_loc_to_body import copy_loc_to_body


@dataclass(frozen=True)
class CopyLocToBodyPass:
    """Body ops of `linalg.*` ops get the parent's location (as the caller when they have one)."""

    name: ClassVar[str] = "irprof-copy-loc-to-body"
    summary: ClassVar[str] = "copy linalg ops' locations onto their anonymous body ops"

    def run(self, root: ir.Operation) -> None:
        """Rewrite locations in place (see `irprof.mlir.copy_loc_to_body`)."""
        copy_loc_to_body(root)

"""`irprof-reattach{profile=UPPER_OPPROFILE.json}`: re-derive annotations on lowered IR."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from iree.compiler import ir

from irprof.mlir.apply_profile import write_summary
from irprof.mlir.profile_attrs import Layout
from irprof.mlir.reattach import reattach
from irprof.opprofile import OPPROFILE_LIMIT_BYTES, OpProfile
from irprof.passes.base import check_input_option


@dataclass(frozen=True)
class ReattachPass:
    """Re-annotates lowered IR from the stamped origins of an upper level's opprofile."""

    name: ClassVar[str] = "irprof-reattach"
    summary: ClassVar[str] = "annotate lowered IR from an upper level's origin-keyed opprofile"
    profile: Path
    level: str = "lowered"
    attr: Layout = "irprof"
    output: Path | None = None  # also write the lower level's opprofile.json here

    def __post_init__(self) -> None:
        check_input_option(
            self.name, "profile", self.profile, OPPROFILE_LIMIT_BYTES, "opprofile file"
        )

    def run(self, root: ir.Operation) -> None:
        """Annotate in place (and write `output` when given); see `irprof.mlir.reattach`."""
        upper = OpProfile.load(self.profile)
        lower = reattach(root, upper, level=self.level, layout=self.attr)
        write_summary(root, lower)
        if self.output is not None:
            lower.save(self.output)

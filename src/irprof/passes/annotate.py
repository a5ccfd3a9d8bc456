"""`irprof-annotate{profile=PATH attr=irprof|ts-dur layout=per-op|compact}`: attach an
`opprofile.json` to the ops (docs/mlir.md, "Choosing a layout")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from iree.compiler import ir

from irprof.errors import PipelineError
from irprof.mlir.apply_profile import annotate_module
from irprof.mlir.profile_attrs import Layout
from irprof.opprofile import OPPROFILE_LIMIT_BYTES, OpProfile
from irprof.passes.base import check_input_option


@dataclass(frozen=True)
class AnnotatePass:
    """Loads `profile` (an opprofile.json) and attaches each entry to the ops its key matches."""

    name: ClassVar[str] = "irprof-annotate"
    summary: ClassVar[str] = "attach opprofile.json measurements as irprof.profile attributes"
    profile: Path
    attr: Layout = "irprof"
    layout: Literal["per-op", "compact"] = "per-op"

    def __post_init__(self) -> None:
        check_input_option(
            self.name, "profile", self.profile, OPPROFILE_LIMIT_BYTES, "opprofile file"
        )
        if self.layout == "compact" and self.attr not in ("irprof", "compact"):
            raise PipelineError(
                f"pass '{self.name}': option 'layout=compact' stores the irprof.profile "
                f"fields, not 'attr={self.attr}'; drop attr or use layout=per-op"
            )

    def run(self, root: ir.Operation) -> None:
        """Annotate in place (see `irprof.mlir.apply_profile.annotate_module`)."""
        layout: Layout = "compact" if self.layout == "compact" else self.attr
        annotate_module(root, OpProfile.load(self.profile), layout=layout)

"""`irprof-annotate{profile=PATH attr=irprof|ts-dur}`: attach an `opprofile.json` to the ops."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from iree.compiler import ir

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

    def __post_init__(self) -> None:
        check_input_option(
            self.name, "profile", self.profile, OPPROFILE_LIMIT_BYTES, "opprofile file"
        )

    def run(self, root: ir.Operation) -> None:
        """Annotate in place (see `irprof.mlir.apply_profile.annotate_module`)."""
        annotate_module(root, OpProfile.load(self.profile), layout=self.attr)

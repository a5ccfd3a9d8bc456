"""`irprof-tf-pgo{bundle=RUN level=tf}`: the TensorFlow profile-guided pipeline.

Design notes: docs/tensorflow.md, "Module notes", `frameworks/tf/pgo_pass.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from iree.compiler import ir

from irprof.bundle import RunBundle
from irprof.correlate.base import CorrelationOptions
from irprof.coverage import check_coverage
from irprof.errors import PipelineError
from irprof.frameworks.tf.correlate import CORRELATOR, correlate_module
from irprof.mlir.apply_profile import annotate_module
from irprof.mlir.profile_attrs import Layout

# Passes run on the annotated module, in order; each reads `irprof.profile` attributes.
PROFILE_GUIDED_PASSES: tuple[Callable[[ir.Operation], None], ...] = ()


@dataclass(frozen=True)
class TfPgoPass:
    """Correlate a TF run bundle, annotate the module with it, then run profile-guided passes."""

    name: ClassVar[str] = "irprof-tf-pgo"
    summary: ClassVar[str] = "annotate from a TF run bundle, then run profile-guided passes"
    OPTION_ALIASES: ClassVar[dict[str, str]] = {"run": "bundle"}
    bundle: Path
    level: str = "tf"
    attr: Layout = "irprof"
    fused_time_rule: str = "default"
    allow_low_coverage: bool = False

    def run(self, root: ir.Operation) -> None:
        """Annotate `root` in place and run the profile-guided passes."""
        if self.level not in CORRELATOR.levels:
            raise PipelineError(
                f"pass '{self.name}': level '{self.level}' is not one of "
                f"{', '.join(CORRELATOR.levels)}"
            )
        bundle = RunBundle(Path(self.bundle))
        # Correlate against the module being compiled (not the bundle's file): coverage then
        # says whether this very IR and the profile belong together.
        result = correlate_module(
            bundle, root, self.level, CorrelationOptions(fused_time_rule=self.fused_time_rule)
        )
        if not self.allow_low_coverage:
            check_coverage(result.coverage, str(bundle.root))
        annotate_module(root, result.opprofile, layout=self.attr, coverage=result.coverage)
        for profile_guided in PROFILE_GUIDED_PASSES:
            profile_guided(root)

"""The pass registry: kebab-case name -> lazily imported pass class.

To add a pass, write `irprof/passes/<module>.py` with a frozen dataclass (ClassVar `name`,
`summary`, option fields, `run(root)`) and add ONE line below, e.g.
    _PASSES.register("irprof-tf-pgo", "irprof.frameworks.tf.pgo_pass:TfPgoPass")
"""

from __future__ import annotations

from typing import Any

from irprof.registry import Registry

_PASSES: Registry[type[Any]] = Registry("pass")
_PASSES.register("irprof-annotate", "irprof.passes.annotate:AnnotatePass")
_PASSES.register("irprof-strip", "irprof.passes.strip:StripPass")
_PASSES.register("irprof-stamp-origin", "irprof.passes.stamp_origin:StampOriginPass")
_PASSES.register("irprof-copy-loc-to-body", "irprof.passes.copy_loc_to_body:CopyLocToBodyPass")
_PASSES.register("irprof-reattach", "irprof.passes.reattach:ReattachPass")
_PASSES.register("irprof-tf-pgo", "irprof.frameworks.tf.pgo_pass:TfPgoPass")
_PASSES.register("irprof-cost", "irprof.passes.cost:CostPass")
_PASSES.register("irprof-apply-tuning", "irprof.passes.apply_tuning:ApplyTuningPass")


def get_all_passes() -> Registry[type[Any]]:
    """Pass name -> pass class (a frozen dataclass implementing `ModulePass`)."""
    return _PASSES

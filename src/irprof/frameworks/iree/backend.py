"""`--backend iree|both` of `irprof capture jax` / `capture torch`: the framework's IR run by IREE.

Design notes: docs/iree.md, "Module notes", `frameworks/iree/backend.py`.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from irprof.bundle import RunBundle
from irprof.capture.subprocess_run import model_label, staged_bundle
from irprof.errors import UsageError
from irprof.frameworks.iree.capture import IreeCaptureOptions, write_iree_bundle

IREE_BUNDLE = "iree"
# What the framework child needs to run when only its IR is wanted.
LOWERING_STEPS = 1
LOWERING_WARMUP = 0


@dataclasses.dataclass(frozen=True)
class BackendPlan:
    """How one framework capture uses IREE: its backend names and the IR level IREE compiles."""

    framework: str  # "jax", "torch"
    native: str  # the framework's own backend name ("xla", "torch")
    level: str  # IR level of the framework bundle that IREE compiles
    what: str  # the level in words, for errors ("StableHLO lowered by JAX")

    @property
    def choices(self) -> tuple[str, ...]:
        """Accepted `--backend` values."""
        return (self.native, IREE_BUNDLE, "both")

    def check(self, backend: str) -> None:
        """Refuse an unknown `--backend`."""
        if backend not in self.choices:
            raise UsageError(
                f"--backend {backend!r}: expected one of {', '.join(self.choices)} "
                f"({self.native}: the framework's own run; iree: IREE llvm-cpu; both)"
            )

    def uses_native(self, backend: str) -> bool:
        """Whether the framework's own profiled run is kept."""
        return backend in (self.native, "both")

    def uses_iree(self, backend: str) -> bool:
        """Whether an IREE bundle is written."""
        return backend in (IREE_BUNDLE, "both")


def iree_options(steps: int, warmup: int, timeout_s: float) -> IreeCaptureOptions:
    """The IREE capture options a framework capture implies (same steps and warm-up)."""
    return IreeCaptureOptions(function="main", steps=steps, warmup=warmup, timeout_s=timeout_s)


def write_iree_from_framework(
    plan: BackendPlan,
    framework_bundle: Path,
    folder: Path,
    options: IreeCaptureOptions,
    *,
    script: Path,
    label_for: Path,
    entry: str,
) -> None:
    """Compile `framework_bundle`'s IR level with IREE into the staging `folder`."""
    source = RunBundle(framework_bundle).ir_path(plan.level)
    write_iree_bundle(
        source,
        folder,
        options,
        label=model_label(script, label_for),
        subject=f"{script} ({plan.what}, ir/{plan.level}.mlir)",
        provenance={
            "framework": plan.framework,
            "script": model_label(script, label_for),
            "entry": entry,
            "level": plan.level,
        },
    )


def capture_with_backend(
    plan: BackendPlan,
    backend: str,
    staging: Path,
    run_framework: Callable[[Path, int, int], None],
    iree: IreeCaptureOptions,
    *,
    script: Path,
    out: Path,
    entry: str,
) -> None:
    """Fill the staging directory of `out` for `backend`.

    `run_framework(folder, steps, warmup)` runs the framework child into `folder`; the IREE
    run takes the same steps and warm-up as the framework's (`iree.steps`, `iree.warmup`).
    """
    plan.check(backend)
    if not plan.uses_iree(backend):
        run_framework(staging, iree.steps, iree.warmup)
        return
    if not plan.uses_native(backend):
        with tempfile.TemporaryDirectory(prefix=f"irprof-{plan.framework}-lowering-") as temp:
            lowered = Path(temp)
            run_framework(lowered, LOWERING_STEPS, LOWERING_WARMUP)
            write_iree_from_framework(
                plan, lowered, staging, iree, script=script, label_for=out, entry=entry
            )
        return
    run_framework(staging, iree.steps, iree.warmup)
    write_iree_from_framework(
        plan,
        staging,
        staging / IREE_BUNDLE,
        iree,
        script=script,
        label_for=out / IREE_BUNDLE,
        entry=entry,
    )
    bundle = RunBundle(staging)
    manifest = bundle.manifest()
    bundle.write_manifest(
        dataclasses.replace(manifest, options={**manifest.options, "iree_bundle": IREE_BUNDLE})
    )


class BackendCaptureOptions(Protocol):
    """What `capture_staged` reads of a framework capture's options."""

    @property
    def backend(self) -> str: ...
    @property
    def steps(self) -> int: ...
    @property
    def warmup(self) -> int: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def entry(self) -> str: ...


def capture_staged(
    plan: BackendPlan,
    options: BackendCaptureOptions,
    run_framework: Callable[[Path, int, int], None],
    *,
    script: Path,
    out: Path,
) -> RunBundle:
    """Capture into a staging directory for `options.backend` and move it to `out` on success."""
    with staged_bundle(out) as staging:
        capture_with_backend(
            plan,
            options.backend,
            staging,
            run_framework,
            iree_options(options.steps, options.warmup, options.timeout_s),
            script=script,
            out=out,
            entry=options.entry,
        )
    return RunBundle(out)

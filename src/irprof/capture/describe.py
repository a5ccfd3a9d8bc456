"""The lines `irprof capture <fw>` prints about the bundles it wrote."""

from __future__ import annotations

from irprof.bundle import RunBundle


def describe_capture(bundle: RunBundle, side_files: str = "") -> str:
    """One line per bundle written: RUN, and RUN/iree when the capture wrote one beside it."""
    manifest = bundle.manifest()
    if manifest.framework == "iree":
        sources = manifest.options.get("executable_sources", [])
        extra = f"{len(sources) if isinstance(sources, list) else 0} executable sources"
        unit = "runs"
    else:
        extra, unit = side_files, "steps"
    lines = [
        f"wrote {bundle.root}: levels {', '.join(manifest.ir_levels)}"
        + (f" (+ {extra})" if extra else "")
        + f", {manifest.steps} profiled {unit}, trace {', '.join(manifest.trace_files)}"
    ]
    nested = manifest.options.get("iree_bundle")
    if isinstance(nested, str):
        lines.append(describe_capture(RunBundle(bundle.root / nested)))
    return "\n".join(lines)

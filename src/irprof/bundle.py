"""The run bundle: the directory `irprof capture` writes and every later command reads."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from irprof.errors import BundleError
from irprof.fileio import write_bytes_atomic

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Manifest:
    """`RUN/manifest.json`: what ran, with which versions, and where its files are."""

    framework: str
    model: str  # the script, relative to the bundle's parent when possible
    entry: str
    steps: int
    device: str
    versions: dict[str, str]
    ir_levels: tuple[str, ...]  # levels present under ir/, in lowering order
    trace_files: tuple[str, ...]  # paths relative to the bundle
    options: dict[str, Any] = field(default_factory=dict)
    created: str = field(
        default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )

    def to_json(self) -> dict[str, Any]:
        """Versioned JSON form."""
        return {
            "version": MANIFEST_VERSION,
            "framework": self.framework,
            "model": self.model,
            "entry": self.entry,
            "steps": self.steps,
            "device": self.device,
            "versions": self.versions,
            "ir_levels": list(self.ir_levels),
            "trace_files": list(self.trace_files),
            "options": self.options,
            "created": self.created,
        }

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Manifest:
        """Inverse of `to_json`."""
        return Manifest(
            framework=obj["framework"],
            model=obj["model"],
            entry=obj["entry"],
            steps=int(obj["steps"]),
            device=obj["device"],
            versions=dict(obj["versions"]),
            ir_levels=tuple(obj["ir_levels"]),
            trace_files=tuple(obj["trace_files"]),
            options=dict(obj.get("options", {})),
            created=obj.get("created", ""),
        )


@dataclass(frozen=True)
class RunBundle:
    """A run bundle on disk; paths only, nothing loaded until asked."""

    root: Path

    @property
    def manifest_path(self) -> Path:
        """`RUN/manifest.json`."""
        return self.root / "manifest.json"

    def ir_path(self, level: str) -> Path:
        """`RUN/ir/<level>.mlir`."""
        return self.root / "ir" / f"{level}.mlir"

    def annotated_path(self, level: str) -> Path:
        """`RUN/annotated/<level>.mlir`."""
        return self.root / "annotated" / f"{level}.mlir"

    @property
    def trace_dir(self) -> Path:
        """`RUN/trace/`."""
        return self.root / "trace"

    @property
    def opprofile_path(self) -> Path:
        """`RUN/opprofile.json` (the last annotated level; per level: `opprofile.<level>.json`)."""
        return self.root / "opprofile.json"

    def opprofile_level_path(self, level: str) -> Path:
        """`RUN/opprofile.<level>.json`."""
        return self.root / f"opprofile.{level}.json"

    @property
    def coverage_path(self) -> Path:
        """`RUN/coverage.json`."""
        return self.root / "coverage.json"

    @property
    def dag_path(self) -> Path:
        """`RUN/dag.json`."""
        return self.root / "dag.json"

    @property
    def report_path(self) -> Path:
        """`RUN/report.html`."""
        return self.root / "report.html"

    def manifest(self) -> Manifest:
        """Load and validate the manifest."""
        path = self.manifest_path
        if not path.is_file():
            raise BundleError(
                f"{self.root}: not a run bundle (no manifest.json); run `irprof capture`"
            )
        try:
            obj = orjson.loads(path.read_bytes())
            return Manifest.from_json(obj)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"{path}: malformed manifest ({exc!r})") from exc

    def write_manifest(self, manifest: Manifest) -> None:
        """Write `manifest.json` atomically."""
        write_bytes_atomic(
            self.manifest_path, orjson.dumps(manifest.to_json(), option=orjson.OPT_INDENT_2)
        )

    def trace_paths(self) -> list[Path]:
        """Absolute paths of the trace files the manifest lists."""
        return [self.root / name for name in self.manifest().trace_files]

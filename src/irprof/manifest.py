"""`RUN/manifest.json`: what ran, with which versions, and which files of the bundle hold what.

The schema is checked on decode (msgspec), so a mistyped field is reported with its JSON path,
and every path the manifest names must be relative and stay inside the bundle.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from irprof.errors import BundleError

MANIFEST_VERSION = 1
MANIFEST_LIMIT_BYTES = 16 << 20  # a manifest is a few kB; refuse to parse a planted huge file
# Capture options that name a file of the bundle; each is checked like a trace file.
PATH_OPTIONS = ("fx_nodes", "runtime_graph", "hlo_text")
FINGERPRINT_PREFIX = "sha256:"


class _ManifestSchema(msgspec.Struct, forbid_unknown_fields=False):
    """The JSON schema of `manifest.json`; field types are checked on decode."""

    framework: str
    model: str
    entry: str
    steps: int
    device: str
    versions: dict[str, str]
    ir_levels: list[str]
    trace_files: list[str]
    options: dict[str, Any] = {}
    created: str = ""
    version: int = MANIFEST_VERSION
    fingerprints: dict[str, str] = {}


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
    # bundle-relative path -> "sha256:<hex>" of the IR, trace and option files at capture
    # (empty for bundles written before fingerprints existed: nothing to check then).
    fingerprints: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Versioned JSON form."""
        optional = {"fingerprints": self.fingerprints} if self.fingerprints else {}
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
            **optional,
        }

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Manifest:
        """Inverse of `to_json`; raises `msgspec.ValidationError` naming a mistyped field."""
        parsed = msgspec.convert(obj, _ManifestSchema, strict=True)
        return Manifest._of(parsed)

    @staticmethod
    def decode(data: bytes) -> Manifest:
        """Parse and validate the bytes of `manifest.json`."""
        return Manifest._of(msgspec.json.decode(data, type=_ManifestSchema, strict=True))

    @staticmethod
    def _of(parsed: _ManifestSchema) -> Manifest:
        if parsed.steps < 0:
            raise msgspec.ValidationError("Expected `int` >= 0 - at `$.steps`")
        for level in parsed.ir_levels:
            if not level or "/" in level or "\\" in level or level.startswith("."):
                raise msgspec.ValidationError(f"IR level {level!r} is not a plain name")
        for place, value in _path_fields(parsed.trace_files, parsed.options, parsed.fingerprints):
            if not isinstance(value, str) or not value:
                raise msgspec.ValidationError(
                    f"Expected a relative path, got {value!r} - at `{place}`"
                )
            if Path(value).is_absolute() or ".." in Path(value).parts or "\\" in value:
                raise msgspec.ValidationError(
                    f"{value!r} points outside the bundle (paths must be relative and stay "
                    f"inside it) - at `{place}`"
                )
        for name, digest in parsed.fingerprints.items():
            if not digest.startswith(FINGERPRINT_PREFIX):
                raise msgspec.ValidationError(
                    f"Expected '{FINGERPRINT_PREFIX}<hex>', got {digest!r} - at "
                    f"`$.fingerprints[{name!r}]`"
                )
        return Manifest(
            framework=parsed.framework,
            model=parsed.model,
            entry=parsed.entry,
            steps=parsed.steps,
            device=parsed.device,
            versions=dict(parsed.versions),
            ir_levels=tuple(parsed.ir_levels),
            trace_files=tuple(parsed.trace_files),
            options=dict(parsed.options),
            created=parsed.created,
            fingerprints=dict(parsed.fingerprints),
        )

    def path_fields(self) -> Iterator[tuple[str, str]]:
        """(JSON path, bundle-relative path) of every file the manifest names."""
        return _path_fields(self.trace_files, self.options, self.fingerprints)

    def option_str(self, name: str, default: str) -> str:
        """A string-valued capture option (the default when absent); a mistyped one is an error."""
        value = self.options.get(name, default)
        if not isinstance(value, str):
            raise BundleError(f"manifest.json: options.{name} must be a string, not {value!r}")
        return value


def _path_fields(
    trace_files: Iterable[str], options: dict[str, Any], fingerprints: dict[str, str]
) -> Iterator[tuple[str, Any]]:
    for index, name in enumerate(trace_files):
        yield f"$.trace_files[{index}]", name
    for option in PATH_OPTIONS:
        if option in options:
            yield f"$.options.{option}", options[option]
    for name in fingerprints:
        yield f"$.fingerprints[{name!r}]", name


def bytes_fingerprint(data: bytes) -> str:
    """`sha256:<hex>` of bytes already read (the same figure as `file_fingerprint`)."""
    return FINGERPRINT_PREFIX + hashlib.sha256(data).hexdigest()


def file_fingerprint(path: Path) -> str:
    """`sha256:<hex>` of a file's bytes."""
    with path.open("rb") as handle:
        return FINGERPRINT_PREFIX + hashlib.file_digest(handle, "sha256").hexdigest()

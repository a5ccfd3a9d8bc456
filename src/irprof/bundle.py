"""The run bundle: the directory `irprof capture` writes and every later command reads.

`RunBundle` is the one loader of a bundle: each file is read once per command (fingerprints are
checked on the bytes that are then parsed), each IR level parsed once, and every path the
manifest names is checked to be a regular file inside the bundle before anything opens it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import orjson

from irprof.coverage import Coverage, load_coverages, save_coverages
from irprof.errors import BundleError
from irprof.fileio import OutputStage, finish_commit, write_bytes_atomic
from irprof.manifest import MANIFEST_LIMIT_BYTES, Manifest, bytes_fingerprint, file_fingerprint

__all__ = ["Manifest", "RunBundle", "file_fingerprint", "fingerprint_files"]

COMMIT_JOURNAL = ".irprof-commit.json"  # renames of a commit in progress (see OutputStage)
LOCK_FILE = ".irprof.lock"  # the advisory lock of commands that update a bundle

if TYPE_CHECKING:
    from iree.compiler.ir import Module as MlirModule

    from irprof.trace.model import Trace


def fingerprint_files(bundle: RunBundle, manifest: Manifest) -> Manifest:
    """`manifest` with the fingerprint of each IR level, trace and option file it names, so
    that `irprof annotate` can tell when one was swapped for another model's afterwards."""
    names = [f"ir/{level}.mlir" for level in manifest.ir_levels]
    names += [name for _, name in manifest.path_fields()]
    return dataclasses.replace(
        manifest,
        fingerprints={
            name: file_fingerprint(bundle.member(name, what="captured file"))
            for name in dict.fromkeys(names)
            if (bundle.root / name).is_file()
        },
    )


class RunBundle:
    """A run bundle on disk, loaded on demand: each file is read and parsed at most once."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"RunBundle({str(self.root)!r})"

    # -- where things are -------------------------------------------------------------------

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

    def is_bundle(self) -> bool:
        """Whether the directory has a manifest (without validating it)."""
        return self.manifest_path.is_file()

    def member(self, relative: str, *, what: str = "file") -> Path:
        """`RUN/<relative>`, refused unless it is a regular file inside the bundle.

        A manifest is input like any other: an absolute path, `..`, or a symlink out of the
        bundle would make irprof read (and annotate, or hang on) a file the user never gave it.
        """
        if not isinstance(relative, str) or not relative:
            raise BundleError(f"{self.manifest_path}: {what} {relative!r} is not a relative path")
        candidate = Path(relative)
        if candidate.is_absolute() or ".." in candidate.parts:
            raise BundleError(
                f"{self.manifest_path}: {what} {relative!r} points outside the bundle; "
                "bundle paths must be relative and stay inside it"
            )
        path = self.root / candidate
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise BundleError(f"{path}: {what} named by manifest.json is missing") from exc
        if not resolved.is_relative_to(self.root.resolve()):
            raise BundleError(
                f"{path}: {what} resolves to {resolved}, outside the bundle; refusing to read it"
            )
        if not resolved.is_file():
            raise BundleError(f"{path}: {what} named by manifest.json is not a regular file")
        return path

    @functools.cached_property
    def _bytes(self) -> dict[str, bytes]:
        return {}

    def read_member(self, relative: str, *, what: str = "file") -> bytes:
        """The bytes of `RUN/<relative>` (checked as `member` does), read from disk once."""
        if relative not in self._bytes:
            path = self.member(relative, what=what)
            try:
                self._bytes[relative] = path.read_bytes()
            except OSError as exc:
                raise BundleError(f"{path}: cannot read {what} ({exc.strerror or exc})") from exc
        return self._bytes[relative]

    def release_member(self, relative: str) -> None:
        """Drop the bytes of `relative` once parsed (a trace can be gigabytes)."""
        self._bytes.pop(relative, None)

    def read_trace_member(self, relative: str, *, what: str = "trace file") -> Trace:
        """The trace file `RUN/<relative>` parsed by its reader, read once."""
        from irprof.readers import read_trace_bytes  # readers pull in numpy and protobuf

        trace = read_trace_bytes(self.member(relative, what=what), self.read_member(relative))
        self.release_member(relative)
        return trace

    # -- what is in it ----------------------------------------------------------------------

    @functools.cached_property
    def _manifest(self) -> Manifest:
        if os.path.lexists(self.root / COMMIT_JOURNAL):
            raise BundleError(
                f"{self.root}: an update is being committed, or was interrupted while committing "
                f"({COMMIT_JOURNAL} is there); try again, or run `irprof annotate {self.root}` "
                "to complete it"
            )
        path = self.manifest_path
        if not path.is_file():
            raise BundleError(
                f"{self.root}: not a run bundle (no manifest.json); run `irprof capture`"
            )
        data = path.read_bytes()[: MANIFEST_LIMIT_BYTES + 1]
        if len(data) > MANIFEST_LIMIT_BYTES:
            raise BundleError(
                f"{path}: larger than {MANIFEST_LIMIT_BYTES >> 20} MB; not a manifest"
            )
        try:
            manifest = Manifest.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            # msgspec reports bad UTF-8 inside a string as UnicodeDecodeError, not DecodeError.
            raise BundleError(f"{path}: malformed manifest: {exc}") from exc
        for place, relative in manifest.path_fields():
            self._check_named_path(place, relative)
        return manifest

    def _check_named_path(self, place: str, relative: str) -> None:
        """Refuse, naming the manifest field, a named file that is a symlink out of the bundle or
        not a regular file; a missing one is reported by whoever needs it."""
        path = self.root / relative
        if not os.path.lexists(path):
            return
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise BundleError(
                f"{self.manifest_path}: {place} = {relative!r} cannot be resolved ({exc})"
            ) from exc
        if not resolved.is_relative_to(self.root.resolve()):
            raise BundleError(
                f"{self.manifest_path}: {place} = {relative!r} resolves to {resolved}, outside "
                "the bundle; refusing to read it"
            )
        if not resolved.is_file():
            raise BundleError(f"{self.manifest_path}: {place} = {relative!r} is not a regular file")

    def manifest(self) -> Manifest:
        """The validated manifest (parsed once)."""
        return self._manifest

    def trace_paths(self) -> list[Path]:
        """The trace files the manifest lists, each checked to be inside the bundle."""
        return [self.member(name, what="trace file") for name in self.manifest().trace_files]

    @functools.cached_property
    def primary_trace_name(self) -> str:
        """The trace the correlators and views read: an XPlane when one is listed (it is the
        richest: node names, HloProtos, tracer options), else the first listed file."""
        names = self.manifest().trace_files
        if not names:
            raise BundleError(f"{self.manifest_path}: lists no trace file")
        return next((name for name in names if name.endswith(".xplane.pb")), names[0])

    @property
    def primary_trace_path(self) -> Path:
        """`RUN/<primary_trace_name>`, checked to be a file inside the bundle."""
        return self.member(self.primary_trace_name, what="trace file")

    @functools.cached_property
    def _trace(self) -> Trace:
        return self.read_trace_member(self.primary_trace_name)

    def trace(self) -> Trace:
        """The primary trace, read once."""
        return self._trace

    @functools.cached_property
    def _modules(self) -> dict[str, MlirModule]:
        return {}

    def ir(self, level: str) -> MlirModule:
        """`RUN/ir/<level>.mlir` parsed once into a context of its own. Correlators only read
        it; `irprof annotate` then attaches the profile to this very module."""
        if level not in self._modules:
            from irprof.mlir.context import make_context
            from irprof.mlir.load import load_module

            if level not in self.manifest().ir_levels and not self.ir_path(level).is_file():
                raise BundleError(
                    f"{self.root}: no IR level {level!r} (present: "
                    f"{', '.join(self.manifest().ir_levels) or 'none'})"
                )
            relative = f"ir/{level}.mlir"
            what = f"IR level {level!r}"
            path = self.member(relative, what=what)
            data = self.read_member(relative, what=what)
            self._modules[level] = load_module(path, make_context(), data=data)
            self.release_member(relative)
        return self._modules[level]

    def forget_ir(self, level: str) -> None:
        """Drop the parsed `level` (annotating changed it), so `ir(level)` parses the file again."""
        self._modules.pop(level, None)

    def check_fingerprints(self, names: Iterable[str]) -> None:
        """Refuse a file among `names` whose bytes differ from the fingerprint recorded at
        capture (or that was added to the manifest afterwards). Bundles without fingerprints
        (written before they existed) pass: the coverage check stays the next line of defence."""
        recorded = self.manifest().fingerprints
        if not recorded:
            return
        for name in dict.fromkeys(names):
            expected = recorded.get(name)
            if expected is None and not os.path.lexists(self.root / name):
                continue  # an optional file the capture did not write; its reader reports it
            path = self.member(name, what="captured file")
            data = self.read_member(name, what="captured file")
            if expected is None:
                raise BundleError(
                    f"{path}: not fingerprinted at capture (the manifest was edited to name "
                    "another file); re-capture, or pass --allow-mismatch to use it anyway"
                )
            if bytes_fingerprint(data) != expected:
                raise BundleError(
                    f"{path}: changed since capture (its sha256 differs from the manifest's "
                    "fingerprint), so it may come from another model or run; re-capture, or "
                    "pass --allow-mismatch to annotate it anyway"
                )

    @functools.cached_property
    def _coverages(self) -> dict[str, Coverage]:
        if not os.path.lexists(self.coverage_path):
            return {}
        path = self.member("coverage.json", what="coverage record")
        return load_coverages(path)

    def coverages(self) -> dict[str, Coverage]:
        """`coverage.json` by level ({} before any annotate)."""
        return dict(self._coverages)

    def coverage(self, level: str) -> Coverage | None:
        """The coverage record of `level`, if it was annotated."""
        return self._coverages.get(level)

    def annotated_levels(self) -> list[str]:
        """Levels with `RUN/annotated/<level>.mlir`, in the manifest's lowering order."""
        folder = self.root / "annotated"
        if folder.exists() and not folder.is_dir():
            raise BundleError(f"{folder}: expected a directory of annotated IR, found a file")
        present = {
            self.member(f"annotated/{path.name}", what="annotated IR").stem
            for path in folder.glob("*.mlir")
            if not path.is_dir()
        }
        ordered = [level for level in self.manifest().ir_levels if level in present]
        return ordered + sorted(present - set(ordered))

    # -- writing ------------------------------------------------------------------------------

    def write_manifest(self, manifest: Manifest) -> None:
        """Write `manifest.json` atomically."""
        write_bytes_atomic(
            self.manifest_path, orjson.dumps(manifest.to_json(), option=orjson.OPT_INDENT_2)
        )
        self.__dict__.pop("_manifest", None)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the bundle's advisory lock (`flock` on `RUN/.irprof.lock`): commands that
        update the bundle take it, so two `annotate`s of one bundle never lose a record."""
        path = self.root / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise BundleError(
                f"{path}: cannot open the bundle's lock file ({os.strerror(exc.errno or 0)})"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.complete_interrupted_update(locked=True)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def complete_interrupted_update(self, *, locked: bool = False) -> int:
        """Finish the renames of a commit that was killed half-way (its journal lists them),
        under the bundle's lock; returns how many files were completed (0: nothing pending)."""
        journal = self.root / COMMIT_JOURNAL
        if not os.path.lexists(journal):
            return 0
        if not locked:
            with self.locked():  # taking the lock completes it
                return 0
        done = finish_commit(journal)
        self.__dict__.pop("_manifest", None)
        return done

    def _coverages_on_disk(self) -> dict[str, Coverage]:
        """`coverage.json` as it is now (another command may have merged a level since)."""
        if not os.path.lexists(self.coverage_path):
            return {}
        return load_coverages(self.member("coverage.json", what="coverage record"))

    def record_coverage(self, coverage: Coverage, stage: OutputStage | None = None) -> None:
        """Merge `coverage` into `coverage.json` under its level, re-read under the bundle's
        lock; with `stage`, its other outputs are committed with the record, under the lock."""
        with self.locked():
            merged = {**self._coverages_on_disk(), coverage.level: coverage}
            if stage is None:
                save_coverages(self.coverage_path, merged)
            else:
                save_coverages(stage.path(self.coverage_path), merged)
                stage.commit(journal=self.root / COMMIT_JOURNAL)
        self.__dict__["_coverages"] = merged

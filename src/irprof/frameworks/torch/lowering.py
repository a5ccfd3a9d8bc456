"""torch-dialect -> linalg-on-tensors, keeping every op traceable to its origin.

The capture lowers the written torch level in a child process (`lower_file`): torch-mlir's
passes can abort the process (HF Reformer: "LLVM ERROR: out of memory"), and a crash there
must cost the linalg level only, not the capture.
Design notes: docs/pytorch.md, "Module notes", `frameworks/torch/lowering.py`.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
from iree.compiler import ir, passmanager

from irprof.errors import PipelineError
from irprof.fileio import write_text_atomic
from irprof.frameworks.torch.locations import FxNodeName
from irprof.mlir.copy_loc_to_body import copy_loc_to_body
from irprof.mlir.keys import innermost_source, runtime_names
from irprof.mlir.locations import from_ir
from irprof.mlir.stamp_origin import stamp_origin

TORCH_LEVEL = "torch"
LINALG_STAGE = "torch -> linalg lowering"
TORCH_TO_LINALG_PIPELINE = (
    "builtin.module(torchdynamo-export-to-torch-backend-pipeline,"
    "torch-backend-to-linalg-on-tensors-backend-pipeline)"
)


@dataclass(frozen=True)
class FailedOp:
    """An op a lowering diagnostic names: its FX call (from its NameLoc), source and message."""

    node: str  # FX node, "" when the location names none
    target: str  # ATen target of the node (`aten.diff.default`), "" when unknown
    source: str  # innermost file:line:col of the location, "" when none
    message: str  # the diagnostic's first line

    def describe(self) -> str:
        """`aten.diff.default (FX node diff, at f.py:8:0): failed to legalize ...`."""
        where = ", ".join(
            part
            for part in (self.node and f"FX node {self.node}", self.source and f"at {self.source}")
            if part
        )
        head = self.target or "an op"
        return f"{head}{f' ({where})' if where else ''}: {self.message}"


class LoweringError(PipelineError):
    """The lowering pipeline failed; `failed_ops` are the ops its error diagnostics name."""

    def __init__(self, message: str, failed_ops: tuple[FailedOp, ...]) -> None:
        super().__init__(message)
        self.failed_ops = failed_ops


def failed_op(diagnostic: ir.DiagnosticInfo) -> FailedOp:
    """The FX call and source of the op an error diagnostic is located at."""
    loc = from_ir(diagnostic.location)
    name = next(
        (parsed for n in runtime_names(loc) if (parsed := FxNodeName.parse(n)) is not None), None
    )
    message = (str(diagnostic.message).splitlines() or [""])[0][:400]
    return FailedOp(
        name.node if name else "", name.target if name else "", innermost_source(loc) or "", message
    )


def stamp_torch_level(module: ir.Module) -> None:
    """Wrap every torch op's location in its origin stamp (`torch#<walk index>`)."""
    stamp_origin(module.operation, TORCH_LEVEL)


def lower_torch_to_linalg(module: ir.Module) -> None:
    """Lower a stamped torch-dialect module to linalg on tensors, in place."""
    with module.context:
        try:
            manager = passmanager.PassManager.parse(TORCH_TO_LINALG_PIPELINE)
            manager.run(module.operation)
        except ir.MLIRError as exc:
            failed = tuple(failed_op(d) for d in exc.error_diagnostics)
            raise LoweringError(f"{LINALG_STAGE} failed: {exc}", failed) from exc
    copy_loc_to_body(module.operation)


# The child's exit code when the pipeline reported errors (its stdout then holds them as JSON).
LOWERING_FAILED = 3


def lower_file(torch_path: Path, linalg_path: Path) -> None:
    """Lower the torch-level file into `linalg_path` in a child process; a LoweringError names
    the failed ops, or says the lowering crashed and how (a signal, its last output)."""
    completed = subprocess.run(
        [sys.executable, "-m", __name__, str(torch_path), str(linalg_path)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    if completed.returncode == 0:
        return
    if completed.returncode == LOWERING_FAILED:
        reported = orjson.loads(completed.stdout)
        failed = tuple(FailedOp(**op) for op in reported["failed"])
        raise LoweringError(str(reported["message"]), failed)
    code = completed.returncode
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    last = [line for line in completed.stderr.splitlines() if line.strip()][-2:]
    said = f": {' / '.join(last)}" if last else ""
    raise LoweringError(f"{LINALG_STAGE} crashed ({how}){said}", ())


def main(argv: list[str]) -> int:
    """`python -m irprof.frameworks.torch.lowering TORCH.mlir LINALG.mlir`."""
    torch_path, linalg_path = Path(argv[0]), Path(argv[1])
    with ir.Context() as context:
        module = ir.Module.parse(torch_path.read_text(), context)
        try:
            lower_torch_to_linalg(module)
        except LoweringError as error:
            failed = [dataclasses.asdict(op) for op in error.failed_ops]
            sys.stdout.write(orjson.dumps({"message": str(error), "failed": failed}).decode())
            return LOWERING_FAILED
        write_text_atomic(linalg_path, module.operation.get_asm(enable_debug_info=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

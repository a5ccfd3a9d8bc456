"""The single place that creates an MLIR bindings context for irprof."""

from __future__ import annotations

import os

from iree.compiler import ir

# "0" runs MLIR single-threaded. A process that forks after MLIR used its thread pool leaves the
# child waiting forever on the pool's threads, which do not exist there (mutation testing forks
# one child per mutant: `make mutation` sets this).
THREADS_ENV = "IRPROF_MLIR_THREADS"


def make_context() -> ir.Context:
    """A fresh context where TF's generic `tf.*` ops and `!tf_type.*` types parse.

    `ir.Context()` of iree-base-compiler already registers stablehlo, torch, tosa, linalg, llvm and
    IREE's flow/hal/util; unregistered dialects are allowed on top so TensorFlow IR (printed in
    generic form) loads next to them. Multithreading stays on (parse/print are MLIR's own work)
    unless `IRPROF_MLIR_THREADS=0`.
    """
    context = ir.Context()
    context.allow_unregistered_dialects = True
    if os.environ.get(THREADS_ENV) == "0":
        context.enable_multithreading(False)
    return context

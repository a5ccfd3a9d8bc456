"""The single place that creates an MLIR bindings context for irprof."""

from __future__ import annotations

from iree.compiler import ir


def make_context() -> ir.Context:
    """A fresh context where TF's generic `tf.*` ops and `!tf_type.*` types parse.

    `ir.Context()` of iree-base-compiler already registers stablehlo, torch, tosa, linalg, llvm and
    IREE's flow/hal/util; unregistered dialects are allowed on top so TensorFlow IR (printed in
    generic form) loads next to them. Multithreading stays on: parse/print are MLIR's own work.
    """
    context = ir.Context()
    context.allow_unregistered_dialects = True
    return context

"""IREE for llvm-cpu with per-dispatch HAL profiles: capture, source and flow levels, tuning.

Capture side: `capture`, `tools`, `inputs`, and `backend`, the one module other frameworks may
import (`capture jax|torch --backend iree`). Correlation side: `correlate`, `dispatch`, `sites`,
`absorbed`, `reasons`, and `irprof tune`'s `tune`, `tune_space`, `tune_measure`. See
docs/iree.md and docs/tuning.md.
"""

"""IREE for llvm-cpu with per-dispatch HAL profiles: capture, source and flow levels.

Capture side: `capture`, `tools`, `inputs`, and `backend`, the one module other frameworks may
import (`capture jax|torch --backend iree`). Correlation side: `correlate`, `dispatch`, `sites`,
`absorbed`, `reasons`. See docs/iree.md.
"""

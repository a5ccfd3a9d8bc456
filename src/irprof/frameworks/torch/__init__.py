"""PyTorch under torch.profiler: torch.export + FX importer, the torch and linalg levels.

Capture side: `capture`, `runner` and `steps_runner` (the only modules importing torch),
`locations`, `lowering`, `view_replay`. Correlation side: `correlate`, `events`, `linalg`,
`reference`, `training`. See docs/pytorch.md.
"""

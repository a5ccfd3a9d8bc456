"""JAX on XLA:CPU under jax.profiler: capture, the StableHLO level, thunk -> HLO -> op correlation.

Capture side: `capture`, `runner` and `steps_runner` (the only modules importing jax). Correlation
side: `correlate`, `hlo` (the HloProto schema in `hlo_proto/`), `attribution`, `ir_index`,
`orphans`, `training`. See docs/jax.md.
"""

"""MLIR core: one bindings context, load/print, the location model, keys and the annotation API."""

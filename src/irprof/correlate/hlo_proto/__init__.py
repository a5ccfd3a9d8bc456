"""Generated protobuf classes for the subset of XLA's `HloProto` irprof reads (see hlo.proto)."""

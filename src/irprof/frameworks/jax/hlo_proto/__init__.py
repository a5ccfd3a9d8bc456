"""The HloProto subset irprof reads, shared with TensorFlow: now `irprof.correlate.hlo_proto`."""

from irprof.correlate.hlo_proto import hlo_pb2

__all__ = ["hlo_pb2"]

"""The XLA program decoder, shared with TensorFlow's XLA clusters: now `irprof.correlate.hlo`."""

from irprof.correlate.hlo import (
    DATA_MOVEMENT_OPCODES,
    FUSING_OPCODES,
    HloInstructionInfo,
    HloModuleInfo,
    decode_hlo_proto,
    instruction_flops,
    parse_hlo_text,
)

__all__ = [
    "DATA_MOVEMENT_OPCODES",
    "FUSING_OPCODES",
    "HloInstructionInfo",
    "HloModuleInfo",
    "decode_hlo_proto",
    "instruction_flops",
    "parse_hlo_text",
]

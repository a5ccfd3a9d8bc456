# ruff: noqa
# mypy: ignore-errors
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    element_type: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    def __init__(
        self,
        element_type: _Optional[int] = ...,
        dimensions: _Optional[_Iterable[int]] = ...,
        tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ...,
    ) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = (
        "op_type",
        "op_name",
        "source_file",
        "source_line",
        "deduplicated_name",
        "stack_frame_id",
        "scheduling_name",
        "source_end_line",
        "source_column",
        "source_end_column",
    )
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_NAME_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_END_LINE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_COLUMN_FIELD_NUMBER: _ClassVar[int]
    SOURCE_END_COLUMN_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    source_file: str
    source_line: int
    deduplicated_name: str
    stack_frame_id: int
    scheduling_name: str
    source_end_line: int
    source_column: int
    source_end_column: int
    def __init__(
        self,
        op_type: _Optional[str] = ...,
        op_name: _Optional[str] = ...,
        source_file: _Optional[str] = ...,
        source_line: _Optional[int] = ...,
        deduplicated_name: _Optional[str] = ...,
        stack_frame_id: _Optional[int] = ...,
        scheduling_name: _Optional[str] = ...,
        source_end_line: _Optional[int] = ...,
        source_column: _Optional[int] = ...,
        source_end_column: _Optional[int] = ...,
    ) -> None: ...

class DotDimensionNumbers(_message.Message):
    __slots__ = (
        "lhs_contracting_dimensions",
        "rhs_contracting_dimensions",
        "lhs_batch_dimensions",
        "rhs_batch_dimensions",
    )
    LHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    LHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    lhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    lhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(
        self,
        lhs_contracting_dimensions: _Optional[_Iterable[int]] = ...,
        rhs_contracting_dimensions: _Optional[_Iterable[int]] = ...,
        lhs_batch_dimensions: _Optional[_Iterable[int]] = ...,
        rhs_batch_dimensions: _Optional[_Iterable[int]] = ...,
    ) -> None: ...

class ConvolutionDimensionNumbers(_message.Message):
    __slots__ = ("kernel_input_feature_dimension", "kernel_output_feature_dimension")
    KERNEL_INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    def __init__(
        self,
        kernel_input_feature_dimension: _Optional[int] = ...,
        kernel_output_feature_dimension: _Optional[int] = ...,
    ) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = (
        "name",
        "opcode",
        "shape",
        "metadata",
        "fusion_kind",
        "dimensions",
        "convolution_dimension_numbers",
        "dot_dimension_numbers",
        "id",
        "operand_ids",
        "called_computation_ids",
        "feature_group_count",
    )
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    opcode: str
    shape: ShapeProto
    metadata: OpMetadata
    fusion_kind: str
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    convolution_dimension_numbers: ConvolutionDimensionNumbers
    dot_dimension_numbers: DotDimensionNumbers
    id: int
    operand_ids: _containers.RepeatedScalarFieldContainer[int]
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    feature_group_count: int
    def __init__(
        self,
        name: _Optional[str] = ...,
        opcode: _Optional[str] = ...,
        shape: _Optional[_Union[ShapeProto, _Mapping]] = ...,
        metadata: _Optional[_Union[OpMetadata, _Mapping]] = ...,
        fusion_kind: _Optional[str] = ...,
        dimensions: _Optional[_Iterable[int]] = ...,
        convolution_dimension_numbers: _Optional[
            _Union[ConvolutionDimensionNumbers, _Mapping]
        ] = ...,
        dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ...,
        id: _Optional[int] = ...,
        operand_ids: _Optional[_Iterable[int]] = ...,
        called_computation_ids: _Optional[_Iterable[int]] = ...,
        feature_group_count: _Optional[int] = ...,
    ) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "id", "root_id", "is_fusion_computation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    IS_FUSION_COMPUTATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    id: int
    root_id: int
    is_fusion_computation: bool
    def __init__(
        self,
        name: _Optional[str] = ...,
        instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ...,
        id: _Optional[int] = ...,
        root_id: _Optional[int] = ...,
        is_fusion_computation: _Optional[bool] = ...,
    ) -> None: ...

class StackFrameIndexProto(_message.Message):
    __slots__ = ("file_names", "function_names", "file_locations", "stack_frames")
    class FileLocation(_message.Message):
        __slots__ = ("file_name_id", "function_name_id", "line", "column", "end_line", "end_column")
        FILE_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COLUMN_FIELD_NUMBER: _ClassVar[int]
        END_LINE_FIELD_NUMBER: _ClassVar[int]
        END_COLUMN_FIELD_NUMBER: _ClassVar[int]
        file_name_id: int
        function_name_id: int
        line: int
        column: int
        end_line: int
        end_column: int
        def __init__(
            self,
            file_name_id: _Optional[int] = ...,
            function_name_id: _Optional[int] = ...,
            line: _Optional[int] = ...,
            column: _Optional[int] = ...,
            end_line: _Optional[int] = ...,
            end_column: _Optional[int] = ...,
        ) -> None: ...

    class StackFrame(_message.Message):
        __slots__ = ("file_location_id", "parent_frame_id")
        FILE_LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
        PARENT_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_location_id: int
        parent_frame_id: int
        def __init__(
            self, file_location_id: _Optional[int] = ..., parent_frame_id: _Optional[int] = ...
        ) -> None: ...

    FILE_NAMES_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAMES_FIELD_NUMBER: _ClassVar[int]
    FILE_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    file_names: _containers.RepeatedScalarFieldContainer[str]
    function_names: _containers.RepeatedScalarFieldContainer[str]
    file_locations: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.FileLocation]
    stack_frames: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.StackFrame]
    def __init__(
        self,
        file_names: _Optional[_Iterable[str]] = ...,
        function_names: _Optional[_Iterable[str]] = ...,
        file_locations: _Optional[
            _Iterable[_Union[StackFrameIndexProto.FileLocation, _Mapping]]
        ] = ...,
        stack_frames: _Optional[_Iterable[_Union[StackFrameIndexProto.StackFrame, _Mapping]]] = ...,
    ) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = (
        "name",
        "entry_computation_name",
        "computations",
        "id",
        "entry_computation_id",
        "stack_frame_index",
    )
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    id: int
    entry_computation_id: int
    stack_frame_index: StackFrameIndexProto
    def __init__(
        self,
        name: _Optional[str] = ...,
        entry_computation_name: _Optional[str] = ...,
        computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ...,
        id: _Optional[int] = ...,
        entry_computation_id: _Optional[int] = ...,
        stack_frame_index: _Optional[_Union[StackFrameIndexProto, _Mapping]] = ...,
    ) -> None: ...

class HloProto(_message.Message):
    __slots__ = ("hlo_module",)
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ...) -> None: ...

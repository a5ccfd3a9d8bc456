# ruff: noqa
# mypy: ignore-errors
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class XSpaceView(_message.Message):
    __slots__ = ("planes",)
    PLANES_FIELD_NUMBER: _ClassVar[int]
    planes: _containers.RepeatedCompositeFieldContainer[XPlaneView]
    def __init__(
        self, planes: _Optional[_Iterable[_Union[XPlaneView, _Mapping]]] = ...
    ) -> None: ...

class XPlaneView(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[XLineView]
    def __init__(self, lines: _Optional[_Iterable[_Union[XLineView, _Mapping]]] = ...) -> None: ...

class XLineView(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[XEventView]
    def __init__(
        self, events: _Optional[_Iterable[_Union[XEventView, _Mapping]]] = ...
    ) -> None: ...

class XEventView(_message.Message):
    __slots__ = ("metadata_id", "offset_ps", "duration_ps", "stats")
    METADATA_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_PS_FIELD_NUMBER: _ClassVar[int]
    DURATION_PS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    metadata_id: int
    offset_ps: int
    duration_ps: int
    stats: XStatPeek
    def __init__(
        self,
        metadata_id: _Optional[int] = ...,
        offset_ps: _Optional[int] = ...,
        duration_ps: _Optional[int] = ...,
        stats: _Optional[_Union[XStatPeek, _Mapping]] = ...,
    ) -> None: ...

class XStatPeek(_message.Message):
    __slots__ = ("metadata_id",)
    METADATA_ID_FIELD_NUMBER: _ClassVar[int]
    metadata_id: int
    def __init__(self, metadata_id: _Optional[int] = ...) -> None: ...

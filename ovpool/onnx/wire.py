"""Sizes read off an ONNX model's protobuf wire format, without copying what they measure.

protobuf hands a ``bytes`` field over as a fresh copy: ``len(tensor.raw_data)`` copies the
weights (a 54 MB model's initializers: ~26 ms) only to count them. The serialized model holds each
length as a varint before the bytes; ``raw_data_sizes`` reads those instead.
"""

from __future__ import annotations

from collections.abc import Iterator

# Field numbers of onnx.proto: ModelProto.graph, GraphProto.initializer, TensorProto.raw_data.
_GRAPH = 7
_INITIALIZER = 5
_RAW_DATA = 9
_LENGTH_DELIMITED = 2


class _NotWire(ValueError):
    """Bytes that are not the wire format this module reads (truncated, a group, a varint too long)."""


def raw_data_sizes(data: bytes) -> list[int | None] | None:
    """The byte count of each main-graph initializer's ``raw_data`` in the serialized ModelProto
    ``data``, in order (None: that initializer has no ``raw_data``), by protobuf's rules: the
    model's ``graph`` fields are merged (the initializers of a second one follow the first's) and
    of two ``raw_data`` fields of one tensor the last counts; a field of another wire type than
    its declared one is an unknown field. A model of one initializer holding 12 bytes of raw data
    gives ``[12]``. None when ``data`` is not wire format this reads (a group, a truncated field):
    the caller then asks protobuf."""
    sizes: list[int | None] = []
    try:
        for number, kind, start, end in _fields(data, 0, len(data)):
            if number != _GRAPH or kind != _LENGTH_DELIMITED:
                continue
            for inner, inner_kind, begin, finish in _fields(data, start, end):
                if inner == _INITIALIZER and inner_kind == _LENGTH_DELIMITED:
                    sizes.append(_raw_size(data, begin, finish))
    except _NotWire:
        return None
    return sizes


def _raw_size(data: bytes, start: int, end: int) -> int | None:
    """The length of the last ``raw_data`` field of the TensorProto at ``data[start:end]``."""
    size = None
    for number, kind, begin, finish in _fields(data, start, end):
        if number == _RAW_DATA and kind == _LENGTH_DELIMITED:
            size = finish - begin
    return size


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start, end of its value) of each field of the message at
    ``data[start:end]``; a field reaching past ``end`` or a group is ``_NotWire``."""
    position = start
    while position < end:
        key, position = _varint(data, position, end)
        number, kind = key >> 3, key & 7
        begin = position
        if kind == 0:
            _, position = _varint(data, position, end)
        elif kind == 1:
            position += 8
        elif kind == 5:
            position += 4
        elif kind == _LENGTH_DELIMITED:
            length, begin = _varint(data, position, end)
            position = begin + length
        else:
            raise _NotWire(f"wire type {kind} at byte {position}")
        if position > end or number == 0:
            raise _NotWire(f"field {number} at byte {begin} ends past its message")
        yield number, kind, begin, position


def _varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    """The varint at ``data[position]`` and the position after it (at most 10 bytes, before ``end``)."""
    value = shift = 0
    while position < end and shift < 70:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise _NotWire(f"a varint unfinished at byte {position}")

"""An ONNX model's protobuf wire format read without copying its weights.

protobuf hands a ``bytes`` field over as a fresh copy: ``len(tensor.raw_data)`` copies the
weights (a 54 MB model's initializers: ~26 ms) only to count them. The serialized model holds each
length as a varint before the bytes; ``raw_data_sizes`` reads those instead. ``without_weights``
copies the model without the raw data of the initializers and Constant nodes it is asked to
leave out, reading the file by ranges (``FileBytes``): a 54 MB model's structure (21 KB) in
~1 ms, where reading and parsing the whole file take ~55 ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ovpool.files import read_at

# Field numbers of onnx.proto: ModelProto.graph; GraphProto.node and initializer; NodeProto.op_type,
# attribute and domain; AttributeProto.name and t; TensorProto.data_type and raw_data.
_GRAPH = 7
_NODE = 1
_INITIALIZER = 5
_OP_TYPE = 4
_ATTRIBUTE = 5
_DOMAIN = 7
_NAME = 1
_T = 5
_DATA_TYPE = 2
_RAW_DATA = 9
_VARINT = 0
_LENGTH_DELIMITED = 2
_EMPTY_RAW_DATA = bytes([_RAW_DATA << 3 | _LENGTH_DELIMITED, 0])
# A node this short holds no weight worth leaving out (a Constant of 1024 float16 values takes 2 KiB).
_SMALL_NODE = 2048


class FileBytes:
    """A file's bytes as this module reads them, fetched by ranges (``ovpool.files.read_at``) and never held
    whole: ``data[i]`` (through a window of 4 KiB) and ``data.read(start, end)``. A file that
    ends before its size said (it shrank while read) is ``NotWire``."""

    _WINDOW = 4096

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self._fd = handle.fileno()
        self._size = size
        self._start = 0
        self._window = b""

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: int) -> int:
        offset = key - self._start
        if not 0 <= offset < len(self._window):
            window = self.read(key, min(key + self._WINDOW, self._size))
            self._start, self._window = key, window
            offset = 0
        return self._window[offset]

    def read(self, start: int, end: int) -> bytes:
        offset = start - self._start
        if 0 <= offset and end - self._start <= len(self._window):
            return self._window[offset : end - self._start]
        data = read_at(self._fd, start, end - start)
        if len(data) != end - start:
            raise NotWire(f"the file ends at byte {start + len(data)}, before its size ({self._size})")
        return data


# What this module reads: the bytes, or a file's bytes by ranges.
Bytes = bytes | FileBytes


class NotWire(ValueError):
    """Bytes that are not the wire format this module reads (truncated, a group, a varint too long)."""


@dataclass(frozen=True)
class Apart:
    """``without_weights``' result: ``data``, the serialized model with each left-out raw data
    empty; ``sizes``, every main-graph initializer's raw data size in order (None: it has none);
    ``extents``, where the raw data left out lies in the source, (start, end) by initializer
    index (None: kept); ``constants``, the same of the Constant nodes' ``value`` tensors, by node
    index in the main graph."""

    data: bytes
    sizes: list[int | None]
    extents: list[tuple[int, int] | None]
    constants: dict[int, tuple[int, int]]


def without_weights(data: Bytes, leave_out: Callable[[int, int], bool]) -> Apart:
    """The serialized ModelProto ``data`` with the raw data of each main-graph initializer, and
    of each main-graph Constant node's ``value``, for which ``leave_out(data_type, byte count)``
    holds replaced by an empty one, every other byte as it is (fields in their order: protobuf
    reads the copy as the model, the merging of two ``graph`` fields and unknown fields included).
    A tensor with two ``raw_data`` fields keeps the last (protobuf's rule); its earlier ones are
    dropped. A node of at most ``_SMALL_NODE`` bytes is copied unread. ``NotWire`` when ``data``
    is not wire format this reads."""
    model = _Pieces(data)
    sizes: list[int | None] = []
    extents: list[tuple[int, int] | None] = []
    constants: dict[int, tuple[int, int]] = {}
    nodes = 0
    for number, kind, key, start, end in _fields(data, 0, len(data)):
        if number != _GRAPH or kind != _LENGTH_DELIMITED:
            model.span(key, end)
            continue
        graph = _Pieces(data)
        for inner, inner_kind, inner_key, begin, finish in _fields(data, start, end):
            if inner_kind != _LENGTH_DELIMITED or inner not in (_INITIALIZER, _NODE):
                graph.span(inner_key, finish)
                continue
            if inner == _INITIALIZER:
                tensor, size, extent = _tensor_apart(data, begin, finish, leave_out)
                sizes.append(size)
                extents.append(extent)
            else:
                tensor, extent = _constant_apart(data, begin, finish, leave_out) if finish - begin > _SMALL_NODE else (None, None)
                if extent is not None:
                    constants[nodes] = extent
                nodes += 1
            if tensor is None:
                graph.span(inner_key, finish)
            else:
                graph.literal(_field(inner, tensor))
        model.literal(_field(_GRAPH, graph.joined()))
    return Apart(model.joined(), sizes, extents, constants)


class _Pieces:
    """Bytes made of spans of the source (adjacent ones read as one) and new bytes."""

    def __init__(self, data: Bytes) -> None:
        self._data = data
        self._parts: list[bytes | tuple[int, int]] = []

    def span(self, start: int, end: int) -> None:
        last = self._parts[-1] if self._parts else None
        if isinstance(last, tuple) and last[1] == start:
            self._parts[-1] = (last[0], end)
        else:
            self._parts.append((start, end))

    def literal(self, value: bytes) -> None:
        self._parts.append(value)

    def joined(self) -> bytes:
        return b"".join(p if isinstance(p, bytes) else _slice(self._data, *p) for p in self._parts)


def _constant_apart(
    data: Bytes, start: int, end: int, leave_out: Callable[[int, int], bool]
) -> tuple[bytes | None, tuple[int, int] | None]:
    """(the NodeProto at ``data[start:end]`` without its raw data, or None to keep it as it is;
    where that raw data lies when left out): a default-domain Constant node whose one ``value``
    attribute holds one tensor (a second ``t`` field would be merged into the first)."""
    fields = list(_fields(data, start, end))
    op_type = domain = b""
    values = []
    for number, kind, _key, begin, finish in fields:
        if kind != _LENGTH_DELIMITED:
            continue
        if number == _OP_TYPE:
            op_type = _slice(data, begin, finish)
        elif number == _DOMAIN:
            domain = _slice(data, begin, finish)
        elif number == _ATTRIBUTE and _attribute_name(data, begin, finish) == b"value":
            values.append((begin, finish))
    if op_type != b"Constant" or domain not in (b"", b"ai.onnx") or len(values) != 1:
        return None, None
    attribute = list(_fields(data, *values[0]))
    tensors = [(begin, finish) for number, kind, _key, begin, finish in attribute if number == _T and kind == _LENGTH_DELIMITED]
    if len(tensors) != 1:
        return None, None
    tensor, _size, extent = _tensor_apart(data, *tensors[0], leave_out)
    if tensor is None:
        return None, None
    node = _Pieces(data)
    for _number, _kind, key, begin, finish in fields:
        if (begin, finish) != values[0]:
            node.span(key, finish)
            continue
        inner = _Pieces(data)
        for _field_number, _field_kind, field_key, first, last in attribute:
            if (first, last) == tensors[0]:
                inner.literal(_field(_T, tensor))
            else:
                inner.span(field_key, last)
        node.literal(_field(_ATTRIBUTE, inner.joined()))
    return node.joined(), extent


def _attribute_name(data: Bytes, start: int, end: int) -> bytes:
    """The (last) ``name`` of the AttributeProto at ``data[start:end]``."""
    name = b""
    for number, kind, _key, begin, finish in _fields(data, start, end):
        if number == _NAME and kind == _LENGTH_DELIMITED and finish - begin <= 8:
            name = _slice(data, begin, finish)
    return name


def _tensor_apart(
    data: Bytes, start: int, end: int, leave_out: Callable[[int, int], bool]
) -> tuple[bytes | None, int | None, tuple[int, int] | None]:
    """(the TensorProto at ``data[start:end]`` without its raw data, or None to keep it as it
    is; its raw data size; where that raw data lies when left out)."""
    fields = list(_fields(data, start, end))
    data_type = 0
    raw: tuple[int, int] | None = None
    for number, kind, _key, begin, finish in fields:
        if number == _RAW_DATA and kind == _LENGTH_DELIMITED:
            raw = (begin, finish)
        elif number == _DATA_TYPE and kind == _VARINT:
            data_type = _varint(data, begin, finish)[0]
    if raw is None:
        return None, None, None
    size = raw[1] - raw[0]
    if not leave_out(data_type, size):
        return None, size, None
    kept = _Pieces(data)
    for number, kind, key, _begin, finish in fields:
        if not (number == _RAW_DATA and kind == _LENGTH_DELIMITED):
            kept.span(key, finish)
    return kept.joined() + _EMPTY_RAW_DATA, size, raw


def _slice(data: Bytes, start: int, end: int) -> bytes:
    return data.read(start, end) if isinstance(data, FileBytes) else bytes(data[start:end])


def _field(number: int, value: bytes) -> bytes:
    """A length-delimited field: its key, the length, the value."""
    return _encoded(number << 3 | _LENGTH_DELIMITED) + _encoded(len(value)) + value


def _encoded(value: int) -> bytes:
    """``value`` as a varint: 300 is ``ac 02``."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


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
        for number, kind, _key, start, end in _fields(data, 0, len(data)):
            if number != _GRAPH or kind != _LENGTH_DELIMITED:
                continue
            for inner, inner_kind, _inner_key, begin, finish in _fields(data, start, end):
                if inner == _INITIALIZER and inner_kind == _LENGTH_DELIMITED:
                    sizes.append(_raw_size(data, begin, finish))
    except NotWire:
        return None
    return sizes


def _raw_size(data: bytes, start: int, end: int) -> int | None:
    """The length of the last ``raw_data`` field of the TensorProto at ``data[start:end]``."""
    size = None
    for number, kind, _key, begin, finish in _fields(data, start, end):
        if number == _RAW_DATA and kind == _LENGTH_DELIMITED:
            size = finish - begin
    return size


def _fields(data: Bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, start of its key, start and end of its value) of each field of
    the message at ``data[start:end]``; a field reaching past ``end`` or a group is ``NotWire``."""
    position = start
    while position < end:
        at = position
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
            raise NotWire(f"wire type {kind} at byte {position}")
        if position > end or number == 0:
            raise NotWire(f"field {number} at byte {begin} ends past its message")
        yield number, kind, at, begin, position


def _varint(data: Bytes, position: int, end: int) -> tuple[int, int]:
    """The varint at ``data[position]`` and the position after it (at most 10 bytes, before ``end``)."""
    value = shift = 0
    while position < end and shift < 70:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise NotWire(f"a varint unfinished at byte {position}")

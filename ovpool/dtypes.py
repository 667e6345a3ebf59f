"""Element types: the one table of how each world spells a tensor's element type.

ovpool's own spelling is numpy's dtype name ("float32"). Each row gives the same type as ONNX's
``TensorProto`` element type (1), its size in bytes (4), the IR port precision ("FP32"), the IR
``element_type`` and OpenVINO ``Type`` name ("f32"), DirectML's ``DML_TENSOR_DATA_TYPE_FLOAT32`` and
Python's ``struct`` code ("f"), so ``ir_precision("float32") == "FP32"`` and ``from_ir_type("f32")
== "float32"``. A type a world does not have is ``None`` there (DirectML has no bfloat16 or bool;
``struct`` no bfloat16).

Importing this module imports neither numpy nor onnx (``ovpool validate`` reads IR types without
them); :func:`np_dtype` imports numpy when it is first called.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ovpool.errors import UnsupportedError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class ElementType:
    """One element type in every world's spelling (None: that world has no such type)."""

    name: str
    onnx: int
    itemsize: int
    ir_precision: str
    ir_type: str
    dml: str | None
    struct: str | None


_DML = "DML_TENSOR_DATA_TYPE_"
TABLE: tuple[ElementType, ...] = (
    ElementType("float32", 1, 4, "FP32", "f32", _DML + "FLOAT32", "f"),
    ElementType("float16", 10, 2, "FP16", "f16", _DML + "FLOAT16", "e"),
    ElementType("bfloat16", 16, 2, "BF16", "bf16", None, None),
    ElementType("float64", 11, 8, "FP64", "f64", _DML + "FLOAT64", "d"),
    ElementType("int64", 7, 8, "I64", "i64", _DML + "INT64", "q"),
    ElementType("int32", 6, 4, "I32", "i32", _DML + "INT32", "i"),
    ElementType("int16", 5, 2, "I16", "i16", _DML + "INT16", "h"),
    ElementType("int8", 3, 1, "I8", "i8", _DML + "INT8", "b"),
    ElementType("uint64", 13, 8, "U64", "u64", _DML + "UINT64", "Q"),
    ElementType("uint32", 12, 4, "U32", "u32", _DML + "UINT32", "I"),
    ElementType("uint16", 4, 2, "U16", "u16", _DML + "UINT16", "H"),
    ElementType("uint8", 2, 1, "U8", "u8", _DML + "UINT8", "B"),
    ElementType("bool", 9, 1, "BOOL", "boolean", None, "?"),
)

_BY_NAME = {row.name: row for row in TABLE}
_BY_ONNX = {row.onnx: row for row in TABLE}
_BY_PRECISION = {row.ir_precision: row for row in TABLE}
_BY_IR_TYPE = {row.ir_type: row for row in TABLE}
_BY_DML = {row.dml: row for row in TABLE if row.dml}

NAMES: tuple[str, ...] = tuple(_BY_NAME)
DML_NAMES: tuple[str, ...] = tuple(row.name for row in TABLE if row.dml)


@dataclass(frozen=True)
class NarrowType:
    """An element type numpy has no type of its own for, held as ml_dtypes' type of the same
    ``name`` (what onnx's numpy helpers give for it, one element a byte): the 4-bit integers and
    floats and the 8-bit floats of quantized models. The IR executor meets them in weights
    (``Const``) and ``Convert``, ``ovpool run`` on OpenVINO as inputs and outputs. An IR's ``.bin``
    and an OpenVINO tensor hold ``bits``-wide elements packed into bytes, the first in the low bits
    ([1, 2, 3] as ``u4`` is the bytes 0x21 0x03: :func:`pack_narrow`)."""

    name: str
    onnx: int
    bits: int
    ir_type: str


NARROW: tuple[NarrowType, ...] = (
    NarrowType("int4", 22, 4, "i4"),
    NarrowType("uint4", 21, 4, "u4"),
    NarrowType("float8_e4m3fn", 17, 8, "f8e4m3"),
    NarrowType("float8_e5m2", 19, 8, "f8e5m2"),
    NarrowType("float4_e2m1fn", 23, 4, "f4e2m1"),
    NarrowType("float8_e8m0fnu", 24, 8, "f8e8m0"),
)
_NARROW_BY_NAME = {row.name: row for row in NARROW}
_NARROW_BY_ONNX = {row.onnx: row for row in NARROW}
# The types numpy holds as ml_dtypes' (numpy kind "V", or "f" for float8_e5m2): OpenVINO's Python
# layer takes none of them as a numpy dtype; their values cross to it as raw bits.
ML_DTYPES: frozenset[str] = frozenset({"bfloat16", *_NARROW_BY_NAME})
_NARROW_BY_IR_TYPE = {row.ir_type: row for row in NARROW}


@dataclass(frozen=True)
class NumpyOnlyType:
    """An element type only ovpool's numpy executor holds (neither OpenVINO nor DirectML has it):
    the float8 types without negative zero (FNUZ) and the 2-bit integers, held as ml_dtypes' type
    of the same ``name``, one element a byte (what onnx's numpy helpers give for them); ``bits``
    as ONNX packs them (four uint2 a byte)."""

    name: str
    onnx: int
    bits: int


NUMPY_ONLY: tuple[NumpyOnlyType, ...] = (
    NumpyOnlyType("float8_e4m3fnuz", 18, 8),
    NumpyOnlyType("float8_e5m2fnuz", 20, 8),
    NumpyOnlyType("uint2", 25, 2),
    NumpyOnlyType("int2", 26, 2),
)
_NUMPY_ONLY_BY_NAME = {row.name: row for row in NUMPY_ONLY}
_NUMPY_ONLY_BY_ONNX = {row.onnx: row for row in NUMPY_ONLY}
# Every type numpy holds as ml_dtypes': the narrow ones OpenVINO has (``ML_DTYPES``) and those only
# the numpy executor holds. An .npz file holds them as raw bytes (``<V1``, ``<V2``).
RAW_DTYPES: frozenset[str] = ML_DTYPES | frozenset(_NUMPY_ONLY_BY_NAME)
# ONNX STRING (8) tensors: numpy object arrays of ``str`` (onnxruntime's form; onnx gives bytes).
STRING = "string"
STRING_ONNX = 8
# A string element's bytes when its text is not known (a tensor sized by shape inference): the
# array's 8-byte pointer and a Python ``str`` of a few dozen ASCII characters (``sys.getsizeof``
# of a 7-character str is 56). A string tensor fed or computed counts its UTF-8 bytes instead
# (``string_bytes``).
STRING_ITEMSIZE = 64


def row(name: str) -> ElementType:
    """The row of a dtype name; a name ovpool does not know is an ``UnsupportedError``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnsupportedError(f"element type '{name}' is not one ovpool knows ({', '.join(NAMES)})") from None


def itemsize(name: str) -> int:
    """Bytes per element as numpy holds it: "float16" -> 2, "bool" -> 1, "uint4" and "uint2" -> 1
    (one element a byte, though an IR packs two); "string" -> ``STRING_ITEMSIZE`` (64, an estimate:
    see ``string_bytes``)."""
    if name == STRING:
        return STRING_ITEMSIZE
    return 1 if name in _NARROW_BY_NAME or name in _NUMPY_ONLY_BY_NAME else row(name).itemsize


def string_bytes(values: np.ndarray) -> int:
    """The bytes a string tensor (an object array of ``str``) holds as the budget counts them: its
    8-byte pointers and its texts' UTF-8 bytes: ["ab", "cé"] -> 2 * 8 + 2 + 3 = 21 (``bytes``
    elements their length, any other object nothing beside its pointer)."""
    texts = values.reshape(-1).tolist()
    return values.nbytes + sum(
        len(t.encode("utf-8")) if isinstance(t, str) else len(t) if isinstance(t, bytes) else 0 for t in texts
    )


def from_onnx(elem_type: int) -> str:
    """ONNX ``TensorProto`` element type -> dtype name: 1 (FLOAT) -> "float32"."""
    found = _BY_ONNX.get(elem_type)
    if found is None:
        raise UnsupportedError(f"ONNX element type {elem_type} ({_onnx_type_name(elem_type)}) has no numpy form ovpool handles")
    return found.name


def any_from_onnx(elem_type: int) -> str:
    """ONNX element type -> dtype name, narrow types too: 1 (FLOAT) -> "float32", 21 (UINT4) ->
    "uint4". A type neither numpy nor OpenVINO holds (STRING, FLOAT8E4M3FNUZ) is an
    ``UnsupportedError`` naming it."""
    narrow = _NARROW_BY_ONNX.get(elem_type)
    return narrow.name if narrow is not None else from_onnx(elem_type)


def numpy_from_onnx(elem_type: int) -> str:
    """ONNX element type -> dtype name, every type ovpool's numpy executor holds: those of
    ``any_from_onnx`` (1 -> "float32", 21 -> "uint4"), the ``NUMPY_ONLY`` ones (18 (FLOAT8E4M3FNUZ)
    -> "float8_e4m3fnuz", 25 (UINT2) -> "uint2") and 8 (STRING) -> "string". Any other
    (COMPLEX64) is an ``UnsupportedError`` naming it."""
    if elem_type == STRING_ONNX:
        return STRING
    only = _NUMPY_ONLY_BY_ONNX.get(elem_type)
    return only.name if only is not None else any_from_onnx(elem_type)


def narrow_row(name: str) -> NarrowType | None:
    """The row of a narrow type's name ("uint4" -> 4 bits, ``u4``); None for a wide one."""
    return _NARROW_BY_NAME.get(name)


def to_onnx(name: str) -> int:
    """dtype name -> ONNX element type: "float16" -> 10 (FLOAT16)."""
    return row(name).onnx


def onnx_type_string(name: str) -> str:
    """The schema spelling of a dtype, as in type constraints: "float32" -> "tensor(float)"."""
    return "tensor(" + _onnx_type_name(to_onnx(name)).lower() + ")"


def from_ir_precision(precision: str) -> str | None:
    """IR port precision -> dtype name ("FP32" -> "float32", any case); None if unknown."""
    found = _BY_PRECISION.get(precision.upper())
    return found.name if found else None


def from_ir_type(element_type: str) -> str | None:
    """IR ``element_type`` / OpenVINO type name -> dtype name ("f32" -> "float32"); None if unknown."""
    found = _BY_IR_TYPE.get(element_type.strip().lower())
    return found.name if found else None


def any_ir_type(name: str) -> str:
    """The IR ``element_type`` of a dtype name, narrow types too: "uint8" -> "u8", "int4" -> "i4"."""
    narrow = next((row for row in NARROW if row.name == name), None)
    return narrow.ir_type if narrow is not None else ir_type(name)


def narrow_from_ir_type(element_type: str) -> NarrowType | None:
    """IR ``element_type`` of a narrow type -> its row ("u4" -> uint4, 4 bits); None otherwise."""
    return _NARROW_BY_IR_TYPE.get(element_type.strip().lower())


def narrow_np_dtype(row: NarrowType | NumpyOnlyType) -> np.dtype:
    """The numpy (ml_dtypes) type of a narrow type: uint4 -> ``ml_dtypes.uint4``, uint2 ->
    ``ml_dtypes.uint2``."""
    import numpy as np
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(row.onnx))


def any_from_ir_type(element_type: str) -> str | None:
    """IR ``element_type`` -> dtype name, narrow types too ("u4" -> "uint4", "f32" -> "float32");
    None if unknown."""
    narrow = narrow_from_ir_type(element_type)
    return narrow.name if narrow is not None else from_ir_type(element_type)


def any_from_ov_type(element_type: Any) -> str | None:
    """``openvino.Type`` -> dtype name, narrow types too (``Type.u4`` -> "uint4"); None if unknown."""
    return any_from_ir_type(element_type.get_type_name())


def pack_narrow(values: np.ndarray) -> np.ndarray:
    """The bytes of a narrow-typed array as OpenVINO holds them (uint8): 8-bit elements one a
    byte, 4-bit ones two a byte, the first in the low nibble (uint4 [1, 2, 3] -> [0x21, 0x03])."""
    import numpy as np

    raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    if _NARROW_BY_NAME[values.dtype.name].bits == 8:
        return raw
    nibbles = raw & 0x0F
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)


def unpack_narrow(raw: np.ndarray, count: int, dtype: np.dtype) -> np.ndarray:
    """``count`` elements of the narrow ``dtype`` (ml_dtypes') from ``raw`` bytes packed as
    :func:`pack_narrow` packs them: the byte 0xF1 holds 1 then 15 as uint4, 1 then -1 as int4,
    0.5 then -6.0 as float4_e2m1fn (flat; reshape it)."""
    import numpy as np

    raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    if _NARROW_BY_NAME[dtype.name].bits == 8:
        return raw[:count].copy().view(dtype)
    pairs = np.empty((raw.size, 2), np.uint8)
    pairs[:, 0] = raw & 0x0F
    pairs[:, 1] = raw >> 4
    return pairs.reshape(-1)[:count].copy().view(dtype)


def ir_precision(name: str) -> str:
    """dtype name -> IR port precision: "float16" -> "FP16"."""
    return row(name).ir_precision


def ir_type(name: str) -> str:
    """dtype name -> IR ``element_type`` and OpenVINO ``Type`` name: "bool" -> "boolean"."""
    return row(name).ir_type


def ov_type(name: str) -> Any:
    """dtype name -> ``openvino.Type`` ("int64" -> ``Type.i64``, "uint4" -> ``Type.u4``); imports OpenVINO."""
    import openvino

    return getattr(openvino.Type, any_ir_type(name))


def from_ov_type(element_type: Any) -> str | None:
    """``openvino.Type`` -> dtype name (``Type.bf16`` -> "bfloat16", not float16); None if unknown."""
    return from_ir_type(element_type.get_type_name())


def dml_type(name: str) -> str | None:
    """dtype name -> ``DML_TENSOR_DATA_TYPE_*``, None where DirectML has none (bfloat16, bool)."""
    return row(name).dml


def from_dml(dml_type: str) -> str | None:
    """``DML_TENSOR_DATA_TYPE_UINT32`` -> "uint32"; None if unknown."""
    found = _BY_DML.get(dml_type)
    return found.name if found else None


def unpack(name: str, data: bytes) -> tuple[float, ...] | None:
    """The little-endian values of ``data`` as the dtype ``name`` stores them, without numpy (as an
    IR ``.bin`` holds a Const): "float16" b"\\x00<" -> (1.0,); None for a type ``struct`` cannot
    read (bfloat16) or a length that is not a whole number of values."""
    found = _BY_NAME.get(name)
    if found is None or found.struct is None or len(data) % found.itemsize:
        return None
    return struct.unpack(f"<{len(data) // found.itemsize}{found.struct}", data)


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a dtype name; "bfloat16", the narrow types ("uint4") and the numpy-only ones
    ("uint2") are the types onnx's numpy helpers use (ml_dtypes', which numpy itself does not know
    by name); "string" is ``object`` (arrays of ``str``)."""
    import numpy as np

    narrow = _NARROW_BY_NAME.get(name) or _NUMPY_ONLY_BY_NAME.get(name)
    if narrow is not None:
        return narrow_np_dtype(narrow)
    if name == STRING:
        return np.dtype(object)
    if name == "bfloat16":
        from onnx import helper

        return np.dtype(helper.tensor_dtype_to_np_dtype(16))
    return np.dtype(row(name).name)


def _onnx_type_name(elem_type: int) -> str:
    from onnx import TensorProto

    try:
        return str(TensorProto.DataType.Name(elem_type))
    except ValueError:
        return "unknown"

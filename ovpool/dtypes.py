"""Element types: numpy dtype names are ovpool's spelling; this maps them to and from ONNX."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ovpool.errors import UnsupportedError


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for an ovpool dtype name; "bfloat16" is the type onnx's numpy helpers use
    (ml_dtypes', which numpy itself does not know by name)."""
    if name == "bfloat16":
        return np.dtype(helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16))
    return np.dtype(name)


def from_onnx(elem_type: int) -> str:
    """ONNX TensorProto element type -> dtype name: TensorProto.FLOAT -> "float32"."""
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError) as exc:
        raise UnsupportedError(f"ONNX element type {TensorProto.DataType.Name(elem_type)} has no numpy form") from exc


def to_onnx(name: str) -> int:
    """dtype name -> ONNX element type: "float16" -> TensorProto.FLOAT16."""
    return helper.np_dtype_to_tensor_dtype(np_dtype(name))


def onnx_type_string(name: str) -> str:
    """The schema spelling of a dtype: "float32" -> "tensor(float)", as in type constraints."""
    return "tensor(" + TensorProto.DataType.Name(to_onnx(name)).lower() + ")"

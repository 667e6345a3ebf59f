"""The element-type table against each world's own spelling: onnx's dtype mapping, OpenVINO's Type."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from ovpool import dtypes
from ovpool.errors import UnsupportedError


@pytest.mark.parametrize("row", dtypes.TABLE, ids=lambda r: r.name)
def test_onnx_numpy_and_openvino_agree(row: dtypes.ElementType) -> None:
    assert np.dtype(helper.tensor_dtype_to_np_dtype(row.onnx)) == dtypes.np_dtype(row.name)
    assert TensorProto.DataType.Name(row.onnx).lower().replace("double", "float64") in (
        row.name,
        row.name.replace("float32", "float"),
    )
    ov = pytest.importorskip("openvino")
    ov_type = dtypes.ov_type(row.name)
    assert ov_type == getattr(ov.Type, row.ir_type)
    assert dtypes.from_ov_type(ov_type) == row.name
    if row.name != "bfloat16":  # OpenVINO's Python layer reads bf16 as float16
        assert np.dtype(ov_type.to_dtype()) == np.dtype(row.name)


def test_round_trips() -> None:
    for row in dtypes.TABLE:
        assert dtypes.from_onnx(dtypes.to_onnx(row.name)) == row.name
        assert dtypes.from_ir_precision(dtypes.ir_precision(row.name).lower()) == row.name
        assert dtypes.from_ir_type(dtypes.ir_type(row.name).upper()) == row.name
        dml = dtypes.dml_type(row.name)
        assert dml is None or dtypes.from_dml(dml) == row.name
    assert dtypes.onnx_type_string("float32") == "tensor(float)"
    assert dtypes.dml_type("bfloat16") is None


def test_unknown_types_are_clear_errors() -> None:
    with pytest.raises(UnsupportedError, match="ONNX element type 8 \\(STRING\\)"):
        dtypes.from_onnx(TensorProto.STRING)
    with pytest.raises(UnsupportedError, match="'complex64'"):
        dtypes.to_onnx("complex64")
    assert dtypes.from_ir_type("f8e4m3") is None


def test_numpy_only_types_are_onnx_helpers_numpy_types():
    """Each ``NUMPY_ONLY`` row (FNUZ float8, 2-bit integers) is the numpy type onnx's numpy helpers
    give its ONNX element type, one element a byte, and none is one OpenVINO's side knows
    (``any_from_onnx`` still refuses it); STRING is an object array, 64 bytes an element to the budget."""
    for row in dtypes.NUMPY_ONLY:
        assert dtypes.numpy_from_onnx(row.onnx) == row.name
        assert dtypes.np_dtype(row.name) == helper.tensor_dtype_to_np_dtype(row.onnx)
        assert dtypes.itemsize(row.name) == dtypes.np_dtype(row.name).itemsize == 1
        assert row.name in dtypes.RAW_DTYPES and row.name not in dtypes.ML_DTYPES
        with pytest.raises(UnsupportedError):
            dtypes.any_from_onnx(row.onnx)
    assert dtypes.numpy_from_onnx(TensorProto.STRING) == dtypes.STRING
    assert dtypes.np_dtype(dtypes.STRING) == np.dtype(object) and dtypes.itemsize(dtypes.STRING) == 64
    assert dtypes.numpy_from_onnx(TensorProto.UINT4) == "uint4" and dtypes.numpy_from_onnx(TensorProto.FLOAT) == "float32"
    with pytest.raises(UnsupportedError, match=r"ONNX element type 14 \(COMPLEX64\)"):
        dtypes.numpy_from_onnx(TensorProto.COMPLEX64)

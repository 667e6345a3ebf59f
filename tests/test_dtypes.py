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

"""The (op, since-version) pairs whose own tests compare otherwise than ``harness.check``
(quantized operators in steps of onnxruntime, schema-only versions), each once through
``harness.check`` (or against the schema where onnxruntime has no kernel) so that ``ovpool
convert`` meets every since-version in force in opsets 7..22 (``on_openvino``). Values are away
from rounding ties: onnxruntime and ovpool agree exactly. Not here: Upsample-10 (deprecated,
refused by the numpy executor) and Optional-15 and the optional-typed Optional*Element-15."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check, make_model, run_ovpool
from on_openvino import through_openvino

U8 = np.uint8


def _u8(*rows: Any) -> np.ndarray:
    return np.array(rows, U8)


X_Q = np.array([[-2.0, -0.5, 0.0, 1.5], [3.0, 4.5, 10.0, 60.0]], np.float32)
GRID = np.arange(9, dtype=U8).reshape(1, 1, 3, 3)
KERNEL = _u8([[1, 2], [3, 0]]).reshape(1, 1, 2, 2)
LHS, RHS = _u8([1, 2, 3], [4, 5, 6]), _u8([1, 0], [2, 1], [0, 3])
ONE, ZERO = np.float32(1.0), U8(0)

CASES = [
    *(
        pytest.param("QuantizeLinear", opset, [X_Q, np.float32(0.5), U8(10)], {}, id=f"QuantizeLinear-{opset}")
        for opset in (10, 13, 19, 21)
    ),
    *(
        pytest.param("DequantizeLinear", opset, [_u8([0, 10, 200]), np.float32(0.5), U8(10)], {}, id=f"DequantizeLinear-{opset}")
        for opset in (10, 13, 19, 21)
    ),
    pytest.param("DynamicQuantizeLinear", 11, [np.array([0.0, 255.0, 17.0], np.float32)], {}, id="DynamicQuantizeLinear-11"),
    pytest.param("ConvInteger", 10, [GRID, KERNEL], {}, id="ConvInteger-10"),
    pytest.param("MatMulInteger", 10, [LHS, RHS], {}, id="MatMulInteger-10"),
    pytest.param("QLinearConv", 10, [GRID, ONE, ZERO, KERNEL, ONE, ZERO, ONE, ZERO], {}, id="QLinearConv-10"),
    *(
        pytest.param("QLinearMatMul", opset, [LHS, ONE, ZERO, RHS, ONE, ZERO, ONE, ZERO], {}, id=f"QLinearMatMul-{opset}")
        for opset in (10, 21)
    ),
    pytest.param("OptionalHasElement", 18, [np.ones(3, np.float32)], {}, id="OptionalHasElement-18"),
    pytest.param("OptionalGetElement", 18, [np.ones(3, np.float32)], {}, id="OptionalGetElement-18"),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), CASES)
def test_version_through_conversion(op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any]) -> None:
    n_outputs = 3 if op == "DynamicQuantizeLinear" else 1
    check(op, opset, inputs, attrs, n_outputs=n_outputs, rtol=0, atol=0)


def test_roi_align_22_against_the_schema() -> None:
    """RoiAlign-22 (no onnxruntime kernel): avg mode over a constant feature map is the constant,
    whatever the sampling."""
    x = np.full((1, 1, 4, 4), 3.0, np.float32)
    rois, batch = np.array([[0.5, 0.5, 2.5, 3.0]], np.float32), np.zeros(1, np.int64)
    model = make_model("RoiAlign", 22, [x, rois, batch], {"output_height": 2, "output_width": 2})
    feeds = {"x0": x, "x1": rois, "x2": batch}
    expected = np.full((1, 1, 2, 2), 3.0, np.float32)
    np.testing.assert_allclose(run_ovpool(model, feeds)[0], expected, rtol=1e-6)
    through_openvino(model, feeds, [expected], rtol=1e-6, atol=1e-6)


def test_scatter_11_against_scatter_elements() -> None:
    """Scatter-11 (deprecated; onnxruntime has no kernel) is ScatterElements-11: 1 at row 1 of
    column 2 of zeros."""
    data, indices, updates = np.zeros((2, 3), np.float32), np.array([[0, 1, 1]], np.int64), np.ones((1, 3), np.float32)
    model = make_model("Scatter", 11, [data, indices, updates], {"axis": 0})
    feeds = {"x0": data, "x1": indices, "x2": updates}
    expected = np.array([[1, 0, 0], [0, 1, 1]], np.float32)
    np.testing.assert_array_equal(run_ovpool(model, feeds)[0], expected)
    through_openvino(model, feeds, [expected], rtol=0, atol=0)

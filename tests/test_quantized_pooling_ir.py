"""Quantized pooling through ``ovpool convert`` on OpenVINO CPU against the ONNX meaning.

One-node QDQ pooling models (DequantizeLinear -> pool -> QuantizeLinear at every since-version of
both, AveragePool, MaxPool and the global pools over their attribute space, uint8/int8 and 16-bit,
per-tensor and per-channel, shared and distinct scales) and com.microsoft QLinear pooling nodes,
compared in quantization steps with the meaning computed in ``quant_cases.expected`` (the naive loop
oracle between exact dequantize and quantize steps):

* default form (FakeQuantize, OpenVINO's INT8 execution kept): never more than one step off;
* ``exact_quantization=True``: 0 steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from quant_cases import QdqCase, expected, qdq_cases, steps

from ovpool.ov.from_onnx import onnx_to_ov_model

ov = pytest.importorskip("openvino")
pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def run_cpu(case: QdqCase, q: np.ndarray, exact: bool) -> np.ndarray:
    compiled = ov.Core().compile_model(onnx_to_ov_model(case.model(), exact_quantization=exact), "CPU", F32)
    return compiled({"q": q})[0]


@given(qdq_cases())
def test_qdq_pool_exact_form_is_onnx(case: QdqCase) -> None:
    q = case.input(np.random.default_rng(0))
    assert steps(run_cpu(case, q, exact=True), expected(case, q)) == 0


@given(qdq_cases())
def test_qdq_pool_default_form_within_one_step(case: QdqCase) -> None:
    q = case.input(np.random.default_rng(0))
    assert steps(run_cpu(case, q, exact=False), expected(case, q)) <= 1


@given(qdq_cases(qlinear=True))
def test_qlinear_pool_exact_form_is_onnx(case: QdqCase) -> None:
    q = case.input(np.random.default_rng(0))
    assert steps(run_cpu(case, q, exact=True), expected(case, q)) == 0


@given(qdq_cases(qlinear=True))
def test_qlinear_pool_default_form_within_one_step(case: QdqCase) -> None:
    q = case.input(np.random.default_rng(0))
    assert steps(run_cpu(case, q, exact=False), expected(case, q)) <= 1


def test_exact_form_names_the_pool_that_needs_static_dims() -> None:
    """An exact QDQ GlobalAveragePool on dynamic spatial dims is refused, and the error names it,
    not a later float MaxPool that the refused pool's dynamic-rank output reaches (the PP-OCR
    classifier quantized by onnxruntime, converted without --input, named its last MaxPool)."""
    from onnx import TensorProto, helper, numpy_helper

    from ovpool.errors import UnsupportedError

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quantize"),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dequantize"),
        helper.make_node("GlobalAveragePool", ["d"], ["g"], name="average"),
        helper.make_node("QuantizeLinear", ["g", "s", "z"], ["gq"], name="quantize_average"),
        helper.make_node("DequantizeLinear", ["gq", "s", "z"], ["gd"], name="dequantize_average"),
        helper.make_node("Add", ["d", "gd"], ["e"], name="add"),
        helper.make_node("MaxPool", ["e"], ["y"], name="max", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    scale = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], scale)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="node 'average': an exact quantized pool needs static spatial dims"):
        onnx_to_ov_model(model, exact_quantization=True)
    converted = onnx_to_ov_model(model, "x[1,3,8,8]", exact_quantization=True)
    assert list(converted.outputs[0].get_partial_shape().to_shape()) == [1, 3, 4, 4]

"""Quantized convolutions OpenVINO gets wrong, through ``ovpool convert`` on OpenVINO CPU.

OpenVINO 2026.4's ONNX frontend dequantizes QLinearConv's weights along axis 1 (input channels)
instead of 0 (output channels): with as many input as output channels the result is silently wrong
(150 steps off on the 4 -> 4 case below), with other counts the conversion fails ("The number of
dequantization scale elements '8' must match the input shape dimension '4'"; a 4 -> 1 conv's
w_scale of shape [1] alike). onnxruntime's quantizer writes such nodes for every conv of a model
quantized per channel in QOperator format. ovpool expands them
(``ovpool.onnx.qoperator.expands``): within one step of onnxruntime in both forms (onnxruntime
requantizes in float32; a value at a near tie may round either way).

It refuses a QLinearMatMul with per-column b scales, which ovpool expands likewise, and one with
per-row a scales, which ovpool leaves to it: the error is that refusal, not the consequence a pool
behind it meets.

The CPU plugin's low-precision pass computes a QDQ ConvTranspose wrong when its input's zero point
is 0 and its weights' is not (``test_qdq_conv_transpose_within_one_step``).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ovpool.errors import ModelError
from ovpool.ov.from_onnx import onnx_to_ov_model

ov = pytest.importorskip("openvino")
ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def qlinear_conv(out_channels: int, in_channels: int, group: int = 1, opset: int = 13) -> onnx.ModelProto:
    """One QLinearConv (3x3, pads 1) of uint8 x (zero point 128) and int8 weights with scales 0.01,
    0.02, 0.04, ... per output channel (1-D, of one value for one output channel), an int32 bias,
    uint8 output at scale 0.1, zero point 128."""
    rng = np.random.default_rng(0)
    scales = (0.01 * 2.0 ** (np.arange(out_channels) % 4)).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "x_zero"),
        numpy_helper.from_array(rng.integers(-60, 60, (out_channels, in_channels // group, 3, 3)).astype(np.int8), "w"),
        numpy_helper.from_array(scales, "w_scale"),
        numpy_helper.from_array(np.zeros(out_channels, np.int8), "w_zero"),
        numpy_helper.from_array(np.array(0.1, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "y_zero"),
        numpy_helper.from_array(rng.integers(-500, 500, out_channels).astype(np.int32), "bias"),
    ]
    node = helper.make_node(
        "QLinearConv",
        ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"],
        ["y"],
        name="conv",
        pads=[1, 1, 1, 1],
        group=group,
    )
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, in_channels, 6, 6])
    graph = helper.make_graph([node], "conv", [x], [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize(("out_channels", "in_channels", "group"), [(4, 4, 1), (8, 4, 1), (4, 8, 1), (6, 6, 6), (1, 4, 1)])
@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
def test_per_channel_qlinear_conv_within_one_step(out_channels: int, in_channels: int, group: int, exact: bool) -> None:
    model = qlinear_conv(out_channels, in_channels, group)
    x = np.random.default_rng(1).integers(0, 256, (1, in_channels, 6, 6)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ov.Core().compile_model(onnx_to_ov_model(model, exact_quantization=exact), "CPU", F32)({"x": x})[0]
    assert int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) <= 1


@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
def test_per_channel_qlinear_conv_before_opset_13(exact: bool) -> None:
    """DequantizeLinear has an axis from opset 13: an older model's per-channel QLinearConv is
    dequantized by Cast -> Sub -> Mul along the output channels (``ovpool.onnx.qoperator``), not
    by OpenVINO's frontend (which would compute it along the input channels)."""
    model = qlinear_conv(4, 4, opset=11)
    x = np.random.default_rng(1).integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ov.Core().compile_model(onnx_to_ov_model(model, exact_quantization=exact), "CPU", F32)({"x": x})[0]
    assert int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) <= 1


def qlinear_matmul(a_scale: np.ndarray, opset: int = 13) -> onnx.ModelProto:
    """QLinearMatMul of uint8 a (1x2x3x4, zero point 128, scale ``a_scale``) and int8 b (4x6, scales
    0.01..0.08 per column), uint8 output at scale 0.1, zero point 128, then DequantizeLinear and a
    2x2 MaxPool."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(a_scale, "a_scale"),
        numpy_helper.from_array(np.full(a_scale.shape, 128, np.uint8), "a_zero"),
        numpy_helper.from_array(rng.integers(-50, 50, (4, 6)).astype(np.int8), "b"),
        numpy_helper.from_array(np.linspace(0.01, 0.08, 6).astype(np.float32), "b_scale"),
        numpy_helper.from_array(np.zeros(6, np.int8), "b_zero"),
        numpy_helper.from_array(np.array(0.1, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "y_zero"),
    ]
    nodes = [
        helper.make_node(
            "QLinearMatMul", ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"], ["m"], name="mm"
        ),
        helper.make_node("DequantizeLinear", ["m", "y_scale", "y_zero"], ["d"], name="dequantize"),
        helper.make_node("MaxPool", ["d"], ["y"], name="pool", kernel_shape=[2, 2]),
    ]
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 2, 3, 4])
    graph = helper.make_graph(nodes, "mm", [a], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model


@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
def test_per_column_qlinear_matmul_within_one_step(exact: bool) -> None:
    """OpenVINO's frontend refuses a QLinearMatMul with per-column b scales; its expansion converts,
    within one step of onnxruntime (the pool after it picks among the quantized values)."""
    model = qlinear_matmul(np.array(0.05, np.float32))
    a = np.random.default_rng(1).integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    got = ov.Core().compile_model(onnx_to_ov_model(model, exact_quantization=exact), "CPU", F32)({"a": a})[0]
    assert int(np.rint(np.abs(got - want) / np.float32(0.1)).max()) <= 1


def test_openvino_failure_before_a_pool_is_the_error_given() -> None:
    """OpenVINO's frontend refuses a QLinearMatMul with per-row a scales ("Scalar value can't be
    derived from a node with [3, 1]"); the MaxPool behind it then sees a dynamic rank. The error
    is OpenVINO's reason for the QLinearMatMul, in both forms, not the pool's (which ovpool gave
    before). With ``exact_quantization`` every QLinearMatMul goes through its DequantizeLinear ->
    MatMul -> QuantizeLinear meaning, which refuses per-row a scales itself, naming the node."""
    model = qlinear_matmul(np.full((3, 1), 0.05, np.float32), opset=21)
    with pytest.raises(ModelError, match="^mm: OpenVINO could not convert the model: QLinearMatMul-21 \\(node 'mm'\\): [^;]*$"):
        onnx_to_ov_model(model)
    with pytest.raises(
        ModelError, match="^mm: node 'mm' \\(QLinearMatMul\\): a_scale has 3 values; QLinearMatMul takes one per tensor$"
    ):
        onnx_to_ov_model(model, exact_quantization=True)


def qdq_conv_transpose(weight_type: str, weight_zero: int) -> onnx.ModelProto:
    """uint8 x at zero point 0 -> DequantizeLinear -> ConvTranspose 2x2 s2 (8 -> 8 channels, weights
    dequantized at ``weight_zero``) -> QuantizeLinear, as PP-OCR's DB detectors quantized by
    onnxruntime with uint8 weights hold it."""
    rng = np.random.default_rng(0)
    low, high = (0, 256) if weight_type == "uint8" else (-128, 128)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(0, np.uint8), "x_zero"),
        numpy_helper.from_array(rng.integers(low, high, (8, 8, 2, 2)).astype(weight_type), "w"),
        numpy_helper.from_array(np.array(0.003, np.float32), "w_scale"),
        numpy_helper.from_array(np.array(weight_zero, weight_type), "w_zero"),
        numpy_helper.from_array(np.array(0.1, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "y_zero"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"], name="dequantize_x"),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], name="dequantize_w"),
        helper.make_node("ConvTranspose", ["xd", "wd"], ["c"], name="up", strides=[2, 2], kernel_shape=[2, 2]),
        helper.make_node("QuantizeLinear", ["c", "y_scale", "y_zero"], ["y"], name="quantize"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 10, 10])
    graph = helper.make_graph(nodes, "up", [x], [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize(("weight_type", "weight_zero"), [("uint8", 127), ("uint8", 1), ("int8", 5), ("int8", 0)])
@pytest.mark.parametrize("exact", [False, True], ids=["default", "exact"])
def test_qdq_conv_transpose_within_one_step(weight_type: str, weight_zero: int, exact: bool) -> None:
    """OpenVINO's CPU plugin computes a QDQ ConvTranspose whose input has zero point 0 and whose
    weights do not wrong in its low-precision pass (233 steps off at uint8 zero point 127; PP-OCRv4's
    detector quantized with uint8 weights: 211). The default form dequantizes those weights to
    float32 constants (``QuantExtensions``' ``wide_only``): within one step of onnxruntime."""
    model = qdq_conv_transpose(weight_type, weight_zero)
    x = np.random.default_rng(1).integers(0, 256, (1, 8, 10, 10)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ov.Core().compile_model(onnx_to_ov_model(model, exact_quantization=exact), "CPU", F32)({"x": x})[0]
    assert int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) <= 1

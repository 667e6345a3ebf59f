"""Quantized models for the tests: small float models quantized by onnxruntime's own tools, the way
users quantize (``quantize_static`` in QDQ format, ``quantize_dynamic``), on seeded calibration data,
and converted to IR by ``ovpool convert``.

``cnn()`` is a float CNN with the layers quantized models are made of: Conv with pads (Relu folded
into its output's quantization by the quantizer), AveragePool, MaxPool, Add, GlobalAveragePool,
Flatten, MatMul. Its input is ``x``, 1x3x16x16, drawn from a standard normal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = (1, 3, 16, 16)


def cnn(avg_pool: bool = True, opset: int = 13) -> onnx.ModelProto:
    """The float CNN (module text); ``avg_pool=False`` puts a MaxPool where the AveragePool was."""
    rng = np.random.default_rng(0)
    shapes = {"w1": (8, 3, 3, 3), "b1": (8,), "w2": (16, 8, 3, 3), "b2": (16,), "wf": (16, 10), "bf": (10,)}
    weights = [numpy_helper.from_array((0.3 * rng.standard_normal(s)).astype(np.float32), n) for n, s in shapes.items()]
    pool = "AveragePool" if avg_pool else "MaxPool"
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(pool, ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Add", ["p2", "p2"], ["a2"], name="add"),
        helper.make_node("GlobalAveragePool", ["a2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "wf"], ["m"], name="fc"),
        helper.make_node("Add", ["m", "bf"], ["y"], name="fcadd"),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10 if opset >= 21 else 8)


def sample(seed: int = 0) -> np.ndarray:
    """One input of ``cnn``: a standard normal draw."""
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def _calibration(count: int = 8) -> Iterator[dict[str, np.ndarray]]:
    return iter([{"x": sample(100 + i)} for i in range(count)])


# name -> (activation type, weight type, per channel), onnxruntime.quantization.QuantType names
SCHEMES: dict[str, tuple[str, str, bool]] = {
    "u8": ("QUInt8", "QUInt8", False),
    "s8-per-channel": ("QInt8", "QInt8", True),
    "u8-s8-per-channel": ("QUInt8", "QInt8", True),
}


def quantize_qdq(source: Path, target: Path, scheme: str) -> Path:
    """``source`` quantized by ``onnxruntime.quantization.quantize_static`` in QDQ format with the
    types of ``SCHEMES[scheme]`` (16-bit and 4-bit types for opset-21 sources: "u16-u4",
    "s16-s4"), calibrated on eight seeded inputs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    kinds = {**SCHEMES, "u16-u4": ("QUInt16", "QUInt4", True), "s16-s4": ("QInt16", "QInt4", True)}
    activation, weight, per_channel = kinds[scheme]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.data = _calibration()

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.data, None)

    quantize_static(
        str(source),
        str(target),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=getattr(QuantType, activation),
        weight_type=getattr(QuantType, weight),
        per_channel=per_channel,
    )
    return target


def quantize_dynamic(source: Path, target: Path, weight: str = "QUInt8") -> Path:
    """``source`` quantized by ``onnxruntime.quantization.quantize_dynamic``: Conv and MatMul become
    DynamicQuantizeLinear, ConvInteger and MatMulInteger."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as dynamic

    dynamic(str(source), str(target), weight_type=getattr(QuantType, weight), op_types_to_quantize=["Conv", "MatMul"])
    return target


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path

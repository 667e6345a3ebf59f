"""Whole quantized models, as onnxruntime's quantizer writes them, on the numpy executor against
onnxruntime (one thread, graph optimisations off).

A small float CNN (Conv, Relu, AveragePool, LeakyRelu, a residual Add, MaxPool, a swish
Sigmoid * x, Concat, GlobalAveragePool, Gemm, Softmax) is quantized by
``onnxruntime.quantization.quantize_static`` with seeded calibration data: QOperator format (QLinearConv,
com.microsoft QLinearAdd/QLinearMul/QLinearSigmoid/QLinearLeakyRelu/QLinearAveragePool/
QLinearConcat/QLinearGlobalAveragePool/QGemm/QLinearSoftmax) and QDQ format, uint8 and int8,
per-tensor and per-channel weights, at opsets 11 (QOperator only: the quantizer writes an invalid
per-channel QDQ model there), 13 and 17.

Every quantized tensor of the model (every integer output of every node) is compared in
quantization steps: at most one step from onnxruntime, where float32 arithmetic lands on the
other side of a tie; the model's float output within one step of its last quantization.
com.microsoft nodes expanded (``ovpool.onnx.qoperator.expand_model``) mean the same model on
onnxruntime and on numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from harness import run_ort
from onnx import TensorProto, helper, numpy_helper

from ovpool.engine.graph import GraphSession
from ovpool.onnx.qoperator import expand_model

quantization = pytest.importorskip("onnxruntime.quantization")


def float_cnn(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("AveragePool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        node("LeakyRelu", ["c2"], ["r2"], name="lrelu", alpha=0.1),
        node("Conv", ["p1", "w3"], ["p1s"], name="proj"),
        node("Add", ["r2", "p1s"], ["a2"], name="add"),
        node("MaxPool", ["a2"], ["m2"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        node("Sigmoid", ["m2"], ["s2"], name="sigmoid"),
        node("Mul", ["m2", "s2"], ["sw"], name="swish"),
        node("Concat", ["sw", "m2"], ["cc"], name="concat", axis=1),
        node("GlobalAveragePool", ["cc"], ["g"], name="gap"),
        node("Flatten", ["g"], ["f"], name="flatten"),
        node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        node("Softmax", ["logits"], ["prob"], name="softmax", axis=-1 if opset >= 13 else 1),
    ]
    weights = [weight("w1", 8, 3, 3, 3), weight("b1", 8), weight("w2", 8, 8, 3, 3), weight("b2", 8), weight("w3", 8, 8, 1, 1)]
    weights += [weight("wf", 10, 16), weight("bf", 10)]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        self._data = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._data, None)


TYPES = {"u8u8": ("QUInt8", "QUInt8"), "u8s8": ("QUInt8", "QInt8"), "s8s8": ("QInt8", "QInt8")}
CASES = [
    pytest.param(fmt, types, per_channel, opset, id=f"{fmt}-{types}-{'channel' if per_channel else 'tensor'}-opset{opset}")
    for fmt in ("QOperator", "QDQ")
    for types in TYPES
    for per_channel in (False, True)
    for opset in (11, 13, 17)
    if not (fmt == "QDQ" and opset == 11 and per_channel)
]


def quantized(tmp_path: Any, fmt: str, types: str, per_channel: bool, opset: int) -> onnx.ModelProto:
    source, target = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    onnx.save(float_cnn(opset), source)
    activation, weight = (getattr(quantization.QuantType, t) for t in TYPES[types])
    quantization.quantize_static(
        str(source),
        str(target),
        _Calibration(),
        quant_format=getattr(quantization.QuantFormat, fmt),
        activation_type=activation,
        weight_type=weight,
        per_channel=per_channel,
    )
    return onnx.load(target)


def every_tensor(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every node output a graph output (onnxruntime computes them all)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    named = {o.name for o in out.graph.output}
    for node in out.graph.node:
        out.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in node.output if n and n not in named)
    return out


def node_alone(model: onnx.ModelProto, node: onnx.NodeProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """``node`` as a model of its own: its initializers kept, its other inputs graph inputs."""
    weights = {t.name: t for t in model.graph.initializer}
    inputs = [n for n in node.input if n and n not in weights]
    graph = helper.make_graph(
        [node],
        node.name or "node",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(values[n].dtype), list(values[n].shape))
            for n in inputs
        ],
        [helper.make_empty_tensor_value_info(n) for n in node.output if n],
        initializer=[weights[n] for n in node.input if n in weights],
    )
    alone = helper.make_model(graph, opset_imports=list(model.opset_import))
    alone.ir_version = model.ir_version
    return alone


def assert_within_a_step(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> int:
    """Each node, fed onnxruntime's values of its inputs, gives integer outputs within one step of
    onnxruntime's and float outputs within float32 rounding; the whole model's float output is within
    one step of its last quantization (scale 1/255 or 1/256). Returns the number of integer values
    one step apart."""
    full = every_tensor(model)
    theirs = dict(zip([o.name for o in full.graph.output], run_ort(full, feeds)))
    values = {**feeds, **theirs}
    apart = 0
    for node in model.graph.node:
        alone = node_alone(model, node, values)
        session = GraphSession(alone)
        assert not session.reference_ops
        ours = session.run({n: values[n] for n in session.input_names})
        for name, mine in ours.items():
            expected = theirs[name]
            assert mine.dtype == expected.dtype and mine.shape == expected.shape, name
            if expected.dtype.kind in "iu":
                steps = np.abs(mine.astype(np.int64) - expected.astype(np.int64))
                assert steps.max(initial=0) <= 1, f"node '{node.name}' ({node.op_type}): {steps.max()} steps from onnxruntime"
                apart += int((steps == 1).sum())
            else:
                np.testing.assert_allclose(
                    mine, expected, rtol=1e-5, atol=1e-6 * float(np.abs(expected).max(initial=1)), err_msg=name
                )
    whole = GraphSession(model).run(feeds)
    output = model.graph.output[0].name
    np.testing.assert_allclose(whole[output], theirs[output], rtol=0, atol=1 / 255 + 1e-7)
    return apart


@pytest.mark.parametrize(("fmt", "types", "per_channel", "opset"), CASES)
def test_quantized_cnn_within_a_step_of_onnxruntime(tmp_path: Any, fmt: str, types: str, per_channel: bool, opset: int) -> None:
    model = quantized(tmp_path, fmt, types, per_channel, opset)
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    assert_within_a_step(model, feeds)
    if fmt == "QOperator":
        expanded = expand_model(model)
        assert not [n for n in expanded.graph.node if n.domain == "com.microsoft"]
        assert_within_a_step(expanded, feeds)

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

import re
import sys

import numpy as np
import onnx
import pytest
from hypothesis import given
from onnx import helper, numpy_helper
from quant_cases import ELEM, RANGES, QdqCase, expected, qdq_cases, steps

from ovpool.cli.app import main
from ovpool.errors import UnsupportedError
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


AVERAGE = QdqCase(
    "AveragePool",
    19,
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    (1, 3, 6, 6),
    "uint8",
    (0.05,),
    (128,),
    (0.05,),
    (128,),
)


def _zero_scale(model: onnx.ModelProto) -> None:
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(0.0, np.float32), "x_scale"))


def _missing_scale(model: onnx.ModelProto) -> None:
    model.graph.node[2].input[1] = ""


def _more_zero_points(model: onnx.ModelProto) -> None:
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([0.1, 0.2, 0.3], np.float32), "s3"),
            numpy_helper.from_array(np.array([1, 2], np.uint8), "z2"),
        ]
    )
    model.graph.node[0].input[1:] = ["s3", "z2"]


def _zero_point_type(model: onnx.ModelProto) -> None:
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array(3, np.int8), "x_zero"))


def _axis_length(model: onnx.ModelProto) -> None:
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([0.1, 0.2], np.float32), "s2"),
            numpy_helper.from_array(np.array([1, 2], np.uint8), "z2"),
        ]
    )
    model.graph.node[0].input[1:] = ["s2", "z2"]
    model.graph.node[0].attribute.append(helper.make_attribute("axis", 1))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_zero_scale, r"node 'dequantize' \(DequantizeLinear\): scale 0 must be finite and non-zero"),
        (_missing_scale, r"node 'quantize' \(QuantizeLinear-19\): input 1 \('y_scale'\) is required but empty"),
        (_more_zero_points, r"node 'dequantize' \(DequantizeLinear\): 3 scale\(s\) but 2 zero point\(s\)"),
        (_zero_point_type, r"node 'dequantize' \(DequantizeLinear\): the zero point is int8 but the quantized tensor is uint8"),
        (_axis_length, r"node 'dequantize' \(DequantizeLinear\): 2 per-axis scales for axis 1 of length 3"),
    ],
)
def test_bad_quantization_is_one_line_naming_the_node(tmp_path, monkeypatch, capsys, damage, message) -> None:
    """Each command refuses the model with exit 1 and one line naming the node, and writes nothing."""
    model = AVERAGE.model()
    damage(model)
    source = tmp_path / "bad.onnx"
    onnx.save(model, source)
    for args in (
        ["convert", source],
        ["convert", source, "--exact-quantization"],
        ["run", source, "--device", "numpy", "--random-inputs"],
    ):
        monkeypatch.setattr(sys, "argv", ["ovpool", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
        err = capsys.readouterr().err.strip()
        assert exit_info.value.code == 1, err
        assert len(err.splitlines()) == 1 and err.startswith("error: ")
        assert re.search(f"^error: {re.escape(str(source))}: {message}$", err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]


# QuantizeLinear / DequantizeLinear since-versions and the integer types each first allows.
Q_VERSIONS = [
    (10, "uint8"),
    (10, "int8"),
    (13, "uint8"),
    (19, "int8"),
    (21, "uint16"),
    (21, "int16"),
    (21, "uint4"),
    (21, "int4"),
]
Q_VERSIONS += [(23, "uint8"), (24, "int8"), (25, "uint8")]


@pytest.mark.parametrize(("opset", "dtype"), Q_VERSIONS, ids=[f"{o}-{d}" for o, d in Q_VERSIONS])
@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
def test_quantize_dequantize_at_every_version(opset: int, dtype: str, per_axis: bool) -> None:
    """QuantizeLinear -> DequantizeLinear on float inputs that sit at, just beside and between
    ties. The schema text computed directly is the oracle: ``q = saturate(rint(x / s) + zp)`` with
    ``x / s`` float32 division (numpy's is correctly rounded), ``y = (q - zp) * s`` in float32.
    The exact form equals it bit for bit; the default (FakeQuantize) form is within one step."""
    if per_axis and opset < 13:
        pytest.skip("DequantizeLinear has no axis before opset 13")
    low, high = RANGES[dtype]
    rng = np.random.default_rng(opset)
    scales = np.array([0.05, 0.0371, 0.123] if per_axis else [0.0371], np.float32)
    zeros = rng.integers(low, high + 1, scales.size)
    levels = np.arange(low - zeros.max() - 2, high - zeros.min() + 3)
    ties = (levels + 0.5)[None, :] * scales.astype(np.float64)[:, None]
    columns = np.concatenate(
        [ties, np.nextafter(ties.astype(np.float32), np.inf), np.nextafter(ties.astype(np.float32), -np.inf)], 1
    )
    x = np.broadcast_to(columns.astype(np.float32)[None, :, None, :], (1, 3, 2, columns.shape[1])).copy()
    shape = [1, 3, 2, columns.shape[1]]
    axis = {"axis": 1} if per_axis else {}
    inits = [
        numpy_helper.from_array(scales if per_axis else scales.reshape(()), "s"),
        helper.make_tensor("zp", ELEM[dtype], [scales.size] if per_axis else [], [int(z) for z in zeros]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], **axis),
        helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], **axis),
    ]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", 1, shape)], [helper.make_tensor_value_info("y", 1, None)], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    s = (scales if per_axis else np.resize(scales, 3)).reshape(1, 3, 1, 1)
    z = np.resize(zeros, 3).reshape(1, 3, 1, 1)
    q = np.clip(np.rint(x / s) + z, low, high)
    want = ((q - z).astype(np.float32) * s).astype(np.float32)
    for exact, bound in ((True, 0), (False, 1)):
        compiled = ov.Core().compile_model(onnx_to_ov_model(model, exact_quantization=exact), "CPU", F32)
        got = compiled({"x": x})[0]
        assert int(np.rint(np.abs(got - want) / s).max()) <= bound
        if exact:
            assert np.array_equal(got, want)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize(
    ("shape", "scales"), [((2, 2, 1), ((1.0, 0.5), (1.0, 1.0))), ((2, 2, 4), ((1.0, 1.0), (0.5, 1.0))), ((3, 2, 3), None)]
)
def test_global_pools_of_3d_tensors_with_a_batch(op_type: str, shape: tuple, scales) -> None:
    """OpenVINO's INT8 ReduceMean and ReduceMax of an (N, C, L) tensor take per-channel scales along
    the batch axis, and with N > C get the later batches wrong per tensor too (up to 95 steps): the
    default form writes a global pool of a dequantized tensor as AvgPool/MaxPool over the plane."""
    in_scale, out_scale = scales or ((0.05,), (0.05,))
    zero = (0,) * len(in_scale) if scales else (128,)
    case = QdqCase(op_type, 13, {}, shape, "uint8" if not scales else "int8", in_scale, zero, out_scale, zero)
    q = case.input(np.random.default_rng(1))
    assert steps(run_cpu(case, q, exact=False), expected(case, q)) <= 1


def test_include_pad_average_read_by_a_convolution() -> None:
    """int8 at zero point 0 -> include-pad AvgPool -> Convolution: on a processor without AMX the
    plugin makes the int8 tensor uint8 at zero point 128 and pads the average with integer 0 (43
    steps off on this machine). The default form's exclude-pad average times the ratio of counted
    taps is within half an input step at the average, so within half a step times the weights' row
    sum after the 1x1 Convolution; onnxruntime computes the float chain."""
    import onnxruntime as ort

    weights = np.array([[[[3]], [[-2]]], [[[1]], [[4]]]], np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(0, np.int8), "z"),
        numpy_helper.from_array(weights, "wq"),
        numpy_helper.from_array(np.array(0.1, np.float32), "ws"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
        helper.make_node("AveragePool", ["xd"], ["p"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"]),
        helper.make_node("Conv", ["p", "w"], ["y"], name="conv"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 2, 6, 6])], [helper.make_tensor_value_info("y", 1, None)], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = (np.random.default_rng(0).integers(-100, 100, (1, 2, 6, 6)) * 0.05).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ov.Core().compile_model(onnx_to_ov_model(model), "CPU", F32)({"x": x})[0]
    bound = 0.5 * 0.05 * np.abs(weights.astype(np.float64) * 0.1).sum(axis=(1, 2, 3)).reshape(1, -1, 1, 1)
    assert (np.abs(got - want) <= bound + 1e-6).all()


def test_exact_form_names_the_pool_that_needs_static_dims() -> None:
    """An exact QDQ GlobalAveragePool on dynamic spatial dims is refused, and the error names it,
    not a later float MaxPool that the refused pool's dynamic-rank output reaches (the PP-OCR
    classifier quantized by onnxruntime, converted without --input, named its last MaxPool)."""
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
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, "h", "w"])
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], scale)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="node 'average': an exact quantized pool needs static spatial dims"):
        onnx_to_ov_model(model, exact_quantization=True)
    converted = onnx_to_ov_model(model, "x[1,3,8,8]", exact_quantization=True)
    assert list(converted.outputs[0].get_partial_shape().to_shape()) == [1, 3, 4, 4]

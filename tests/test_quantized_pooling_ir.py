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
from quant_cases import QdqCase, expected, qdq_cases, steps

from ovpool.cli.app import main
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

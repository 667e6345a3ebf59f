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

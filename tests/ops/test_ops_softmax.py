"""Softmax, LogSoftmax and Hardmax against onnxruntime at every since-version, the 2-D coercion of
versions 1 and 11 against the schema text, and ONNX's own node test cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check, check_node_case, make_model, node_case_params, run_ovpool, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.errors import ModelError

OPS = ("Softmax", "LogSoftmax", "Hardmax")
CASES = [(op, opset) for op in OPS for opset in since_opsets(op)]


def _dtypes(op: str) -> list[type]:
    """onnxruntime has no float64 Hardmax kernel."""
    return [np.float32, np.float16] if op == "Hardmax" else [np.float32, np.float16, np.float64]


@st.composite
def _input_and_axis(draw: st.DrawFn, op: str) -> tuple[np.ndarray, int | None]:
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(_dtypes(op)))
    seed = draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).standard_normal(shape) * draw(st.sampled_from([1.0, 4.0, 30.0]))  # 30: beyond +-40
    if op == "Hardmax" and draw(st.booleans()):
        values = np.round(values)  # ties: the first maximum wins
    axis = draw(st.none() | st.integers(-rank, rank - 1))
    return values.astype(dtype), axis


@pytest.mark.parametrize(("op", "opset"), CASES)
@settings(max_examples=20)
@given(data=st.data())
def test_matches_onnxruntime(op: str, opset: int, data: st.DataObject) -> None:
    x, axis = data.draw(_input_and_axis(op))
    if opset < 13 and axis is None and x.ndim < 2:
        axis = 0  # the default axis 1 needs rank >= 2
    attrs = {} if axis is None else {"axis": axis}
    tol = 2e-3 if x.dtype == np.float16 else 1e-5
    check(op, opset, [x], attrs, rtol=tol, atol=tol)


def _rowwise(rule: str, matrix: np.ndarray) -> np.ndarray:
    """The schema's meaning on one 2-D matrix, row by row in plain Python floats."""
    out = np.zeros_like(matrix, dtype=np.float64)
    for i, row in enumerate(matrix.astype(np.float64)):
        top = max(row)
        total = sum(np.exp(v - top) for v in row)
        for j, v in enumerate(row):
            if rule == "Softmax":
                out[i, j] = np.exp(v - top) / total
            elif rule == "LogSoftmax":
                out[i, j] = v - top - np.log(total)
            else:
                out[i, j] = 1.0 if j == list(row).index(top) else 0.0
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("opset", [7, 11, 12])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_coercion_of_versions_1_and_11(op: str, opset: int, axis: int) -> None:
    """Schema of versions 1/11: a (2, 3, 4) input at axis k is the matrix
    [prod(shape[:k]), prod(shape[k:])], normalised row by row (computed here in loops)."""
    x = np.random.default_rng(axis + 7).standard_normal((2, 3, 4)).astype(np.float32)
    k = axis % 3
    expected = _rowwise(op, x.reshape(int(np.prod(x.shape[:k])), -1)).reshape(x.shape)
    (actual,) = check(op, opset, [x], {"axis": axis})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_version_13_is_one_axis(op: str) -> None:
    """Schema of version 13: axis 1 of a (2, 3, 4) input gives 8 independent lines of 3 values."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    moved = np.moveaxis(x, 1, -1).reshape(-1, 3)
    expected = np.moveaxis(_rowwise(op, moved).reshape(2, 4, 3), -1, 1)
    (actual,) = check(op, 13, [x], {"axis": 1})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("op", "opset"), CASES)
def test_large_values_are_stable(op: str, opset: int) -> None:
    x = np.array([[1000.0, 1000.0, -1000.0], [-1e4, 3.0, 3.0]], np.float32)
    (y,) = check(op, opset, [x], {"axis": 1})
    assert np.isfinite(y).all()


@pytest.mark.parametrize("opset", since_opsets("Hardmax"))
def test_hardmax_first_maximum_wins(opset: int) -> None:
    x = np.array([[3.0, 5.0, 5.0, 1.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    (y,) = check("Hardmax", opset, [x], {"axis": 1})
    np.testing.assert_array_equal(y, [[0, 1, 0, 0], [1, 0, 0, 0]])


@pytest.mark.parametrize(("op", "opset"), CASES)
def test_empty_input(op: str, opset: int) -> None:
    check(op, opset, [np.zeros((0, 3), np.float32)], {"axis": 1})


@pytest.mark.parametrize(("op", "opset"), CASES)
def test_axis_out_of_range_is_a_model_error(op: str, opset: int) -> None:
    from harness import make_model

    x = np.ones((2, 3), np.float32)
    model = make_model(op, opset, [x], {"axis": 2})
    with pytest.raises(ModelError, match=r"softmax_node|hardmax_node|logsoftmax_node"):
        run_ovpool(model, {"x0": x})


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_float16_follows_the_function_body_step_by_step(op: str) -> None:
    """Softmax-13 and LogSoftmax-13 in float16 as their function bodies compute them: each step
    (ReduceMax, Sub, Exp, ReduceSum, Div; Log, Sub) in float16, numpy's float16 arithmetic here
    (test_attention_4d_causal_fp16_expanded's expected data are those). onnxruntime computes in
    float32 and rounds once: up to a float16 step away (the onnxruntime test above allows it)."""
    x = (np.random.default_rng(5).standard_normal((64, 7)) * 3).astype(np.float16)
    (y,) = run_ovpool(make_model(op, 13, [x]), {"x0": x})
    shifted = x - x.max(axis=-1, keepdims=True)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    expected = np.exp(shifted) / total if op == "Softmax" else shifted - np.log(total)
    np.testing.assert_array_equal(y, expected)
    wide = x.astype(np.float32) - x.astype(np.float32).max(axis=-1, keepdims=True)
    log_total = np.log(np.exp(wide).sum(axis=-1, keepdims=True))
    once = (np.exp(wide - log_total) if op == "Softmax" else wide - log_total).astype(np.float16)
    assert (y != once).any()  # rounding once gives other values here

"""Reductions and ArgMax/ArgMin against onnxruntime at every since-version (axes as attribute or
input, constant or computed, keepdims, noop_with_empty_axes, empty reductions, integer types), a
few rules against the schema text, and ONNX's own node test cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from harness import check, check_node_case, drawn_rng, make_model, node_case_params, run_ort, run_ovpool, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, helper

from ovpool.errors import ModelError

REDUCE_OPS = (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
)
ARG_OPS = ("ArgMax", "ArgMin")
REDUCE_CASES = [(op, opset) for op in REDUCE_OPS for opset in since_opsets(op)]
ARG_CASES = [(op, opset) for op in ARG_OPS for opset in since_opsets(op)]

# The schema types tested: those onnxruntime has kernels for (its uint32/uint64 kernels are rare).
TESTED_TYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def _allowed(op: str, opset: int) -> list[np.dtype]:
    """The schema's types for ``op`` at ``opset`` among TESTED_TYPES."""
    schema = onnx.defs.get_schema(op, opset)
    allowed = {s for c in schema.type_constraints if c.type_param_str == "T" for s in c.allowed_type_strs}
    return [np.dtype(t) for name, t in TESTED_TYPES.items() if name in allowed]


def _takes_axes_input(op: str, opset: int) -> bool:
    return len(onnx.defs.get_schema(op, opset).inputs) > 1


def _values(draw: st.DrawFn, op: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    rng = drawn_rng(draw)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" or op == "ReduceLogSum" else -4
        high = 2 if op == "ReduceProd" else 5
        return rng.integers(low, high, shape).astype(dtype)
    if op == "ReduceProd":
        return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(dtype)
    if op == "ReduceLogSum":
        return rng.uniform(0.1, 2.0, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _tolerance(op: str, dtype: np.dtype) -> float:
    return 1e-2 if dtype == np.float16 else 1e-5


@st.composite
def _reduce_case(draw: st.DrawFn, op: str, opset: int) -> tuple[list, dict, tuple[int, ...]]:
    """(inputs, attributes, constant input indices) for one reduction node."""
    dtypes = _allowed(op, opset)
    if op == "ReduceLogSumExp":
        dtypes = [d for d in dtypes if d.kind == "f"]  # integer LogSumExp: see test_integer_log_sum_exp
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(0, 4))
    smallest = 0 if op in ("ReduceSum", "ReduceMax", "ReduceMin") and dtype != np.bool_ else 1  # see test_empty_extreme
    shape = tuple(draw(st.lists(st.integers(smallest, 4), min_size=rank, max_size=rank)))
    x = _values(draw, op, shape, dtype)
    attrs: dict = {}
    if draw(st.booleans()):
        attrs["keepdims"] = draw(st.integers(0, 1))
    chosen = draw(st.lists(st.integers(0, rank - 1), max_size=rank, unique=True)) if rank else []
    negative = x.size > 0  # onnxruntime ignores negative axes of an empty input: see test_negative_axes_of_an_empty_input
    axes = [a - rank if negative and draw(st.booleans()) else a for a in chosen]
    if not _takes_axes_input(op, opset):
        if axes:
            attrs["axes"] = axes
        return [x], attrs, ()
    if draw(st.booleans()):
        attrs["noop_with_empty_axes"] = draw(st.integers(0, 1))
    form = draw(st.sampled_from(["omitted", "constant", "computed"]))
    if form == "omitted":
        return [x], attrs, ()
    return [x, np.array(axes, np.int64)], attrs, (1,) if form == "constant" else ()


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
@settings(max_examples=15)
@given(data=st.data())
def test_reduce_matches_onnxruntime(op: str, opset: int, data: st.DataObject) -> None:
    inputs, attrs, constant = data.draw(_reduce_case(op, opset))
    tol = _tolerance(op, inputs[0].dtype)
    check(op, opset, inputs, attrs, constant=constant, rtol=tol, atol=tol)


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
def test_empty_reduction(op: str, opset: int) -> None:
    """Zero elements: Sum 0, Prod 1, Max -inf, Min +inf, LogSumExp -inf... (Mean: onnxruntime's 0)."""
    x = np.zeros((2, 0, 3), np.float32)
    if _takes_axes_input(op, opset):
        check(op, opset, [x, np.array([1], np.int64)], constant=(1,))
    else:
        check(op, opset, [x], {"axes": [1]})


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
def test_negative_axes_of_an_empty_input(op: str, opset: int) -> None:
    """Schema oracle, not onnxruntime: axis -2 of a (0, 3) input is axis 0, so the result is (1, 3)
    of the empty reduction's value. onnxruntime 1.31 returns the (0, 3) input shape unreduced
    whenever the input is empty and an axis is negative (axis 0 gives it (1, 3))."""
    identity = {"ReduceProd": 1.0, "ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}
    x = np.zeros((0, 3), np.float32)
    inputs = [x, np.array([-2], np.int64)] if _takes_axes_input(op, opset) else [x]
    model = make_model(op, opset, inputs, {} if len(inputs) > 1 else {"axes": [-2]}, constant=(1,))
    with np.errstate(all="ignore"):
        (y,) = run_ovpool(model, {"x0": x})
    np.testing.assert_array_equal(y, np.full((1, 3), identity.get(op, 0.0), np.float32))


@pytest.mark.parametrize(
    ("op", "opset", "dtype"),
    [
        (op, opset, dtype)
        for op, opset in REDUCE_CASES
        if op in ("ReduceMax", "ReduceMin")
        for dtype in _allowed(op, opset)
        if dtype.kind in "iub"
    ],
)
def test_empty_extreme(op: str, opset: int, dtype: np.dtype) -> None:
    """ReduceMax of nothing is the type's minimum (False for bool), ReduceMin its maximum (True).
    For bool the schema is the oracle: onnxruntime refuses ("not defined for empty set with bool")."""
    x = np.zeros((0, 3), dtype)
    inputs, attrs = ([x, np.array([0], np.int64)], {}) if _takes_axes_input(op, opset) else ([x], {"axes": [0]})
    if dtype != np.bool_:
        check(op, opset, inputs, attrs, constant=(1,))
        return
    (y,) = run_ovpool(make_model(op, opset, inputs, attrs, constant=(1,)), {"x0": x})
    np.testing.assert_array_equal(y, np.full((1, 3), op == "ReduceMin"))


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
def test_empty_axes_attribute_reduces_everything(op: str, opset: int) -> None:
    """An ``axes`` attribute given as an empty list, or an empty ``axes`` input, reduces every axis."""
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    if _takes_axes_input(op, opset):
        (y,) = check(op, opset, [x, np.zeros(0, np.int64)], {"keepdims": 0}, constant=(1,))
    else:
        model = make_model(op, opset, [x], {"keepdims": 0})
        model.graph.node[0].attribute.append(helper.make_attribute("axes", [], attr_type=AttributeProto.INTS))
        (expected,) = run_ort(model, {"x0": x})
        (y,) = run_ovpool(model, {"x0": x})
        np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert y.shape == ()


@pytest.mark.parametrize(("op", "opset"), [(op, opset) for op, opset in REDUCE_CASES if _takes_axes_input(op, opset)])
def test_noop_with_empty_axes_keeps_the_elementwise_step(op: str, opset: int) -> None:
    """Schema: reducing no axis is the identity, but ReduceSumSquare still squares, ReduceL1 takes |x|,
    ReduceLogSum the log."""
    x = np.array([[0.5, -2.0], [3.0, 1.5]], np.float32)
    if op == "ReduceLogSum":
        x = np.abs(x)
    elementwise = {"ReduceSumSquare": x * x, "ReduceL1": np.abs(x), "ReduceL2": np.abs(x), "ReduceLogSum": np.log(x)}
    (y,) = check(op, opset, [x], {"noop_with_empty_axes": 1})
    np.testing.assert_allclose(y, elementwise.get(op, x), rtol=1e-6)


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
def test_repeated_axis_counts_once(op: str, opset: int) -> None:
    x = np.random.default_rng(1).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    if _takes_axes_input(op, opset):
        check(op, opset, [x, np.array([1, -2], np.int64)], constant=(1,))
    else:
        check(op, opset, [x], {"axes": [1, -2]})


@pytest.mark.parametrize("opset", since_opsets("ReduceMean"))
def test_integer_mean_truncates_toward_zero(opset: int) -> None:
    """Integer mean: -13 / 4 is -3 (toward zero, not floor's -4); 7 / 3 is 2."""
    x = np.array([[-5, -1, -3, -4], [1, 2, 4, 0]], np.int32)
    inputs = [x, np.array([1], np.int64)] if _takes_axes_input("ReduceMean", opset) else [x]
    attrs = {} if len(inputs) > 1 else {"axes": [1]}
    (y,) = check("ReduceMean", opset, inputs, attrs, constant=(1,) if len(inputs) > 1 else ())
    np.testing.assert_array_equal(y, [[-3], [1]])


@pytest.mark.parametrize("opset", since_opsets("ReduceLogSumExp"))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_log_sum_exp(opset: int, dtype: type) -> None:
    """Schema oracle, not onnxruntime: log(sum(exp(x))) in float64 truncated to the integer type.
    onnxruntime accumulates exp(x - max) in the integer type, so [4, 3, 3, 3, 3, 3] gives it 4 where
    the value is 5.04."""
    x = np.array([[4, 3, 3, 3, 3, 3], [-3, 5, -7, 1, 1, 1]], dtype)
    expected = np.trunc(np.log(np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True))).astype(dtype)
    inputs = [x, np.array([1], np.int64)] if _takes_axes_input("ReduceLogSumExp", opset) else [x]
    model = make_model("ReduceLogSumExp", opset, inputs, {} if len(inputs) > 1 else {"axes": [1]}, constant=(1,))
    (y,) = run_ovpool(model, {"x0": x})
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(expected, [[5], [5]])


@pytest.mark.parametrize(("op", "opset"), REDUCE_CASES)
def test_axis_out_of_range_is_a_model_error(op: str, opset: int) -> None:
    x = np.ones((2, 3), np.float32)
    inputs = [x, np.array([2], np.int64)] if _takes_axes_input(op, opset) else [x]
    model = make_model(op, opset, inputs, {} if len(inputs) > 1 else {"axes": [2]}, constant=(1,))
    with pytest.raises(ModelError, match="axes"):
        run_ovpool(model, {"x0": x})


@st.composite
def _arg_case(draw: st.DrawFn, op: str, opset: int) -> tuple[np.ndarray, dict]:
    dtype = draw(st.sampled_from(_allowed(op, opset)))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    rng = drawn_rng(draw)
    x = (rng.integers(0, 3, shape) if draw(st.booleans()) else rng.standard_normal(shape) * 10).astype(dtype)  # ties
    attrs: dict = {}
    if draw(st.booleans()):
        attrs["axis"] = draw(st.integers(-rank if opset >= 11 else 0, rank - 1))
    elif rank == 0:
        attrs["axis"] = 0
    if draw(st.booleans()):
        attrs["keepdims"] = draw(st.integers(0, 1))
    if opset >= 12 and draw(st.booleans()):
        attrs["select_last_index"] = draw(st.integers(0, 1))
    return x, attrs


@pytest.mark.parametrize(("op", "opset"), ARG_CASES)
@settings(max_examples=20)
@given(data=st.data())
def test_arg_matches_onnxruntime(op: str, opset: int, data: st.DataObject) -> None:
    x, attrs = data.draw(_arg_case(op, opset))
    (y,) = check(op, opset, [x], attrs)
    assert y.dtype == np.int64


@pytest.mark.parametrize(("op", "opset"), [(op, opset) for op, opset in ARG_CASES if opset >= 12])
def test_select_last_index(op: str, opset: int) -> None:
    x = np.array([[1, 5, 5, 1], [4, 1, 1, 4]], np.float32)
    (first,) = check(op, opset, [x], {"axis": 1, "keepdims": 0})
    (last,) = check(op, opset, [x], {"axis": 1, "keepdims": 0, "select_last_index": 1})
    expected = {"ArgMax": ([1, 0], [2, 3]), "ArgMin": ([0, 1], [3, 2])}[op]
    np.testing.assert_array_equal(first, expected[0])
    np.testing.assert_array_equal(last, expected[1])


@pytest.mark.parametrize(("op", "opset"), ARG_CASES)
def test_arg_of_an_empty_axis_is_a_model_error(op: str, opset: int) -> None:
    x = np.zeros((2, 0), np.float32)
    with pytest.raises(ModelError, match="empty"):
        run_ovpool(make_model(op, opset, [x], {"axis": 1}), {"x0": x})


@pytest.mark.parametrize("case", node_case_params(REDUCE_OPS + ARG_OPS))
def test_onnx_node_cases(case: Any) -> None:
    with np.errstate(all="ignore"):
        check_node_case(case)

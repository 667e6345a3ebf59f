"""The numpy executor against the naive loop oracle over the whole attribute space."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper
from strategies import pool_cases

import ovpool
from ovpool import kernels

TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2, "int8": 0, "uint8": 0}


def _expected(case, x):
    op = "avg" if case.op_type == "AveragePool" else "max"
    return oracle.pool(x.astype(np.float64), op, case.attrs)


@given(pool_cases())
def test_pools_match_the_naive_oracle(case):
    x = case.input()
    try:
        expected = _expected(case, x)
    except (ValueError, ZeroDivisionError):
        # some window has no input cell (dilation stepping over a tiny input): ovpool refuses it
        with pytest.raises(ovpool.SpecError, match="no input cell"):
            ovpool.run(case.model(), {"x": x}, device="numpy")
        return
    got = ovpool.run(case.model(), {"x": x}, device="numpy")
    want = expected[0] if case.op_type == "MaxPool" else expected
    assert got["y"].dtype == x.dtype
    assert got["y"].shape == want.shape
    np.testing.assert_allclose(got["y"].astype(np.float64), want, rtol=TOLERANCE[case.dtype], atol=TOLERANCE[case.dtype])
    if case.with_indices:
        np.testing.assert_array_equal(got["indices"], expected[1])


@st.composite
def unit_stride_max_cases(draw):
    """MaxPool cases with stride 1 on every axis and no indices: the kernels' padded-buffer form."""
    case = draw(pool_cases(op_types=("MaxPool",)))
    return replace(case, attrs=dict(case.attrs, strides=[1] * (len(case.shape) - 2)), with_indices=False)


@given(unit_stride_max_cases(), st.integers(0, 3), st.sampled_from([1.5, 100.0]))
def test_unit_stride_max_pools_match_the_naive_oracle(case, seed, room):
    """Within the pooling rule's working memory (1.5 inputs) and with room for doubling (100)."""
    x = case.input(seed)
    if x.dtype.kind == "f":
        x[np.random.default_rng(seed).random(x.shape) < 0.1] = np.nan
    try:
        want = _expected(case, x)[0]
    except ValueError:
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernels, "SCRATCH_INPUTS", room)
        got = ovpool.run(case.model(), {"x": x}, device="numpy")["y"]
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want)


@st.composite
def covering_max_cases(draw):
    """MaxPool cases without pads, ceil mode or indices: most have no pad cell in any window
    (the kernels' strided-view form, ``kernels._covering_max``)."""
    case = draw(pool_cases(op_types=("MaxPool",)))
    attrs = {k: v for k, v in case.attrs.items() if k not in ("pads", "auto_pad", "ceil_mode", "storage_order")}
    return replace(case, attrs=attrs, with_indices=False)


@given(covering_max_cases(), st.integers(0, 3))
def test_max_pools_without_pad_cells_match_the_oracle_and_the_span_form(case, seed):
    """The strided-view form against the naive oracle, and bit for bit against the span form
    (by planes, innermost phases copied), NaN and -0.0 included."""
    x = case.input(seed)
    if x.dtype.kind == "f":
        rng = np.random.default_rng(seed)
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.1] = -0.0
    try:
        want = _expected(case, x)[0]
        got = ovpool.run(case.model(), {"x": x}, device="numpy")["y"]
    except (ValueError, ovpool.SpecError):  # without its pads the window outgrows the input
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernels, "SMALL_POOL", -1)
        spans = ovpool.run(case.model(), {"x": x}, device="numpy")["y"]
    assert got.dtype == x.dtype and got.shape == want.shape and got.tobytes() == spans.tobytes()
    np.testing.assert_array_equal(got.astype(np.float64), want)


@given(pool_cases(op_types=("MaxPool",)), st.integers(0, 3))
def test_nan_wins_with_the_index_of_the_first_nan(case, seed):
    if case.dtype in ("int8", "uint8"):
        return
    x = case.input(seed)
    rng = np.random.default_rng(seed)
    x[rng.random(x.shape) < 0.2] = np.nan
    try:
        expected = _expected(case, x)
    except ValueError:
        return
    got = ovpool.run(case.model(), {"x": x}, device="numpy")
    np.testing.assert_array_equal(np.isnan(got["y"].astype(np.float64)), np.isnan(expected[0]))
    if case.with_indices:
        np.testing.assert_array_equal(got["indices"], expected[1])


@st.composite
def unpool_cases(draw):
    rank = draw(st.integers(1, 3))
    opset = draw(st.sampled_from([9, 11, 22]))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel] * 2
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + tuple(draw(st.integers(1, 4)) for _ in range(rank))
    return opset, {"kernel_shape": kernel, "strides": strides, "pads": pads}, shape


@given(unpool_cases(), st.integers(0, 5))
def test_max_unpool_matches_the_naive_oracle(case, seed):
    opset, attrs, shape = case
    rank = len(shape) - 2
    out_spatial = [
        (shape[2 + a] - 1) * attrs["strides"][a] + attrs["kernel_shape"][a] - attrs["pads"][a] - attrs["pads"][rank + a]
        for a in range(rank)
    ]
    if min(out_spatial) < 1:
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    size = int(np.prod(shape[:2])) * int(np.prod(out_spatial))
    if size < x.size:
        return
    indices = rng.choice(size, x.size, replace=False).reshape(shape).astype(np.int64)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", **attrs)
    graph = helper.make_graph(
        [node],
        "u",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape)),
            helper.make_tensor_value_info("i", TensorProto.INT64, list(shape)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    got = ovpool.run(model, {"x": x, "i": indices}, device="numpy")["y"]
    np.testing.assert_array_equal(got, oracle.unpool(x, indices, attrs))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_global_pools(op, rank, dtype):
    x = np.random.default_rng(rank).standard_normal((2, 3) + (3,) * rank).astype(dtype)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="g")],
        "g",
        [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    got = ovpool.run(model, {"x": x}, device="numpy")["y"]
    kind = "avg" if op == "GlobalAveragePool" else "max"
    want = oracle.pool(x.astype(np.float64), kind, {"kernel_shape": list(x.shape[2:])})
    want = want[0] if kind == "max" else want
    assert got.shape == (2, 3) + (1,) * rank and got.dtype == x.dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])

"""onnxruntime's com.microsoft QOperator ops: the numpy executor's kernels (ovpool/engine/ops/
quantized.py) and their expansion (ovpool/onnx/qoperator.py), against onnxruntime's own kernels and
against their meaning computed here.

The meaning (the expansion's, "DequantizeLinear inputs -> float op -> QuantizeLinear output") is
computed independently in this file: each quantized input dequantized exactly and rounded once to
float32 (``deq``), the float op in numpy (float32 where it is one IEEE operation: Add, Mul,
LeakyRelu, selection; in float64 and then rounded to float32 for Sigmoid, Softmax, ReduceMean, Gemm
and Conv), and QuantizeLinear's quantization, a float32 quotient rounded half to even (``quant``). QLinearAveragePool and
QLinearGlobalAveragePool are quantized pools: exact rationals (the average of the dequantized
window), for which ``tests/oracle.py`` gives the window average in float64.

Compared in quantization steps:

- ovpool equals the meaning exactly where the float op is one IEEE operation and for the pools;
  for Sigmoid, Softmax, ReduceMean, Gemm and Conv numpy's float32 result and the float64 one
  rounded to float32 may differ by an ulp, so one step is allowed where the meaning's quotient lies
  within 2**-19 (relative) of a half.
- onnxruntime computes each op its own way (lookup tables built in float32 for Sigmoid, LeakyRelu,
  Concat; scale ratios in float32 for Add/Mul; integer accumulation and a float32 multiplier for
  QGemm/QLinearConv; float32 averages for the pools): one step is allowed where the meaning's
  quotient is within float32 rounding of a half (2**-19 relative, 1e-5 for Sigmoid's polynomial
  approximation), none elsewhere.

onnxruntime has no CPU kernel for QLinearReduceMean (the meaning alone checks it), and its uint8
QLinearSoftmax of a single-element axis returns 0 where softmax is 1.0, i.e. 256 steps, saturated
to 255 (``test_softmax_of_one_element``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import onnx
import pytest
from harness import examples, node_with_inputs, run_ort, run_ovpool
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from oracle import pool as oracle_pool
from test_ops_conv import conv_cases, schema_conv

from ovpool.errors import ModelError, UnsupportedError
from ovpool.onnx.qoperator import QOPERATORS, expand_model

RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
NICE_SCALES = (0.05, 0.1, 0.02, 0.5, 1 / 255, 0.25, 0.0078125, 0.2)
MS = "com.microsoft"


def ms_model(
    op: str, inputs: list[Any], constant: set[int], attrs: dict[str, Any] | None = None, opset: int = 17, name: str = "qnode"
):
    """One com.microsoft node (``harness.node_with_inputs``)."""
    return node_with_inputs(op, inputs, constant, attrs, opset, MS, name)


# ---------------------------------------------------------------------- the meaning, directly


def deq(q: np.ndarray, scale: Any, zero: Any) -> np.ndarray:
    """``(q - zero_point) * scale`` exactly (float64 holds it), rounded once to float32."""
    return ((np.asarray(q).astype(np.int64) - np.asarray(zero).astype(np.int64)) * np.float64(np.float32(scale))).astype(
        np.float32
    )


def quant(y: np.ndarray, scale: Any, zero: Any, qtype: str) -> tuple[np.ndarray, np.ndarray]:
    """QuantizeLinear's ``saturate(round_half_even(y / scale) + zero_point)`` of float32 ``y``, the
    quotient in float32 (as ONNX divides) and its rounding in rationals; and the quotients."""
    low, high = RANGES[qtype]
    y = np.asarray(y, dtype=np.float32)
    out = np.empty(y.shape, dtype=np.int64)
    quotient = np.empty(y.shape)
    for index in np.ndindex(y.shape):
        value = Fraction(float(y[index] / np.float32(scale)))
        quotient[index] = float(value)
        out[index] = min(max(round(value) + int(zero), low), high)
    return out, quotient


def near_tie(quotient: np.ndarray, window: float) -> np.ndarray:
    distance = np.abs(quotient - np.floor(quotient) - 0.5)
    return distance <= window * np.maximum(1.0, np.abs(quotient))


def assert_steps(
    actual: np.ndarray, ort: np.ndarray | None, meaning: tuple[np.ndarray, np.ndarray], own: float, theirs: float
) -> None:
    """ovpool equals the meaning but within ``own`` of a tie (where one step is allowed), and
    onnxruntime is within one step of it, that step only within ``theirs`` of a tie."""
    exact, quotient = meaning
    apart = np.abs(np.asarray(actual).astype(np.int64) - exact)
    assert apart.max(initial=0) <= (1 if own else 0), f"ovpool {apart.max()} steps from the meaning"
    assert near_tie(quotient, own)[apart == 1].all(), f"ovpool differs from the meaning away from a tie: {quotient[apart == 1]}"
    if ort is None:
        return
    assert ort.dtype == actual.dtype and ort.shape == actual.shape
    theirs_apart = np.abs(ort.astype(np.int64) - exact)
    assert theirs_apart.max(initial=0) <= 1, f"onnxruntime {theirs_apart.max()} steps from the meaning"
    assert near_tie(quotient, theirs)[theirs_apart == 1].all(), (
        f"onnxruntime differs away from a tie: {quotient[theirs_apart == 1]}"
    )


F32 = 2.0**-19  # a few float32 roundings, relative


# ---------------------------------------------------------------------- drawn quantization


def qparams(draw: st.DrawFn, rng: np.random.Generator, qtype: str) -> tuple[np.float32, np.ndarray]:
    scale = np.float32(draw(st.sampled_from(NICE_SCALES) | st.floats(1e-3, 1.0)))
    return scale, np.asarray(rng.integers(*RANGES[qtype]), dtype=qtype)


def ints(rng: np.random.Generator, shape: tuple[int, ...], qtype: str) -> np.ndarray:
    return rng.integers(RANGES[qtype][0], RANGES[qtype][1] + 1, size=shape).astype(qtype)


def output_scale(values: np.ndarray, draw: st.DrawFn) -> np.float32:
    """A y_scale that spreads ``values`` over a good part of the type (and past it, some)."""
    spread = float(np.percentile(np.abs(values), 90)) if values.size else 1.0
    return np.float32(max(spread, 1e-3) / draw(st.sampled_from([20, 60, 127, 200])))


@st.composite
def shape_pair(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast: the second a suffix of the first with some dims 1."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    cut = draw(st.integers(0, len(shape)))
    other = tuple(1 if draw(st.booleans()) else n for n in shape[cut:])
    return (shape, other) if draw(st.booleans()) else (other, shape)


# ---------------------------------------------------------------------- elementwise ops


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@examples(30)
@given(data=st.data())
def test_binary(op: str, data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    a_shape, b_shape = data.draw(shape_pair())
    a, b = ints(rng, a_shape, qtype), ints(rng, b_shape, qtype)
    (a_s, a_z), (b_s, b_z) = qparams(data.draw, rng, qtype), qparams(data.draw, rng, qtype)
    fa, fb = deq(a, a_s, a_z), deq(b, b_s, b_z)
    y = np.add(fa, fb) if op == "QLinearAdd" else np.multiply(fa, fb)
    y_s, y_z = output_scale(y, data.draw), np.asarray(rng.integers(*RANGES[qtype]) // 2, dtype=qtype)
    omit = data.draw(st.booleans()) and int(y_z) == 0
    inputs = [a, a_s, a_z, b, b_s, b_z, y_s, None if omit else y_z]
    model, feeds = ms_model(op, inputs, {1, 2, 4, 5, 6, 7} if data.draw(st.booleans()) else {1, 2, 4, 5, 6, 7, 0})
    actual = run_ovpool(model, feeds)[0]
    assert actual.dtype == a.dtype
    assert_steps(actual, run_ort(model, feeds)[0], quant(y, y_s, y_z, qtype), 0, F32)


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
@examples(30)
@given(data=st.data())
def test_unary(op: str, data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    x = ints(rng, shape, qtype)
    x_s, x_z = qparams(data.draw, rng, qtype)
    fx = deq(x, x_s, x_z)
    attrs: dict[str, Any] = {}
    if op == "QLinearSigmoid":
        y = (1 / (1 + np.exp(-fx.astype(np.float64)))).astype(np.float32)
        y_s = np.float32(data.draw(st.sampled_from([1 / 256, 1 / 255, 0.005])))
        own, theirs = F32, 1e-5
    else:
        alpha = data.draw(st.sampled_from([0.01, 0.1, 0.2, 0.3]))
        if alpha != 0.01 or data.draw(st.booleans()):
            attrs["alpha"] = alpha
        y = np.where(fx < 0, np.float32(alpha) * fx, fx).astype(np.float32)
        y_s = output_scale(y, data.draw)
        own, theirs = 0, F32
    y_z = np.asarray(rng.integers(*RANGES[qtype]) // 2, dtype=qtype)
    model, feeds = ms_model(op, [x, x_s, x_z, y_s, y_z], {1, 2, 3, 4}, attrs)
    assert_steps(run_ovpool(model, feeds)[0], run_ort(model, feeds)[0], quant(y, y_s, y_z, qtype), own, theirs)


@examples(30)
@given(data=st.data())
def test_concat(data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    shape = list(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    inputs: list[Any] = []
    parts = []
    y_s, y_z = qparams(data.draw, rng, qtype)
    for _ in range(data.draw(st.integers(1, 3))):
        shape[axis] = data.draw(st.integers(1, 3))
        q = ints(rng, tuple(shape), qtype)
        s, z = (y_s, y_z) if data.draw(st.booleans()) else qparams(data.draw, rng, qtype)
        inputs += [q, s, z]
        parts.append(deq(q, s, z))
    y = np.concatenate(parts, axis=axis)
    constant = {0, 1} | {i for i in range(2, 2 + len(inputs)) if i % 3 != 2}
    model, feeds = ms_model("QLinearConcat", [y_s, y_z, *inputs], constant, {"axis": axis})
    assert_steps(run_ovpool(model, feeds)[0], run_ort(model, feeds)[0], quant(y, y_s, y_z, qtype), 0, F32)


@examples(30)
@given(data=st.data())
def test_where(data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    x_shape, y_shape = data.draw(shape_pair())
    cond = rng.random(data.draw(st.sampled_from([x_shape, y_shape]))) < 0.5
    x, y = ints(rng, x_shape, qtype), ints(rng, y_shape, qtype)
    (xs, xz), (ys, yz), (zs, zz) = (qparams(data.draw, rng, qtype) for _ in range(3))
    out = np.where(cond, deq(x, xs, xz), deq(y, ys, yz))
    model, feeds = ms_model("QLinearWhere", [cond, x, xs, xz, y, ys, yz, zs, zz], {2, 3, 5, 6, 7, 8})
    assert_steps(run_ovpool(model, feeds)[0], run_ort(model, feeds)[0], quant(out, zs, zz, qtype), 0, F32)


# ---------------------------------------------------------------------- softmax, reduce mean


def softmax64(x: np.ndarray, axis: int, coerced: bool) -> np.ndarray:
    """Softmax in float64: along ``axis``, or (``coerced``) over the 2-D coercion at ``axis``."""
    x64 = x.astype(np.float64)
    if coerced:
        axis %= x.ndim
        flat = x64.reshape(math.prod(x.shape[:axis]), -1)
        e = np.exp(flat - flat.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("model_opset", [11, 17])
@examples(30)
@given(data=st.data())
def test_softmax(model_opset: int, data: st.DataObject) -> None:
    """``opset`` below 13: over the 2-D coercion at axis; from 13 along axis; axis -1 by default
    (the schema's, as onnxruntime reads it), whatever the model's own ai.onnx opset."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    meaning = data.draw(st.sampled_from([11, 13]))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    if meaning >= 13 and model_opset < 13 and axis is not None:
        axis = -1  # other axes are refused in such a model (test_refusals)
    x = ints(rng, shape, qtype)
    x_s, x_z = qparams(data.draw, rng, qtype)
    y_s, y_z = np.float32(1 / 256), np.asarray(0 if qtype == "uint8" else -128, dtype=qtype)
    attrs = {"opset": meaning, **({} if axis is None else {"axis": axis})}
    use = axis if axis is not None else -1
    y = softmax64(deq(x, x_s, x_z), use, meaning < 13).astype(np.float32)
    model, feeds = ms_model("QLinearSoftmax", [x, x_s, x_z, y_s, y_z], {1, 2, 3, 4}, attrs, opset=model_opset)
    reduced = math.prod(shape[use % len(shape) :]) if meaning < 13 else shape[use]
    ort = run_ort(model, feeds)[0] if qtype == "int8" or reduced > 1 else None  # test_softmax_of_one_element
    assert_steps(run_ovpool(model, feeds)[0], ort, quant(y, y_s, y_z, qtype), F32, F32)


def test_softmax_of_one_element() -> None:
    """Softmax over one element is 1.0: 256 steps of 1/256, saturated to 255. onnxruntime 1.31's
    uint8 QLinearSoftmax gives 0 there (int8 gives 127 from zero point -128)."""
    x = np.array([[7], [200]], np.uint8)
    model, feeds = ms_model(
        "QLinearSoftmax", [x, np.float32(0.1), np.uint8(3), np.float32(1 / 256), np.uint8(0)], {1, 2, 3, 4}, {"opset": 13}
    )
    assert run_ovpool(model, feeds)[0].tolist() == [[255], [255]]
    assert run_ort(model, feeds)[0].tolist() == [[0], [0]]


@examples(30)
@given(data=st.data())
def test_reduce_mean_against_the_meaning(data: st.DataObject) -> None:
    """onnxruntime has no CPU kernel: the meaning alone (ReduceMean over ``axes``, all by default)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qtype = data.draw(st.sampled_from(list(RANGES)))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    axes = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    keepdims = data.draw(st.sampled_from([0, 1]))
    x = ints(rng, shape, qtype)
    x_s, x_z = qparams(data.draw, rng, qtype)
    fx = deq(x, x_s, x_z).astype(np.float64)
    y = fx.mean(axis=None if axes is None else tuple(axes), keepdims=bool(keepdims)).astype(np.float32)
    y_s, y_z = output_scale(y, data.draw), np.asarray(0, dtype=qtype)
    attrs = {"keepdims": keepdims, **({} if axes is None else {"axes": axes})}
    model, feeds = ms_model(
        "QLinearReduceMean", [x, x_s, x_z, y_s, y_z], {1, 2, 3, 4}, attrs, opset=data.draw(st.sampled_from([13, 18]))
    )
    assert_steps(run_ovpool(model, feeds)[0], None, quant(y, y_s, y_z, qtype), F32, F32)


# ---------------------------------------------------------------------- pools


@st.composite
def pool_case(draw: st.DrawFn, global_pool: bool) -> tuple[np.ndarray, dict[str, Any]]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    qtype = draw(st.sampled_from(list(RANGES)))
    rank = draw(st.integers(1, 3))
    kernel = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    sizes = [k + draw(st.integers(0, 3)) for k in kernel]
    x = ints(rng, (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *sizes), qtype)
    if global_pool:
        return x, {}
    attrs: dict[str, Any] = {"kernel_shape": kernel}
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    mode = draw(st.sampled_from(["pads", "pads", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if mode == "pads":
        attrs["pads"] = [draw(st.integers(0, k - 1)) for k in kernel * 2]
        if draw(st.booleans()):
            attrs["ceil_mode"] = 1
    else:
        attrs["auto_pad"] = mode
    attrs["count_include_pad"] = draw(st.sampled_from([0, 1]))
    return x, attrs


@pytest.mark.parametrize("op", ["QLinearAveragePool", "QLinearGlobalAveragePool"])
@examples(40)
@given(data=st.data())
def test_pools(op: str, data: st.DataObject) -> None:
    """Exact quantized averages (ovpool.quant); onnxruntime within one step, near ties only. The
    meaning's quotient comes from the naive oracle's float64 average (a tie there is exact: the
    average of integers at one scale is a multiple of 1/count)."""
    x, attrs = data.draw(pool_case(op == "QLinearGlobalAveragePool"))
    qtype = x.dtype.name
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    (x_s, x_z), (y_s, y_z) = qparams(data.draw, rng, qtype), qparams(data.draw, rng, qtype)
    channels_last = data.draw(st.booleans())
    centred = x.astype(np.float64) - int(x_z)
    window = dict(attrs, kernel_shape=list(x.shape[2:])) if op == "QLinearGlobalAveragePool" else attrs
    average = oracle_pool(centred, "avg", window)
    exact = np.empty(average.shape, dtype=np.int64)
    quotient = np.empty(average.shape)
    low, high = RANGES[qtype]
    for index in np.ndindex(average.shape):
        value = Fraction(float(average[index])).limit_denominator(10**6) * Fraction(float(x_s)) / Fraction(float(y_s))
        quotient[index] = float(value)
        exact[index] = min(max(round(value) + int(y_z), low), high)
    feed_x = np.moveaxis(x, 1, -1).copy() if channels_last else x
    model, feeds = ms_model(op, [feed_x, x_s, x_z, y_s, y_z], {1, 2, 3, 4}, {**attrs, "channels_last": int(channels_last)})
    actual, ort = run_ovpool(model, feeds)[0], _ort_pool(model, feeds)
    if channels_last:
        actual = np.moveaxis(actual, -1, 1)
        ort = None if ort is None else np.moveaxis(ort, -1, 1)
    # onnxruntime divides a ceil window that runs past the input (not into pads) by the whole
    # kernel with count_include_pad, as its float AveragePool does (docs/semantics.md) ...
    past_the_end = attrs.get("ceil_mode") and attrs.get("count_include_pad")
    # and SAME pads that come out negative ((out - 1) * stride + kernel < length) move its windows
    negative = str(attrs.get("auto_pad", "")).startswith("SAME") and any(
        (-(-n // s) - 1) * s + k < n
        for n, s, k in zip(x.shape[2:], attrs.get("strides", [1] * (x.ndim - 2)), attrs["kernel_shape"])
    )
    assert_steps(actual, None if past_the_end or negative else ort, (exact, quotient), 0, F32)


def _ort_pool(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray | None:
    """onnxruntime's QLinear pool, or None where its kernel refuses the scales: x_scale / (y_scale *
    count) of 256 or more is "parameter out of computation range" (MLAS's requantization)."""
    try:
        return run_ort(model, feeds)[0]
    except Exception as exc:  # onnxruntime raises its own exception types
        if "out of computation range" in str(exc):
            return None
        raise


def test_average_pool_tie_rounds_to_even() -> None:
    """uint8 cells 3 and 4 at one scale average to 3.5 exactly: 4 (half to even); 5 and 6: 5.5 -> 6,
    1 and 2: 1.5 -> 2, and 2 and 3: 2.5 -> 2."""
    x = np.array([[[3, 4, 5, 6, 1, 2, 2, 3]]], np.uint8)
    inputs = [x, np.float32(0.05), np.uint8(0), np.float32(0.05), np.uint8(0)]
    model, feeds = ms_model("QLinearAveragePool", inputs, {1, 2, 3, 4}, {"kernel_shape": [2], "strides": [2]})
    assert run_ovpool(model, feeds)[0].tolist() == [[[4, 6, 2, 2]]]


# ---------------------------------------------------------------------- QGemm, QLinearConv


@examples(40)
@given(data=st.data())
def test_qgemm(data: st.DataObject) -> None:
    """Per-tensor or per-column b, transA/transB, alpha (which scales the bias too), the int32 bias
    as (N,), (1, N) or (M, N), a quantized or a float output."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a_type, b_type = data.draw(st.sampled_from([("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")]))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    trans_a, trans_b = data.draw(st.booleans()), data.draw(st.booleans())
    a = ints(rng, (k, m) if trans_a else (m, k), a_type)
    b = ints(rng, (n, k) if trans_b else (k, n), b_type)
    a_s, a_z = qparams(data.draw, rng, a_type)
    per_column = data.draw(st.booleans())
    b_s = rng.choice(np.asarray(NICE_SCALES, np.float32), size=n) if per_column else qparams(data.draw, rng, b_type)[0]
    b_z = ints(rng, (n,), b_type) if per_column else np.asarray(rng.integers(*RANGES[b_type]), dtype=b_type)
    if b_type == "int8":
        b_z = np.zeros_like(b_z)  # onnxruntime's int8 weights are symmetric
    bias_shape = data.draw(st.sampled_from([None, (n,), (1, n), (m, n)]))
    c = None if bias_shape is None else rng.integers(-3000, 3000, size=bias_shape).astype(np.int32)
    alpha = data.draw(st.sampled_from([1.0, 1.0, 0.5]))
    fa, fb = deq(a, a_s, a_z), deq(b.T if trans_b else b, b_s, b_z)  # per-column values run along B's last axis
    y = alpha * (fa.T if trans_a else fa).astype(np.float64) @ fb.astype(np.float64)
    if c is not None:
        bias_scale = (np.float32(a_s) * np.asarray(b_s, np.float32)).astype(np.float32)
        y = y + alpha * (c.astype(np.float64) * bias_scale.astype(np.float64)).astype(np.float32)
    y = y.astype(np.float32)
    attrs: dict[str, Any] = {**({"transA": 1} if trans_a else {}), **({"transB": 1} if trans_b else {})}
    if alpha != 1.0:
        attrs["alpha"] = alpha
    quantized = data.draw(st.booleans())
    if quantized:
        y_s, y_z = output_scale(y, data.draw), np.asarray(rng.integers(*RANGES[a_type]) // 2, dtype=a_type)
        inputs = [a, a_s, a_z, b, b_s, b_z, c, y_s, y_z]
    else:
        inputs = [a, a_s, a_z, b, b_s, b_z, c]
    model, feeds = ms_model("QGemm", inputs, {1, 2, 3, 4, 5, 6, 7, 8}, attrs)
    actual, ort = run_ovpool(model, feeds)[0], run_ort(model, feeds)[0]
    if quantized:
        assert_steps(actual, ort, quant(y, y_s, y_z, a_type), F32, F32)
    else:
        assert actual.dtype == ort.dtype == np.float32
        np.testing.assert_allclose(actual, y, rtol=1e-5, atol=1e-5 * float(np.abs(y).max(initial=1)))
        np.testing.assert_allclose(ort, y, rtol=1e-5, atol=1e-5 * float(np.abs(y).max(initial=1)))


@examples(30)
@given(data=st.data())
def test_qlinear_conv_microsoft(data: st.DataObject) -> None:
    """com.microsoft QLinearConv (what onnxruntime's NHWC layout pass writes): ai.onnx
    QLinearConv's meaning, channels_last (N, *spatial, C) too, weights (M, C/group, *kernel)."""
    (fx, fw, fb), attrs, _ = data.draw(conv_cases(ort_safe=True))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    xtype, wtype = data.draw(st.sampled_from([("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")]))
    x, w = ints(rng, fx.shape, xtype), ints(rng, fw.shape, wtype)
    m = w.shape[0]
    x_s, x_z = qparams(data.draw, rng, xtype)
    per_channel = data.draw(st.booleans())
    w_s = rng.choice(np.asarray(NICE_SCALES, np.float32), size=m) if per_channel else qparams(data.draw, rng, wtype)[0]
    w_z = np.zeros(m if per_channel else (), dtype=wtype) if wtype == "int8" else np.asarray(rng.integers(0, 256), dtype=wtype)
    bias = rng.integers(-3000, 3000, size=m).astype(np.int32) if fb is not None else None
    column = (-1,) + (1,) * (w.ndim - 1)
    fw64 = deq(
        w, np.asarray(w_s).reshape(column) if per_channel else w_s, np.asarray(w_z).reshape(column) if per_channel else w_z
    )
    fbias = None
    if bias is not None:
        fbias = (bias.astype(np.float64) * (np.float32(x_s) * np.asarray(w_s, np.float32)).astype(np.float32)).astype(np.float32)
    y = schema_conv(deq(x, x_s, x_z).astype(np.float64), fw64.astype(np.float64), fbias, attrs).astype(np.float32)
    y_s, y_z = output_scale(y, data.draw), np.asarray(rng.integers(*RANGES[xtype]) // 2, dtype=xtype)
    channels_last = data.draw(st.booleans())
    feed_x = np.moveaxis(x, 1, -1).copy() if channels_last else x
    inputs = [feed_x, x_s, x_z, w, np.asarray(w_s, np.float32), w_z, y_s, y_z, bias]
    model, feeds = ms_model("QLinearConv", inputs, {1, 2, 3, 4, 5, 6, 7, 8}, {**attrs, "channels_last": int(channels_last)})
    actual, ort = run_ovpool(model, feeds)[0], run_ort(model, feeds)[0]
    if channels_last:
        actual, ort = np.moveaxis(actual, -1, 1), np.moveaxis(ort, -1, 1)
    assert_steps(actual, ort, quant(y, y_s, y_z, xtype), F32, F32)


# ---------------------------------------------------------------------- expand_model

# one node of each op, as onnxruntime's quantizer writes them (constant scales and zero points)
_U8 = np.uint8


def _example(op: str) -> tuple[list[Any], set[int], dict[str, Any]]:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (1, 3, 4, 4)).astype(_U8)
    s, z = np.float32(0.05), _U8(128)
    ys, yz = np.float32(0.1), _U8(120)
    unary = ([x, s, z, ys, yz], {1, 2, 3, 4})
    if op in ("QLinearAdd", "QLinearMul"):
        return [x, s, z, x[:, :1], np.float32(0.07), _U8(100), ys, yz], {1, 2, 4, 5, 6, 7}, {}
    if op == "QLinearConcat":
        return [ys, yz, x, s, z, x, np.float32(0.07), _U8(100)], {0, 1, 3, 4, 6, 7}, {"axis": 1}
    if op == "QLinearWhere":
        return [rng.random((1, 3, 4, 4)) < 0.5, x, s, z, x, np.float32(0.07), _U8(100), ys, yz], {2, 3, 5, 6, 7, 8}, {}
    if op == "QGemm":
        a, b = x.reshape(6, 8), rng.integers(-128, 128, (5, 8)).astype(np.int8)
        c = rng.integers(-500, 500, (5,)).astype(np.int32)
        return (
            [a, s, z, b, np.linspace(0.01, 0.03, 5).astype(np.float32), np.zeros(5, np.int8), c, ys, yz],
            set(range(1, 9)),
            {"transB": 1},
        )
    if op == "QLinearConv":
        w = rng.integers(-128, 128, (2, 3, 3, 3)).astype(np.int8)
        inputs = [x, s, z, w, np.array([0.02, 0.03], np.float32), np.zeros(2, np.int8), ys, yz, np.array([100, -50], np.int32)]
        return inputs, set(range(1, 9)), {"pads": [1, 1, 1, 1]}
    attrs = {
        "QLinearAveragePool": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
        "QLinearGlobalAveragePool": {"channels_last": 0},
        "QLinearSoftmax": {"opset": 13, "axis": 1},
        "QLinearReduceMean": {"axes": [2, 3], "keepdims": 1},
        "QLinearLeakyRelu": {"alpha": 0.1},
    }.get(op, {})
    return *unary, attrs


@pytest.mark.parametrize("op", sorted(QOPERATORS))
def test_expansion_means_the_node_on_onnxruntime(op: str) -> None:
    """The expanded model on onnxruntime (its float ops) is within one step of onnxruntime's own
    kernel for the node, at a tie only; it passes onnx's full check, holds no com.microsoft node,
    the float op keeps the node's name and the output its tensor name."""
    inputs, constant, attrs = _example(op)
    model, feeds = ms_model(op, inputs, constant, attrs, opset=17, name="layer")
    expanded = expand_model(model)
    assert expanded is not model and [n.domain for n in expanded.graph.node if n.domain == MS] == []
    float_ops = [n for n in expanded.graph.node if n.name == "layer"]
    assert len(float_ops) == 1 and float_ops[0].op_type == QOPERATORS[op].float_op
    assert any(n.name == "layer/quantize" and n.output[0] == "y" for n in expanded.graph.node)
    assert all(n.name.startswith("layer/") for n in expanded.graph.node if n.name != "layer")
    ours = run_ort(expanded, feeds)[0]
    typed = onnx.ModelProto()
    typed.CopyFrom(expanded)
    typed.graph.output[0].CopyFrom(
        helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(ours.dtype), list(ours.shape))
    )
    onnx.checker.check_model(typed, full_check=True)
    ovpool = run_ovpool(expanded, feeds)[0]
    if op == "QLinearReduceMean":
        return  # onnxruntime has no kernel for the node itself
    theirs = run_ort(model, feeds)[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max() <= 1
    assert np.abs(ovpool.astype(np.int64) - theirs.astype(np.int64)).max() <= 1


def test_model_without_qoperator_nodes_is_returned_as_it_is() -> None:
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [], []))
    assert expand_model(model) is model


def test_expansion_reaches_subgraphs_and_keeps_names_fresh() -> None:
    """A QLinearAdd inside an If branch is expanded there (its scales initializers of the branch);
    the name the expansion would take (``add/quantize``) is already a node of the other branch, so
    it gets a suffix. The expanded model means what the original does on onnxruntime."""
    inputs, _, _ = _example("QLinearAdd")
    x, s, z, b, bs, bz, ys, yz = inputs
    inits = [
        numpy_helper.from_array(np.asarray(v), n) for v, n in ((s, "s"), (z, "z"), (bs, "bs"), (bz, "bz"), (ys, "ys"), (yz, "yz"))
    ]
    add = helper.make_node("QLinearAdd", ["x", "s", "z", "b", "bs", "bz", "ys", "yz"], ["t"], name="add", domain=MS)
    then = helper.make_graph([add], "then", [], [helper.make_tensor_value_info("t", TensorProto.UINT8, None)], initializer=inits)
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"], name="add/quantize")],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.UINT8, None)],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["out"], name="if", then_branch=then, else_branch=other)],
        "g",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape)),
            helper.make_tensor_value_info("b", TensorProto.UINT8, list(b.shape)),
        ],
        [helper.make_tensor_value_info("out", TensorProto.UINT8, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    expanded = expand_model(model)
    then_nodes = next(a.g.node for a in expanded.graph.node[0].attribute if a.name == "then_branch")
    assert [n.op_type for n in then_nodes] == ["DequantizeLinear", "DequantizeLinear", "Add", "QuantizeLinear"]
    assert [n.name for n in then_nodes] == ["add/dequantize_a", "add/dequantize_b", "add", "add/quantize_1"]
    feeds = {"c": np.array(True), "x": x, "b": b}
    np.testing.assert_array_equal(run_ovpool(expanded, feeds)[0], run_ovpool(model, feeds)[0])
    assert np.abs(run_ort(expanded, feeds)[0].astype(int) - run_ort(model, feeds)[0].astype(int)).max() <= 1


REFUSALS = [
    ("QLinearAveragePool", 17, "dilations", UnsupportedError, {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ("QLinearSoftmax", 11, "has no Softmax in ai.onnx opset 11", UnsupportedError, {"opset": 13, "axis": 1}),
    ("QLinearSoftmax", 17, "attribute 'opset' is required", ModelError, {}),
    ("QLinearAdd", 9, "needs DequantizeLinear, from opset 10", UnsupportedError, {}),
]


@pytest.mark.parametrize(("op", "opset", "match", "error", "attrs"), REFUSALS)
def test_refusals(op: str, opset: int, match: str, error: type, attrs: dict[str, Any]) -> None:
    """No exact expansion: one line naming the node."""
    inputs, constant, default = _example(op)
    model, _ = ms_model(op, inputs, constant, attrs if op == "QLinearSoftmax" else attrs or default, opset=opset, name="layer")
    with pytest.raises(error, match=match) as info:
        expand_model(model)
    assert "node 'layer'" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("op", ["QGemm", "QLinearConv"])
@pytest.mark.parametrize("opset", [10, 12, 13])
def test_per_channel_before_opset_13(op: str, opset: int) -> None:
    """Per-channel weights (and their int32 bias) in a model older than DequantizeLinear's axis:
    Cast -> Sub -> Mul with the constants shaped along the axis, the same values as
    DequantizeLinear-13 gives (onnxruntime runs both: equal outputs)."""
    inputs, constant, attrs = _example(op)
    if op == "QGemm":
        inputs[5] = np.arange(5, dtype=np.int8)  # per-column zero points, not 0
    model, feeds = ms_model(op, inputs, constant, attrs, opset=opset, name="layer")
    expanded = expand_model(model)
    kinds = {n.name: n.op_type for n in expanded.graph.node}
    weight = "b" if op == "QGemm" else "w"
    assert kinds[f"layer/dequantize_{weight}"] == ("Mul" if opset < 13 else "DequantizeLinear")
    reference, _ = ms_model(op, inputs, constant, attrs, opset=13, name="layer")
    np.testing.assert_array_equal(run_ort(expanded, feeds)[0], run_ort(expand_model(reference), feeds)[0])
    np.testing.assert_array_equal(run_ovpool(expanded, feeds)[0], run_ovpool(expand_model(reference), feeds)[0])


def test_model_of_microsoft_nodes_only() -> None:
    """A model importing com.microsoft alone: its expansion imports ai.onnx opset 21."""
    inputs, constant, attrs = _example("QLinearSigmoid")
    model, feeds = ms_model("QLinearSigmoid", inputs, constant, attrs, name="layer")
    del model.opset_import[0]
    expanded = expand_model(model)
    assert {(o.domain, o.version) for o in expanded.opset_import} == {("com.microsoft", 1), ("", 21)}
    np.testing.assert_array_equal(run_ovpool(expanded, feeds)[0], run_ovpool(model, feeds)[0])
    assert np.abs(run_ort(expanded, feeds)[0].astype(int) - run_ort(model, feeds)[0].astype(int)).max() <= 1


def test_qgemm_bias_across_per_column_scales_is_refused() -> None:
    """A (1,) bias beside 5 per-column scales stands for 5 different reals (C * a_scale * b_scale[n]):
    no DequantizeLinear of C says that."""
    inputs, constant, attrs = _example("QGemm")
    inputs[6] = np.array([5], np.int32)
    model, _ = ms_model("QGemm", inputs, constant, attrs, name="layer")
    with pytest.raises(UnsupportedError, match="node 'layer' .QGemm.: the int32 bias of shape .1. does not run along"):
        expand_model(model)


def test_qgemm_with_one_of_the_output_quantization_inputs_is_refused() -> None:
    inputs, constant, attrs = _example("QGemm")
    model, _ = ms_model("QGemm", inputs[:8], constant - {8}, attrs, name="layer")
    with pytest.raises(ModelError, match="one of y_scale and y_zero_point"):
        expand_model(model)


def test_omitted_zero_points_take_the_input_type() -> None:
    """An int8 QLinearAdd without zero points quantizes to int8 (zero point 0): -100 * 0.1 * 2 / 0.3
    = -66.67 -> -67. (onnxruntime refuses the node itself: its type inference takes the omitted
    zero points for uint8.)"""
    a = np.array([[-100, 5, 100]], np.int8)
    model, feeds = ms_model("QLinearAdd", [a, np.float32(0.1), None, a, np.float32(0.1), None, np.float32(0.3)], {1, 4, 6})
    expanded = expand_model(model)
    assert run_ovpool(model, feeds)[0].tolist() == [[-67, 3, 67]] == run_ort(expanded, feeds)[0].tolist()


@pytest.mark.parametrize("op", ["QLinearAdd", "DequantizeLinear"])
def test_zero_scale_is_refused_by_the_model_check(tmp_path: Any, op: str) -> None:
    """``ovpool run`` on a model with a zero scale (a QOperator node's, or a DequantizeLinear's,
    read by ``ovpool.onnx.qdq.check_quantization_nodes``): exit 1, one line naming the node, nothing
    written."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if op == "QLinearAdd":
        inputs, constant, attrs = _example("QLinearAdd")
        inputs[1] = np.float32(0)
        model, _ = ms_model("QLinearAdd", inputs, constant, attrs, name="layer")
    else:
        node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="layer")
        inits = [numpy_helper.from_array(np.float32(0), "s"), numpy_helper.from_array(np.uint8(3), "z")]
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
            initializer=inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
    path = tmp_path / "zero.onnx"
    onnx.save(model, path)
    checkout = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "ovpool", "run", str(path), "--device", "numpy", "--random-inputs"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=checkout,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"node 'layer' ({op})" in lines[0] and "scale 0 must be finite and non-zero" in lines[0], (
        done.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zero.onnx"]

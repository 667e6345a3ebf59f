"""QLinearConv-10, QLinearMatMul-10/21, ConvInteger-10 and MatMulInteger-10 (ovpool/engine/ops/
quantized.py) against onnxruntime and against the schema text computed here: the integer convolution
or product by ``schema_conv`` (tests/ops/test_ops_conv.py, a gather per output position) or numpy's
int64 matmul, and the requantization ``saturate(round_half_even(total * s_in / y_scale) + y_zp)`` in
Python ``fractions`` (``requantize``).

Quantized outputs are compared in quantization steps. ovpool equals the schema text (0 steps).
onnxruntime multiplies the integer total by a float32 multiplier ``float32(x_scale * w_scale /
y_scale)`` and rounds the float32 product, so where the exact value lies within a few float32
roundings (2**-21 relative) of a half it may land on the other side: one step is allowed there
and only there (``near_tie``). The int32 results of ConvInteger and MatMulInteger are equal.

onnxruntime refuses what the schema allows and ovpool runs, checked against the schema text only:
per-row a scales of QLinearMatMul, per-row/per-column zero points of MatMulInteger and per-channel
zero points of ConvInteger.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from harness import check_node_case, examples, node_case_params, node_with_inputs, run_ort, run_ovpool
from hypothesis import given
from hypothesis import strategies as st
from test_ops_conv import conv_cases, schema_conv

from ovpool.errors import ModelError

RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
NICE_SCALES = (0.05, 0.1, 0.02, 0.5, 1 / 255, 0.25, 0.0078125)


def requantize(total: np.ndarray, in_scale: np.ndarray, y_scale: float, y_zero: int, qtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The schema's output of integer totals (``in_scale`` broadcast to them), and the exact
    quotients ``total * in_scale / y_scale`` as float64."""
    low, high = RANGES[qtype]
    out = np.empty(total.shape, dtype=np.int64)
    quotient = np.empty(total.shape)
    for index in np.ndindex(total.shape):
        value = Fraction(int(total[index])) * Fraction(float(in_scale[index])) / Fraction(float(y_scale))
        quotient[index] = float(value)
        out[index] = min(max(round(value) + y_zero, low), high)
    return out, quotient


def near_tie(quotient: np.ndarray) -> np.ndarray:
    distance = np.abs(quotient - np.floor(quotient) - 0.5)
    return distance <= 2.0**-21 * np.maximum(1.0, np.abs(quotient))


def assert_steps(actual: np.ndarray, ort: np.ndarray | None, exact: np.ndarray, quotient: np.ndarray) -> None:
    np.testing.assert_array_equal(np.asarray(actual).astype(np.int64), exact, err_msg="ovpool against the schema text")
    if ort is None:
        return
    assert actual.dtype == ort.dtype
    apart = np.abs(ort.astype(np.int64) - exact)
    assert apart.max(initial=0) <= 1, f"onnxruntime {apart.max()} steps from the schema text"
    assert near_tie(quotient)[apart == 1].all(), f"onnxruntime differs away from a tie: {quotient[apart == 1]}"


def integers(rng: np.random.Generator, shape: tuple[int, ...], qtype: str) -> np.ndarray:
    low, high = RANGES[qtype]
    return rng.integers(low, high + 1, size=shape).astype(qtype)


def scale(draw: st.DrawFn) -> np.float32:
    return np.float32(draw(st.sampled_from(NICE_SCALES) | st.floats(1e-3, 1.0)))


def node_model(op: str, opset: int, inputs: list[np.ndarray | None], constant: set[int], attrs: dict[str, Any] | None = None):
    """One ai.onnx node (``harness.node_with_inputs``)."""
    return node_with_inputs(op, inputs, constant, attrs, opset)


# ---------------------------------------------------------------------- QLinearConv

ORT_CONV_TYPES = [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")]  # (x and y, w): onnxruntime's kernels, and
# QLinearMatMul's (a and y, b)


@examples(40)
@given(data=st.data())
def test_qlinear_conv_in_steps_of_onnxruntime(data: st.DataObject) -> None:
    """Any convolution shape (1-3 spatial axes, groups, depthwise, pads, SAME, strides, dilations),
    per-tensor or per-output-channel w scales and zero points, with or without the int32 bias."""
    (fx, fw, fb), attrs, _ = data.draw(conv_cases(ort_safe=True))
    xtype, wtype = data.draw(st.sampled_from(ORT_CONV_TYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x, w = integers(rng, fx.shape, xtype), integers(rng, fw.shape, wtype)
    m = w.shape[0]
    per_channel = data.draw(st.booleans())
    xs, ws_one = scale(data.draw), scale(data.draw)
    ws = rng.choice(np.asarray([ws_one, scale(data.draw)], np.float32), size=m) if per_channel else ws_one
    xz = np.asarray(rng.integers(*RANGES[xtype]), dtype=xtype)
    wz_per_channel = per_channel and wtype == "int8" and data.draw(st.booleans())
    wz = np.asarray(
        rng.integers(-5, 6, size=m) if wz_per_channel else 0 if wtype == "int8" else rng.integers(0, 256), dtype=wtype
    )
    bias = rng.integers(-(2**14), 2**14, size=m).astype(np.int32) if fb is not None else None
    x64 = x.astype(np.int64) - int(xz)
    w64 = w.astype(np.int64) - (wz.reshape(-1, *[1] * (w.ndim - 1)) if wz.ndim else int(wz))
    total = np.rint(schema_conv(x64, w64, bias, attrs)).astype(np.int64)
    in_scale = np.asarray(xs, np.float64) * (
        np.asarray(ws, np.float64).reshape(-1, *[1] * (total.ndim - 2)) if per_channel else float(ws)
    )
    spread = float(np.percentile(np.abs(total * in_scale), 90)) if total.size else 1.0
    ys = np.float32(max(spread, 1e-3) / data.draw(st.sampled_from([20, 60, 127])))
    yz = np.asarray(rng.integers(*RANGES[xtype]) // 2, dtype=xtype)
    inputs = [x, xs, xz, w, np.asarray(ws, np.float32), wz, ys, yz, bias]
    model, feeds = node_model("QLinearConv", 10, inputs, {1, 2, 3, 4, 5, 6, 7, 8}, attrs)
    exact, quotient = requantize(total, np.broadcast_to(in_scale, total.shape), float(ys), int(yz), xtype)
    actual = run_ovpool(model, feeds)[0]
    assert_steps(actual, run_ort(model, feeds)[0], exact, quotient)


def test_qlinear_conv_pads_with_the_zero_point() -> None:
    """The padding is the real 0, i.e. the input's zero point: a 1x1 input with zero point 100 and
    pads 1 is the window [100, 100 | 103 | 100, 100], (103 - 100) * w_center only."""
    x = np.array([[[103]]], np.uint8)
    w = np.array([[[1, 2, 3]]], np.uint8)
    inputs = [x, np.float32(1), np.uint8(100), w, np.float32(1), np.uint8(0), np.float32(1), np.uint8(0)]
    model, feeds = node_model("QLinearConv", 10, inputs, {1, 2, 3, 4, 5, 6, 7}, {"pads": [1, 1]})
    assert run_ovpool(model, feeds)[0].tolist() == [[[6]]] == run_ort(model, feeds)[0].tolist()


# ---------------------------------------------------------------------- QLinearMatMul


@st.composite
def matmul_case(draw: st.DrawFn, per_row: bool, ort_types: bool = False) -> dict[str, Any]:
    """Shapes (1-D to 4-D, batch broadcasting), types (``ort_types``: onnxruntime's kernels),
    scales per tensor or per column of b (and per row of a where asked), zero points to match."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    a_rank, b_rank = draw(st.sampled_from(["matrix", "batched", "vector"])), draw(st.sampled_from(["matrix", "batched"]))
    a_shape = (k,) if a_rank == "vector" else (*batch, m, k) if a_rank == "batched" else (m, k)
    b_shape = (*batch, k, n) if b_rank == "batched" else (k, n)
    if ort_types:
        atype, btype = draw(st.sampled_from(ORT_CONV_TYPES))
        ytype = atype
    else:
        atype, btype, ytype = (draw(st.sampled_from(["uint8", "int8"])) for _ in range(3))
    a, b = integers(rng, a_shape, atype), integers(rng, b_shape, btype)
    a_scale = np.float32(scale(draw))
    a_zero = np.asarray(rng.integers(*RANGES[atype]), dtype=atype)
    if per_row and len(a_shape) >= 2:
        a_scale = rng.choice(np.asarray([scale(draw), scale(draw)], np.float32), size=(m,))
        a_zero = integers(rng, (m,), atype)
    per_column = draw(st.booleans()) and len(b_shape) == 2
    b_scale = rng.choice(np.asarray([scale(draw), scale(draw)], np.float32), size=(n,)) if per_column else np.float32(scale(draw))
    b_zero = integers(rng, (n,), btype) if per_column else np.asarray(rng.integers(*RANGES[btype]), dtype=btype)
    return {"a": a, "b": b, "a_scale": a_scale, "a_zero": a_zero, "b_scale": b_scale, "b_zero": b_zero, "ytype": ytype}


def schema_matmul(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Integer totals (int64 matmul of the centred inputs) and the per-element input scale."""
    a, b = case["a"].astype(np.int64), case["b"].astype(np.int64)
    az, bz = case["a_zero"].astype(np.int64), case["b_zero"].astype(np.int64)
    a_s, b_s = np.asarray(case["a_scale"], np.float64), np.asarray(case["b_scale"], np.float64)
    if az.ndim:
        az, a_s = az.reshape(-1, 1), a_s.reshape(-1, 1)
    total = np.matmul(a - az, b - bz)
    in_scale = np.broadcast_to(a_s * b_s, np.broadcast_shapes(a_s.shape, b_s.shape))
    if a.ndim == 1 and in_scale.ndim == 2:
        in_scale = in_scale[0]
    return total, np.broadcast_to(in_scale, total.shape)


@pytest.mark.parametrize("opset", [10, 21])
@examples(30)
@given(data=st.data())
def test_qlinear_matmul_in_steps_of_onnxruntime(opset: int, data: st.DataObject) -> None:
    case = data.draw(matmul_case(per_row=False, ort_types=True))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    total, in_scale = schema_matmul(case)
    spread = float(np.percentile(np.abs(total * in_scale), 90)) if total.size else 1.0
    ys = np.float32(max(spread, 1e-3) / data.draw(st.sampled_from([20, 60, 127])))
    yz = np.asarray(rng.integers(*RANGES[case["ytype"]]) // 2, dtype=case["ytype"])
    inputs = [case["a"], case["a_scale"], case["a_zero"], case["b"], case["b_scale"], case["b_zero"], ys, yz]
    model, feeds = node_model("QLinearMatMul", opset, inputs, {1, 2, 4, 5, 6, 7})
    exact, quotient = requantize(total, in_scale, float(ys), int(yz), case["ytype"])
    assert_steps(run_ovpool(model, feeds)[0], run_ort(model, feeds)[0], exact, quotient)


@examples(30)
@given(data=st.data())
def test_qlinear_matmul_per_row_against_the_schema(data: st.DataObject) -> None:
    """Per-row a scales and zero points ((M,) for a 2-D a): the schema allows them, onnxruntime
    refuses them."""
    case = data.draw(matmul_case(per_row=True))
    total, in_scale = schema_matmul(case)
    ys = np.float32(max(float(np.abs(total * in_scale).max(initial=0)), 1e-3) / 100)
    inputs = [
        case["a"],
        case["a_scale"],
        case["a_zero"],
        case["b"],
        case["b_scale"],
        case["b_zero"],
        ys,
        np.asarray(0, case["ytype"]),
    ]
    model, feeds = node_model("QLinearMatMul", 21, inputs, {1, 2, 4, 5, 6, 7})
    exact, quotient = requantize(total, in_scale, float(ys), 0, case["ytype"])
    assert_steps(run_ovpool(model, feeds)[0], None, exact, quotient)


def test_qlinear_matmul_float16_scales() -> None:
    """QLinearMatMul-21 takes float16 scales: a [[2, 3]] @ b [[4], [5]] = 23, * 0.5 * 0.5 / 1 = 5.75 -> 6."""
    inputs = [
        np.array([[2, 3]], np.uint8),
        np.float16(0.5),
        np.uint8(0),
        np.array([[4], [5]], np.uint8),
        np.float16(0.5),
        np.uint8(0),
    ]
    inputs += [np.float16(1), np.uint8(0)]
    model, feeds = node_model("QLinearMatMul", 21, inputs, {1, 2, 4, 5, 6, 7})
    assert run_ovpool(model, feeds)[0].tolist() == [[6]]


# ---------------------------------------------------------------------- ConvInteger, MatMulInteger


@examples(30)
@given(data=st.data())
def test_conv_integer_equals_onnxruntime(data: st.DataObject) -> None:
    (fx, fw, _), attrs, _ = data.draw(conv_cases(ort_safe=True))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    wtype = data.draw(st.sampled_from(["uint8", "int8"]))
    xtype = data.draw(st.sampled_from(["uint8", "int8"]))
    x, w = integers(rng, fx.shape, xtype), integers(rng, fw.shape, wtype)
    xz = np.asarray(rng.integers(*RANGES[xtype]), dtype=xtype) if data.draw(st.booleans()) else None
    wz = np.asarray(rng.integers(*RANGES[wtype]), dtype=wtype) if xz is not None and data.draw(st.booleans()) else None
    model, feeds = node_model("ConvInteger", 10, [x, w, xz, wz], {1, 2, 3}, attrs)
    expected = schema_conv(x.astype(np.int64) - int(xz or 0), w.astype(np.int64) - int(wz or 0), None, attrs)
    actual = run_ovpool(model, feeds)[0]
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, np.rint(expected).astype(np.int32))
    np.testing.assert_array_equal(actual, run_ort(model, feeds)[0])


def test_conv_integer_per_channel_zero_point_against_the_schema() -> None:
    """A w zero point per output channel (the schema's, onnxruntime refuses it)."""
    rng = np.random.default_rng(3)
    x, w = integers(rng, (1, 2, 5), "uint8"), integers(rng, (3, 2, 2), "int8")
    wz = np.array([1, -2, 3], np.int8)
    model, feeds = node_model("ConvInteger", 10, [x, w, np.uint8(7), wz], {1, 2, 3}, {"pads": [1, 0]})
    expected = schema_conv(
        x.astype(np.int64) - 7, w.astype(np.int64) - wz.reshape(3, 1, 1).astype(np.int64), None, {"pads": [1, 0]}
    )
    np.testing.assert_array_equal(run_ovpool(model, feeds)[0], np.rint(expected).astype(np.int32))


@examples(30)
@given(data=st.data())
def test_matmul_integer(data: st.DataObject) -> None:
    """Per-tensor zero points against onnxruntime; per-row / per-column ones against the schema."""
    case = data.draw(matmul_case(per_row=data.draw(st.booleans())))
    total, _ = schema_matmul(case)
    model, feeds = node_model("MatMulInteger", 10, [case["a"], case["b"], case["a_zero"], case["b_zero"]], {2, 3})
    actual = run_ovpool(model, feeds)[0]
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, total.astype(np.int32))
    if case["a_zero"].ndim == 0 and case["b_zero"].ndim == 0:
        np.testing.assert_array_equal(actual, run_ort(model, feeds)[0])


# ---------------------------------------------------------------------- refused

ERRORS = [
    (
        "QLinearMatMul",
        10,
        [
            np.zeros((2, 3), np.uint8),
            np.float32(0),
            np.uint8(0),
            np.zeros((3, 2), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.float32(1),
            np.uint8(0),
        ],
        "a_scale 0 must be finite",
    ),
    (
        "QLinearMatMul",
        10,
        [
            np.zeros((2, 3), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.zeros((3, 2), np.uint8),
            np.ones(3, np.float32),
            np.zeros(3, np.uint8),
            np.float32(1),
            np.uint8(0),
        ],
        "b.s zero point has shape .3.; it is a scalar or per column",
    ),
    (
        "QLinearMatMul",
        10,
        [
            np.zeros((2, 3), np.uint8),
            np.float32(1),
            np.int8(0),
            np.zeros((3, 2), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.float32(1),
            np.uint8(0),
        ],
        "zero point is int8 but the quantized tensor is uint8",
    ),
    (
        "QLinearConv",
        10,
        [
            np.zeros((1, 2, 3, 3), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.zeros((4, 2, 1, 1), np.uint8),
            np.ones(3, np.float32),
            np.uint8(0),
            np.float32(1),
            np.uint8(0),
        ],
        "w_scale has shape .3.; it is a scalar or one value per output channel .4.",
    ),
    (
        "QLinearConv",
        10,
        [
            np.zeros((1, 2, 3, 3), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.zeros((4, 2, 1, 1), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.float32(1),
            np.uint8(0),
            np.zeros(4, np.int64),
        ],
        "B is int64",
    ),
    (
        "QLinearConv",
        10,
        [
            np.zeros((1, 3, 3, 3), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.zeros((4, 2, 1, 1), np.uint8),
            np.float32(1),
            np.uint8(0),
            np.float32(1),
            np.uint8(0),
        ],
        "channels",
    ),
    ("MatMulInteger", 10, [np.zeros((2, 3), np.uint8), np.zeros((4, 2), np.uint8)], "do not multiply"),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "match"), ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_bad_inputs_are_the_nodes_error(op: str, opset: int, inputs: list[np.ndarray], match: str) -> None:
    model, feeds = node_model(op, opset, inputs, set())
    with pytest.raises(ModelError, match=match) as info:
        run_ovpool(model, feeds)
    assert "qnode" in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------------- ONNX's node test cases


@pytest.mark.parametrize("case", node_case_params(["QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"]))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case, rtol=0, atol=0)

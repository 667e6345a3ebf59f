"""QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (ovpool/engine/ops/quantized.py) against
onnxruntime at every since-version it runs (10, 13, 19, 21, 23, 24, 25) and against the schema text
computed here (``schema_quantize``): per tensor, per axis, blocked; uint8, int8, and from 21 uint16,
int16, uint4, int4.

Quantized outputs are compared in quantization steps (integer differences), never with a float
tolerance, and are equal (0 steps):

- QuantizeLinear is ``saturate(round_half_even(x / scale) + zero_point)`` with ``x / scale`` the
  float32 quotient of the float32 values (float16 and bfloat16 widened to float32 first), as ONNX's
  reference and onnxruntime divide; the rounding of that float32 value is done here in Python
  ``fractions``. float32 x = 0.175 (0.17499999701...) over scale 0.05 (0.0500000007...) is
  3.49999994... exactly but 3.5 in float32, which rounds (to even) to 4
  (``test_quantize_divides_in_float32``).
- Dequantized values are exact products rounded once to float32: onnxruntime's float32 product of
  ``float(x - zero_point)`` (exact below 2**24) and the scale is the same rounding, so they are
  equal (0 ulp). int32 inputs are drawn below 2**24 in magnitude for that reason.

onnxruntime 1.31 has no QuantizeLinear for int32 x nor bfloat16, cannot feed or return 4-bit numpy
arrays (4-bit tensors are initializers here and 4-bit outputs are read through a DequantizeLinear
with scale 1), and quantizes NaN to the type's lowest value where ovpool gives the zero point (ONNX
leaves it undefined): those are checked against the schema text only.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from harness import check_node_case, examples, model_of, node_case_params, opsets, run_ort, run_ovpool, vi
from hypothesis import assume, given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from quant_cases import ELEM, RANGES

from ovpool.errors import ModelError

Q_OPSETS = opsets("QuantizeLinear")
DQ_OPSETS = opsets("DequantizeLinear")
NICE_SCALES = (0.05, 0.1, 0.02, 0.5, 1 / 255, 1 / 256, 0.007843138, 3.0, 0.3)


def test_opsets_cover_every_version() -> None:
    assert Q_OPSETS == [10, 13, 19, 21, 23, 24, 25]
    assert DQ_OPSETS == [10, 13, 19, 21, 23, 24, 25]


def np_type(name: str) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(ELEM[name]))


def types_of(opset: int) -> list[str]:
    return list(RANGES) if opset >= 21 else ["uint8", "int8"]


# ---------------------------------------------------------------------- the schema text, directly


def schema_quantize(x: np.ndarray, scale: np.ndarray, zero: np.ndarray, qtype: str) -> np.ndarray:
    """``saturate(round_half_even(x / scale) + zero_point)`` element by element, ``x / scale`` the
    float32 quotient (``scale`` and ``zero`` already broadcast to x's shape); NaN is left to the
    caller."""
    low, high = RANGES[qtype]
    out = np.empty(x.shape, dtype=np.int64)
    for index in np.ndindex(x.shape):
        value = float(x[index])
        if math.isinf(value):
            out[index] = high if value > 0 else low
            continue
        quotient = np.float32(value) / np.float32(scale[index])
        q = round(Fraction(float(quotient))) + int(zero[index])
        out[index] = min(max(q, low), high)
    return out


def expand(values: np.ndarray, shape: tuple[int, ...], axis: int | None, block: int) -> np.ndarray:
    """A per-tensor, per-axis or blocked scale/zero point written out to ``shape`` (independent of
    ovpool: repeat along the axis, cut to length)."""
    if axis is None:
        return np.broadcast_to(values.reshape(()), shape)
    axis %= len(shape)
    if block:
        return np.repeat(values, block, axis=axis).take(np.arange(shape[axis]), axis=axis)
    dims = [1] * len(shape)
    dims[axis] = values.size
    return np.broadcast_to(values.reshape(dims), shape)


# ---------------------------------------------------------------------- drawn cases


@st.composite
def quantization(draw: st.DrawFn, opset: int, qtype: str) -> dict[str, Any]:
    """A shape, a granularity the version has (per tensor, a 1-element vector, per axis from 13,
    blocked from 21), scales (decimal ones that make ties, and arbitrary ones) and zero points."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    kinds = ["tensor", "vector1"] + (["axis"] if opset >= 13 else []) + (["blocked"] if opset >= 21 else [])
    kind = draw(st.sampled_from(kinds))
    axis = draw(st.integers(-rank, rank - 1)) if kind in ("axis", "blocked") else None
    block = 0
    scale_shape: tuple[int, ...] = ()
    if kind == "vector1":
        scale_shape = (1,)
    elif kind == "axis":
        assert axis is not None
        scale_shape = (shape[axis],)
    elif kind == "blocked":
        assert axis is not None
        block = draw(st.integers(1, 4))
        scale_shape = tuple(-(-n // block) if d == axis % rank else n for d, n in enumerate(shape))
        assume(math.prod(scale_shape) > 1)  # onnxruntime reads a 1-element scale as per tensor, and refuses block_size then
    pool = [draw(st.sampled_from(NICE_SCALES)), draw(st.floats(1e-3, 20.0)), draw(st.sampled_from(NICE_SCALES))]
    scale = rng.choice(np.asarray(pool, dtype=np.float32), size=scale_shape).astype(np.float32)
    low, high = RANGES[qtype]
    zero = rng.integers(low, high + 1, size=scale_shape)
    attrs: dict[str, Any] = {}
    if axis is not None:
        attrs["axis"] = axis
    if block:
        attrs["block_size"] = block
    return {"shape": shape, "scale": scale, "zero": zero, "attrs": attrs, "axis": axis, "block": block, "qtype": qtype}


def quantize_input(rng: np.random.Generator, case: dict[str, Any], dtype: Any) -> np.ndarray:
    """x near the quantization grid of its element: whole steps, halves (ties), random, and beyond
    the type's range (saturation)."""
    shape = case["shape"]
    scale = expand(case["scale"], shape, case["axis"], case["block"]).astype(np.float64)
    zero = expand(case["zero"], shape, case["axis"], case["block"])
    low, high = RANGES[case["qtype"]]
    steps = rng.integers(low - 20, high + 21, size=shape) - zero
    offset = rng.choice([0.0, 0.5, -0.5, 0.25, 0.4999], size=shape) + rng.uniform(-0.5, 0.5, size=shape) * rng.integers(
        0, 2, size=shape
    )
    return ((steps + offset) * scale).astype(dtype)


def q_model(opset: int, case: dict[str, Any], x: np.ndarray, zero_given: bool = True, output_dtype: str | None = None):
    """QuantizeLinear with constant scale and zero point; a 4-bit output read through a
    DequantizeLinear of scale 1 (onnxruntime returns no 4-bit arrays)."""
    qtype = case["qtype"]
    scale = case["scale"].astype(x.dtype) if opset >= 19 and x.dtype != np.float32 else case["scale"]
    inits = [numpy_helper.from_array(np.asarray(scale), "s")]
    inputs = ["x", "s"]
    if zero_given:
        inits.append(numpy_helper.from_array(np.asarray(case["zero"]).astype(np_type(qtype)), "z"))
        inputs.append("z")
    attrs = dict(case["attrs"])
    if output_dtype:
        attrs["output_dtype"] = ELEM[output_dtype]
    nodes = [helper.make_node("QuantizeLinear", inputs, ["q"], name="quantize", **attrs)]
    out = "q"
    if qtype in ("int4", "uint4"):
        inits.append(numpy_helper.from_array(np.float32(1), "one"))
        nodes.append(helper.make_node("DequantizeLinear", ["q", "one"], ["q_float"], name="read"))
        out = "q_float"
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    return model_of(nodes, [vi("x", elem, list(x.shape))], [out], opset=opset, initializers=inits)


def assert_equal(actual: np.ndarray, ort: np.ndarray, exact: np.ndarray) -> None:
    """ovpool equals the schema text, and onnxruntime equals ovpool (0 steps)."""
    actual64 = np.asarray(actual).astype(np.int64)
    np.testing.assert_array_equal(actual64, exact, err_msg="ovpool against the schema text")
    np.testing.assert_array_equal(np.asarray(ort).astype(np.int64), actual64, err_msg="onnxruntime against ovpool")


# ---------------------------------------------------------------------- QuantizeLinear


Q_CASES = [pytest.param(o, t, id=f"QuantizeLinear-{o}-{t}") for o in Q_OPSETS for t in types_of(o)]


@pytest.mark.parametrize(("opset", "qtype"), Q_CASES)
@examples(12)
@given(data=st.data())
def test_quantize_linear_in_steps_of_onnxruntime(opset: int, qtype: str, data: st.DataObject) -> None:
    case = data.draw(quantization(opset, qtype))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    half = opset >= 19 and qtype not in ("uint16", "int16")  # 16-bit ranges reach past float16's
    dtype = data.draw(st.sampled_from([np.float32, np.float16] if half else [np.float32]))
    x = quantize_input(rng, case, dtype)
    model = q_model(opset, case, x)
    ort = run_ort(model, {"x": x})[0]
    actual = run_ovpool(model, {"x": x})[0]
    assert actual.dtype == ort.dtype
    shape = x.shape
    scale = expand(
        case["scale"].astype(x.dtype).astype(np.float64) if opset >= 19 else case["scale"], shape, case["axis"], case["block"]
    )
    zero = expand(case["zero"], shape, case["axis"], case["block"])
    assert_equal(actual, ort, schema_quantize(x, scale, zero, qtype))


@pytest.mark.parametrize("opset", [21, 25])
@pytest.mark.parametrize("qtype", ["uint16", "int16", "int8"])
def test_output_dtype_without_zero_point(opset: int, qtype: str) -> None:
    """QuantizeLinear-21+: without a zero point ``output_dtype`` picks the type (zero point 0)."""
    case = {"shape": (2, 3), "scale": np.float32(0.1), "zero": np.int64(0), "attrs": {}, "axis": None, "block": 0, "qtype": qtype}
    x = np.array([[-1000.0, -0.25, 0.35], [0.15, 7.0, 1e6]], np.float32)
    model = q_model(opset, case, x, zero_given=False, output_dtype=qtype)
    ort = run_ort(model, {"x": x})[0]
    actual = run_ovpool(model, {"x": x})[0]
    assert actual.dtype == ort.dtype == np_type(qtype)
    assert_equal(actual, ort, schema_quantize(x, np.full(x.shape, 0.1, np.float32), np.zeros(x.shape, np.int64), qtype))


def test_quantize_divides_in_float32() -> None:
    """The example of the module text: 0.175 / 0.05 is 3.4999999... exactly but 3.5 in float32,
    which rounds to 4 (half to even); 0.125 / 0.05 is 2.5 in float32 (2), 0.225 / 0.05 4.5 (4). The
    exact quotients would give 3, 2, 4."""
    case = {
        "shape": (3,),
        "scale": np.float32(0.05),
        "zero": np.int64(0),
        "attrs": {},
        "axis": None,
        "block": 0,
        "qtype": "uint8",
    }
    x = np.array([0.175, 0.125, 0.225], np.float32)
    model = q_model(13, case, x)
    assert run_ovpool(model, {"x": x})[0].tolist() == [4, 2, 4] == run_ort(model, {"x": x})[0].tolist()
    exact = [round(Fraction(float(v)) / Fraction(float(np.float32(0.05)))) for v in x]
    assert exact == [3, 2, 4]


def test_nan_and_infinity() -> None:
    """inf saturates to the top, -inf to the bottom (as onnxruntime); NaN quantizes to the zero
    point (ONNX leaves it undefined; onnxruntime 1.31 gives the type's lowest value)."""
    case = {"shape": (3,), "scale": np.float32(0.5), "zero": np.int64(3), "attrs": {}, "axis": None, "block": 0, "qtype": "int8"}
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    model = q_model(13, case, x)
    assert run_ovpool(model, {"x": x})[0].tolist() == [127, -128, 3]
    assert run_ort(model, {"x": x})[0].tolist() == [127, -128, -128]


@pytest.mark.parametrize("opset", [10, 13, 19, 21])
def test_int32_and_bfloat16_x_against_the_schema(opset: int) -> None:
    """int32 x (every version; onnxruntime has no kernel) and bfloat16 x (19+), exactly."""
    x = np.array([[7, -7, 1_000_001], [5, 15, -3]], np.int32)
    scale = np.float32(2.0) if opset < 19 else np.float32(2.0)
    model = model_of(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")],
        [vi("x", TensorProto.INT32, [2, 3])],
        ["y"],
        opset=opset,
        initializers=[numpy_helper.from_array(scale, "s"), numpy_helper.from_array(np.int8(1), "z")],
    )
    # 7 / 2 = 3.5 -> 4 (even), -7 / 2 -> -4, 5 / 2 = 2.5 -> 2, 15 / 2 = 7.5 -> 8; + 1, saturated
    assert run_ovpool(model, {"x": x})[0].tolist() == [[5, -3, 127], [3, 9, -1]]
    if opset >= 19:
        bf16 = helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
        xb = np.array([0.75, -2.25, 3.0], np.float32).astype(bf16)
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")
        inits = [numpy_helper.from_array(np.array(0.5, np.float32).astype(bf16), "s"), numpy_helper.from_array(np.uint8(10), "z")]
        model = model_of([node], [vi("x", TensorProto.BFLOAT16, [3])], ["y"], opset=opset, initializers=inits)
        assert run_ovpool(model, {"x": xb})[0].tolist() == [12, 6, 16]  # 1.5 -> 2, -4.5 -> -4, 6


# ---------------------------------------------------------------------- DequantizeLinear


DQ_CASES = [pytest.param(o, t, id=f"DequantizeLinear-{o}-{t}") for o in DQ_OPSETS for t in types_of(o)]


def dq_model(opset: int, case: dict[str, Any], q: np.ndarray, scale_type: Any, output_dtype: int = 0, constant: bool = False):
    inits = [numpy_helper.from_array(np.asarray(case["scale"]).astype(scale_type), "s")]
    inits.append(numpy_helper.from_array(np.asarray(case["zero"]).astype(q.dtype), "z"))
    inputs = [] if constant else [vi("x", helper.np_dtype_to_tensor_dtype(q.dtype), list(q.shape))]
    if constant:
        inits.append(numpy_helper.from_array(q, "x"))
    attrs = dict(case["attrs"])
    if output_dtype:
        attrs["output_dtype"] = output_dtype
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dequantize", **attrs)
    return model_of([node], inputs, ["y"], opset=opset, initializers=inits)


@pytest.mark.parametrize(("opset", "qtype"), DQ_CASES)
@examples(12)
@given(data=st.data())
def test_dequantize_linear_equals_onnxruntime(opset: int, qtype: str, data: st.DataObject) -> None:
    """float32 outputs are equal (0 ulp); float16 ones (scale float16, 19+) within one float16
    rounding: onnxruntime rounds the float32 product to float16 (two roundings), ovpool the exact
    product once."""
    case = data.draw(quantization(opset, qtype))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    low, high = RANGES[qtype]
    q = rng.integers(low, high + 1, size=case["shape"]).astype(np_type(qtype))
    scale_type = data.draw(st.sampled_from([np.float32, np.float16] if opset >= 19 else [np.float32]))
    four_bit = qtype in ("int4", "uint4")  # onnxruntime takes no 4-bit numpy input: a constant
    model = dq_model(opset, case, q, scale_type, constant=four_bit)
    feeds = {} if four_bit else {"x": q}
    ort = run_ort(model, feeds)[0]
    actual = run_ovpool(model, feeds)[0]
    assert actual.dtype == ort.dtype == np.dtype(scale_type)
    scale = expand(case["scale"].astype(scale_type).astype(np.float64), q.shape, case["axis"], case["block"])
    zero = expand(case["zero"], q.shape, case["axis"], case["block"])
    exact = np.asarray(
        [
            float(Fraction(int(v) - int(z)) * Fraction(float(s)))
            for v, z, s in zip(q.astype(np.int64).ravel(), zero.ravel(), scale.ravel())
        ]
    )
    with np.errstate(over="ignore"):  # int16 at a float16 scale reaches past float16: inf
        rounded = exact.reshape(q.shape).astype(scale_type)
    np.testing.assert_array_equal(actual, rounded, err_msg="ovpool against the schema text")
    if scale_type == np.float32:
        np.testing.assert_array_equal(actual, ort)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), ort.astype(np.float64), rtol=2**-10, atol=0)


@pytest.mark.parametrize("opset", [10, 13, 21])
def test_dequantize_int32(opset: int) -> None:
    """int32 (the bias type): (x - zero point) * scale, exact below 2**24 like onnxruntime."""
    q = np.array([[1, -2, 2**24 - 1], [-(2**23), 77, 0]], np.int32)
    for zero in (None, np.int32(5)):
        case = {"scale": np.float32(0.3), "zero": np.int32(0) if zero is None else zero, "attrs": {}}
        model = dq_model(opset, case, q, np.float32)
        np.testing.assert_array_equal(run_ovpool(model, {"x": q})[0], run_ort(model, {"x": q})[0])


def test_dequantize_output_dtype() -> None:
    """DequantizeLinear-23+: ``output_dtype`` float with a float16 scale gives float32."""
    case = {"scale": np.float16(0.5), "zero": np.uint8(1), "attrs": {}}
    q = np.array([0, 1, 255], np.uint8)
    model = dq_model(23, case, q, np.float16, output_dtype=TensorProto.FLOAT)
    actual = run_ovpool(model, {"x": q})[0]
    assert actual.dtype == np.float32 and actual.tolist() == [-0.5, 0.0, 127.0]
    np.testing.assert_array_equal(actual, run_ort(model, {"x": q})[0])


# ---------------------------------------------------------------------- DynamicQuantizeLinear


@examples(40)
@given(data=st.data())
def test_dynamic_quantize_linear_in_steps_of_onnxruntime(data: st.DataObject) -> None:
    """Scale, zero point and y equal onnxruntime's (the function body's float32 steps)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    kind = data.draw(st.sampled_from(["normal", "positive", "negative", "zeros", "grid"]))
    x = rng.standard_normal(shape) * data.draw(st.sampled_from([0.01, 1.0, 100.0]))
    if kind == "positive":
        x = np.abs(x)
    elif kind == "negative":
        x = -np.abs(x)
    elif kind == "zeros":
        x = np.zeros(shape)
    elif kind == "grid":
        x = rng.integers(-40, 60, size=shape) * 0.5
    x = x.astype(np.float32)
    model = model_of(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dq")],
        [vi("x", TensorProto.FLOAT, list(shape))],
        ["y", "s", "z"],
        opset=11,
    )
    y_ort, s_ort, z_ort = run_ort(model, {"x": x})
    y, s, z = run_ovpool(model, {"x": x})
    assert s.dtype == np.float32 and z.dtype == np.uint8 and y.dtype == np.uint8
    assert s == s_ort and z == z_ort
    scale = np.full(x.shape, s, dtype=np.float32)
    assert_equal(y, y_ort, schema_quantize(x, scale, np.full(x.shape, int(z)), "uint8"))


def test_dynamic_quantize_linear_of_the_schema() -> None:
    """The schema's own numbers: [-1, 0.5, 2.5, 3]: scale 4/255, zero point round(63.75) = 64."""
    model = model_of(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        [vi("x", TensorProto.FLOAT, [4])],
        ["y", "s", "z"],
        opset=11,
    )
    y, s, z = run_ovpool(model, {"x": np.array([-1, 0.5, 2.5, 3], np.float32)})
    assert s == np.float32(np.float32(4) / np.float32(255)) and z == 64 and y.tolist() == [0, 96, 223, 255]


# ---------------------------------------------------------------------- com.microsoft


MS_CASES = [
    ({}, np.float32(0.1), np.int8(3)),
    ({"axis": 1}, np.array([0.1, 0.2, 0.3], np.float32), np.array([1, 2, 3], np.int8)),
    ({"axis": -1}, np.array([0.05, 0.3], np.float32), np.array([7, 9], np.uint16)),
    ({}, np.float32(0.02), None),
]


@pytest.mark.parametrize(("attrs", "scale", "zero"), MS_CASES)
def test_microsoft_quantize_and_dequantize(attrs: dict[str, Any], scale: np.ndarray, zero: np.ndarray | None) -> None:
    """com.microsoft QuantizeLinear / DequantizeLinear (what the quantizer writes for 16-bit types
    before opset 21): QuantizeLinear-21's and DequantizeLinear-21's meaning without block_size."""
    x = (np.arange(12, dtype=np.float32).reshape(2, 3, 2) * 0.37 - 2).astype(np.float32)
    names = ["x", "s"] + (["z"] if zero is not None else [])
    inits = [numpy_helper.from_array(np.asarray(scale), "s")] + (
        [numpy_helper.from_array(np.asarray(zero), "z")] if zero is not None else []
    )
    nodes = [
        helper.make_node("QuantizeLinear", names, ["q"], name="q", domain="com.microsoft", **attrs),
        helper.make_node("DequantizeLinear", ["q", *names[1:]], ["y"], name="dq", domain="com.microsoft", **attrs),
    ]
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = model_of(nodes, [vi("x", TensorProto.FLOAT, [2, 3, 2])], ["q", "y"], initializers=inits, imports=imports)
    model.ir_version = 8
    q, y = run_ovpool(model, {"x": x})
    q_ort, y_ort = run_ort(model, {"x": x})
    full = expand(np.asarray(scale), x.shape, attrs.get("axis"), 0).astype(np.float64)
    zeros = expand(np.asarray(0 if zero is None else zero), x.shape, attrs.get("axis") if zero is not None else None, 0)
    assert_equal(q, q_ort, schema_quantize(x, full, zeros, "uint8" if zero is None else np.dtype(zero.dtype).name))
    np.testing.assert_array_equal(y, y_ort)


# ---------------------------------------------------------------------- refused


def _q(opset: int, x: np.ndarray, scale: Any, zero: Any = None, attrs: dict[str, Any] | None = None, op: str = "QuantizeLinear"):
    inits = [numpy_helper.from_array(np.asarray(scale), "s")]
    names = ["x", "s"]
    if zero is not None:
        inits.append(numpy_helper.from_array(np.asarray(zero), "z"))
        names.append("z")
    node = helper.make_node(op, names, ["y"], name="qnode", **(attrs or {}))
    model = model_of(
        [node], [vi("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))], ["y"], opset=opset, initializers=inits
    )
    return model


ERRORS = [
    (13, "QuantizeLinear", np.zeros((2, 3), np.float32), np.float32(0), np.uint8(0), {}, "scale 0 must be finite and non-zero"),
    (13, "DequantizeLinear", np.zeros((2, 3), np.uint8), np.float32(np.inf), np.uint8(0), {}, "scale inf must be finite"),
    (
        13,
        "QuantizeLinear",
        np.zeros((2, 3), np.float32),
        np.ones(2, np.float32),
        np.zeros(2, np.uint8),
        {},
        "2 per-axis scales for axis 1 of length 3",
    ),
    (
        13,
        "QuantizeLinear",
        np.zeros((2, 3), np.float32),
        np.ones(3, np.float32),
        np.zeros(2, np.uint8),
        {},
        "3 scale.s. but 2 zero point",
    ),
    (13, "DequantizeLinear", np.zeros((2, 3), np.uint8), np.ones(3, np.float32), np.uint8(0), {}, "scalar zero point"),
    (13, "QuantizeLinear", np.zeros((2, 3), np.float32), np.ones(2, np.float32), np.zeros(2, np.uint8), {"axis": 2}, "outside"),
    (
        10,
        "QuantizeLinear",
        np.zeros((2, 3), np.float32),
        np.ones(3, np.float32),
        np.zeros(3, np.uint8),
        {},
        "QuantizeLinear-10 takes one",
    ),
    (13, "DequantizeLinear", np.zeros((2, 3), np.uint8), np.ones((2, 3), np.float32), None, {}, "needs block_size"),
    (
        21,
        "DequantizeLinear",
        np.zeros((2, 5), np.uint8),
        np.ones((2, 3), np.float32),
        None,
        {"block_size": 3},
        "5 values in blocks of 3 make 2",
    ),
    (
        21,
        "DequantizeLinear",
        np.zeros((2, 5), np.int8),
        np.ones((2, 2), np.float32),
        np.zeros((2, 2), np.uint8),
        {"block_size": 3},
        "the zero point is uint8 but the quantized tensor is int8",
    ),
    (13, "QuantizeLinear", np.zeros(3, np.float64), np.float32(1), None, {}, "x is float64"),
    (
        21,
        "QuantizeLinear",
        np.zeros(3, np.float32),
        np.float32(1),
        np.int8(0),
        {"output_dtype": TensorProto.UINT8},
        "output_dtype",
    ),
]


@pytest.mark.parametrize(("opset", "op", "x", "scale", "zero", "attrs", "match"), ERRORS)
def test_bad_quantization_is_the_nodes_error(
    opset: int, op: str, x: np.ndarray, scale: Any, zero: Any, attrs: dict[str, Any], match: str
) -> None:
    """One line, naming the node (the structural check of the model refuses the constants before
    the kernel sees them, or the kernel at prepare time)."""
    from ovpool.engine.graph import GraphSession

    model = _q(opset, x, scale, zero, attrs, op)
    with pytest.raises(ModelError, match=match) as info:
        GraphSession(model).run({"x": x})
    assert "qnode" in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------------- ONNX's node test cases
# (the float 8, float 4 and 2-bit ones too: test_ops_quantized_narrow tests those types)


@pytest.mark.parametrize("case", node_case_params(["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"]))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16"])
def test_random_inputs_of_quantized_types_lie_within_the_type(dtype: str) -> None:
    """``ovpool run --random-inputs`` draws integer inputs (a quantized model's uint8 image) as
    integers of the type, not floats cast to it (which would wrap)."""
    from ovpool.tensors import TensorDecl, random_inputs

    arrays = random_inputs("m.onnx", [TensorDecl("x", dtype, (4, 1000))], {}, seed=3)
    low, high = RANGES[dtype]
    assert arrays["x"].dtype == np.dtype(dtype)
    assert low <= int(arrays["x"].min()) and int(arrays["x"].max()) <= high

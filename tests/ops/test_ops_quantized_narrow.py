"""QuantizeLinear / DequantizeLinear to and from the float 8 types (19+), FLOAT4E2M1 (23+) and
INT2/UINT2 (25+) on ovpool's numpy executor, at every since-version, against onnxruntime where it
runs the case and against the schema computed here.

The float formats are written out below from their definitions (exponent and mantissa widths,
bias, which bit patterns are NaN), independently of ml_dtypes and of ovpool: ``grid`` lists a
format's non-negative values in bit-pattern order, so an even index is an even mantissa, and
``schema_float`` rounds an exact rational to nearest-even on that grid, then applies the Cast
tables (saturate: beyond the largest finite value, and infinities, give it; without: NaN, or
infinity in E5M2). QuantizeLinear's ``x / scale`` is the float32 quotient, as for the integer types
(``test_ops_quantized``). The float zero point is 0: a non-zero one is refused by name (the schema's
formula adds it; onnxruntime and ONNX's reference ignore it for float 8).

onnxruntime 1.31 runs float 8 QuantizeLinear/DequantizeLinear at 19, 21, 23, 24 and 25 (its numpy
bridge returns FLOAT8E4M3FN only: the quantized values are read back through a DequantizeLinear of
scale 1), saturating the infinities of the FNUZ types at every version as Cast-24's table does;
it has no FLOAT4E2M1 kernel, and DequantizeLinear-25 of INT2/UINT2 only. Without saturation it
makes NaN of an E5M2 quotient in [61440, 65536), which rounds past the largest value 57344 and is
infinity by the Cast table (checked as its defect in ``test_quantize_float8``). ONNX's node cases
of these types run in ``test_ops_quantized.test_onnx_node_cases``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from harness import model_of, node_with_inputs, opsets, ovpool_of, run_ort, run_ovpool, vi
from onnx import TensorProto, helper, numpy_helper

from ovpool.errors import ModelError, UnsupportedError


@dataclass(frozen=True)
class Format:
    """A small float format: ``ebits`` exponent and ``mbits`` mantissa bits, ``bias``; ``top`` the
    bit pattern (sign bit off) of the largest finite value; ``inf`` whether an overflow without
    saturation is infinity (E5M2) rather than NaN; ``since`` the first QuantizeLinear version."""

    elem: int
    ebits: int
    mbits: int
    bias: int
    top: int
    inf: bool
    since: int
    nan: bool = True  # FLOAT4E2M1 has no NaN
    fnuz: bool = False  # no negative zero (its pattern is NaN): -0 and tiny negatives give 0


FORMATS = {
    "e4m3fn": Format(TensorProto.FLOAT8E4M3FN, 4, 3, 7, 0x7E, False, 19),
    "e4m3fnuz": Format(TensorProto.FLOAT8E4M3FNUZ, 4, 3, 8, 0x7F, False, 19, fnuz=True),
    "e5m2": Format(TensorProto.FLOAT8E5M2, 5, 2, 15, 0x7B, True, 19),
    "e5m2fnuz": Format(TensorProto.FLOAT8E5M2FNUZ, 5, 2, 16, 0x7F, False, 19, fnuz=True),
    "float4e2m1": Format(TensorProto.FLOAT4E2M1, 2, 1, 1, 0x7, False, 23, nan=False),
}
FLOAT8 = [name for name in FORMATS if name != "float4e2m1"]


def value_of(fmt: Format, pattern: int) -> Fraction:
    """The value of a non-negative bit pattern (subnormal when the exponent field is 0)."""
    exponent, mantissa = pattern >> fmt.mbits, pattern & ((1 << fmt.mbits) - 1)
    if exponent == 0:
        return Fraction(mantissa, 1 << fmt.mbits) * Fraction(2) ** (1 - fmt.bias)
    return (1 + Fraction(mantissa, 1 << fmt.mbits)) * Fraction(2) ** (exponent - fmt.bias)


def grid(fmt: Format) -> list[Fraction]:
    """Non-negative values by pattern, and one step past the largest (where rounding overflows)."""
    return [value_of(fmt, p) for p in range(fmt.top + 2)]


def schema_float(q: float, fmt: Format, saturate: bool) -> float:
    """``q`` (a float32 value) in ``fmt`` by the Cast tables (Cast-24's for infinities)."""
    if math.isnan(q):
        return 6.0 if not fmt.nan else math.nan  # ONNX's float 4 document: NaN gives the largest value
    values = grid(fmt)
    largest = float(values[-2])
    if math.isinf(q):
        if saturate or not fmt.nan:
            return math.copysign(largest, q)
        return q if fmt.inf else math.nan
    exact = abs(Fraction(q))
    above = next((i for i, v in enumerate(values) if v >= exact), len(values))
    if above == len(values):  # beyond the step past the largest
        index = len(values) - 1
    elif values[above] == exact or above == 0:
        index = above
    else:
        low, high = values[above - 1], values[above]
        index = above if (high - exact, above % 2) < (exact - low, 1) else above - 1
    if index == len(values) - 1:  # rounds past the largest finite value
        if saturate or not fmt.nan:
            return math.copysign(largest, q)
        return math.copysign(math.inf, q) if fmt.inf else math.nan
    if index == 0 and fmt.fnuz:
        return 0.0
    return math.copysign(float(values[index]), q)


def np_of(fmt: Format) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(fmt.elem))


def as_float(values: np.ndarray) -> np.ndarray:
    """Float 8/4 values as float64 (ml_dtypes converts exactly)."""
    return np.asarray(values).astype(np.float64)


def same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Equal values, NaN where NaN, and the sign of zero kept."""
    a, e = as_float(actual), as_float(expected)
    np.testing.assert_array_equal(a, e, err_msg=what)
    assert np.array_equal(np.signbit(a) & ~np.isnan(a), np.signbit(e) & ~np.isnan(e)), f"{what}: signs of zero differ"


# ---------------------------------------------------------------------- granularities


GRANULARITIES = {
    # name: (x shape, scale shape, attrs, first version)
    "tensor": ((2, 3, 8), (), {}, 19),
    "axis": ((2, 3, 8), (3,), {"axis": 1}, 19),
    "blocked": ((2, 3, 8), (2, 3, 3), {"axis": -1, "block_size": 3}, 21),
}


def expand(scale: np.ndarray, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """The scale written out to the input's shape, independently of ovpool."""
    if kind == "tensor":
        return np.broadcast_to(scale, shape)
    if kind == "axis":
        return np.broadcast_to(scale.reshape(1, -1, 1), shape)
    return np.repeat(scale, 3, axis=-1)[..., : shape[-1]]


def draw_scale(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.choice(np.asarray([0.5, 0.1, 3.0, 0.0078125, 0.3, -0.25, 1.0], np.float32), size=shape).astype(np.float32)


def draw_x(rng: np.random.Generator, fmt: Format, scale: np.ndarray) -> np.ndarray:
    """Grid values and midpoints (ties) of the format times the scale, random magnitudes across the
    format's range and beyond, infinities and NaN."""
    values = np.asarray([float(v) for v in grid(fmt)])
    mids = (values[1:] + values[:-1]) / 2
    pool = np.concatenate([values, mids, rng.uniform(0, float(values[-1]) * 1.5, 20), [1e30, 1e-30]])
    picked = rng.choice(pool, size=scale.shape) * rng.choice([-1.0, 1.0], size=scale.shape)
    x = (picked * scale).astype(np.float32)
    special = [np.inf, -np.inf, -0.0] + ([np.nan] if fmt.nan else [])
    x.reshape(-1)[: len(special)] = special
    return x


def q_model(opset: int, fmt: Format, kind: str, scale: np.ndarray, saturate: int, zero: Any = 0.0, read: bool = True):
    """QuantizeLinear to ``fmt`` with a constant scale and zero point, read back through a
    DequantizeLinear of scale 1 (exact: float32 holds every float 8 value) when ``read``."""
    shape, _, attrs, _ = GRANULARITIES[kind]
    zeros = np.full(scale.shape, zero, np.float32).astype(np_of(fmt))
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zeros, "z")]
    extra = {"saturate": saturate} if fmt.nan else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qnode", **attrs, **extra)]
    out = "q"
    if read:
        inits.append(numpy_helper.from_array(np.float32(1), "one"))
        nodes.append(helper.make_node("DequantizeLinear", ["q", "one"], ["y"], name="read"))
        out = "y"
    return model_of(nodes, [vi("x", TensorProto.FLOAT, list(shape))], [out], opset=opset, initializers=inits)


def op_cases(op: str, names: list[str]) -> list[Any]:
    """(opset, type name, granularity) of ``op`` at every opset where the type and granularity exist."""
    return [
        pytest.param(opset, name, kind, id=f"{op}-{opset}-{name}-{kind}")
        for name in names
        for opset in opsets(op)
        for kind, (_, _, _, first) in GRANULARITIES.items()
        if opset >= max(first, FORMATS[name].since)
    ]


@pytest.mark.parametrize(("opset", "name", "kind"), op_cases("QuantizeLinear", FLOAT8))
@pytest.mark.parametrize("saturate", [1, 0])
def test_quantize_float8(opset: int, name: str, kind: str, saturate: int) -> None:
    """ovpool equals the schema computed here and onnxruntime (values, NaN, sign of zero)."""
    fmt = FORMATS[name]
    shape, scale_shape, _, _ = GRANULARITIES[kind]
    rng = np.random.default_rng(opset * 7 + saturate)
    scale = draw_scale(rng, scale_shape)
    full = expand(scale, kind, shape)
    x = draw_x(rng, fmt, full)
    model = q_model(opset, fmt, kind, scale, saturate)
    actual = run_ovpool(model, {"x": x})[0]
    quotients = x / full  # float32 division, correctly rounded
    expected = np.vectorize(lambda q: schema_float(float(q), fmt, bool(saturate)))(quotients)
    same(actual, expected, "ovpool against the schema")
    ort = as_float(run_ort(model, {"x": x})[0])
    if name == "e5m2" and not saturate:
        # onnxruntime's defect: a quotient in [61440, 65536) rounds past 57344 to infinity (Cast
        # table: [x] > FLT_MAX is Inf in E5M2 without saturation); onnxruntime gives NaN
        band = (np.abs(quotients) >= 61440) & (np.abs(quotients) < 65536)
        assert np.isnan(ort[band]).all()
        ort = np.where(band, as_float(actual), ort)
    same(actual, ort, "ovpool against onnxruntime")
    bare = run_ovpool(q_model(opset, fmt, kind, scale, saturate, read=False), {"x": x})[0]
    assert bare.dtype == np_of(fmt)


@pytest.mark.parametrize("opset", [o for o in opsets("QuantizeLinear") if o >= 19])
@pytest.mark.parametrize("name", ["e4m3fn", "e5m2"])
def test_quantize_float16_to_float8(opset: int, name: str) -> None:
    """float16 x and scale: the quotient of the values widened to float32, as for float32 x; equal
    to the schema computed here and to onnxruntime (which fails on mixed x/scale types)."""
    fmt = FORMATS[name]
    rng = np.random.default_rng(opset)
    x = (rng.standard_normal(500) * rng.choice([1.0, 10.0, 100.0, 1000.0], 500)).astype(np.float16)
    scale = np.float16(0.3)
    zero = np.zeros((), np_of(fmt))
    inits = [numpy_helper.from_array(np.asarray(scale), "s"), numpy_helper.from_array(zero, "z")]
    inits.append(numpy_helper.from_array(np.asarray(np.float16(1)), "one"))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qnode"),
        helper.make_node("DequantizeLinear", ["q", "one"], ["y"], name="read"),
    ]
    model = model_of(nodes, [vi("x", TensorProto.FLOAT16, [500])], ["y"], opset=opset, initializers=inits)
    actual = run_ovpool(model, {"x": x})[0]
    quotients = x.astype(np.float32) / np.float32(scale)
    same(actual, np.vectorize(lambda q: schema_float(float(q), fmt, True))(quotients).astype(np.float16), "the schema")
    same(actual, run_ort(model, {"x": x})[0], "ovpool against onnxruntime")


@pytest.mark.parametrize(("opset", "name", "kind"), op_cases("QuantizeLinear", ["float4e2m1"]))
def test_quantize_float4(opset: int, name: str, kind: str) -> None:
    """FLOAT4E2M1 (onnxruntime has no kernel): the schema computed here; beyond +-6 and the
    infinities saturate, ties go to the even mantissa (x / scale 2.5 -> 2, 5 -> 4)."""
    fmt = FORMATS[name]
    shape, scale_shape, _, _ = GRANULARITIES[kind]
    rng = np.random.default_rng(opset)
    scale = draw_scale(rng, scale_shape)
    full = expand(scale, kind, shape)
    x = draw_x(rng, fmt, full)
    actual = run_ovpool(q_model(opset, fmt, kind, scale, 1, read=False), {"x": x})[0]
    assert actual.dtype == np_of(fmt)
    expected = np.vectorize(lambda q: schema_float(float(q), fmt, True))(x / full)
    same(actual, expected, "ovpool against the schema")


@pytest.mark.parametrize(("opset", "name", "kind"), op_cases("DequantizeLinear", list(FORMATS)))
@pytest.mark.parametrize("scale_type", [np.float32, np.float16])
def test_dequantize_float(opset: int, name: str, kind: str, scale_type: type) -> None:
    """``x * scale`` (zero point 0) rounded once to the scale's type, for every bit pattern of the
    format: against the exact product rounded here, and onnxruntime for float 8."""
    fmt = FORMATS[name]
    shape, scale_shape, attrs, _ = GRANULARITIES[kind]
    rng = np.random.default_rng(opset)
    patterns = np.arange(math.prod(shape)) % (1 << (1 + fmt.ebits + fmt.mbits))
    if fmt.elem == TensorProto.FLOAT4E2M1:
        signs = np.where(patterns & 8, -1.0, 1.0)
        x = (signs * np.asarray([float(value_of(fmt, p & 7)) for p in patterns])).astype(np_of(fmt)).reshape(shape)
    else:
        x = patterns.astype(np.uint8).view(np_of(fmt)).reshape(shape)
    scale = draw_scale(rng, scale_shape).astype(scale_type)
    zero = np.zeros(scale.shape, np_of(fmt))
    inits = [numpy_helper.from_array(x, "x"), numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")]
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dqnode", **attrs)
    model = model_of([node], [], ["y"], opset=opset, initializers=inits)
    actual = run_ovpool(model, {})[0]
    assert actual.dtype == np.dtype(scale_type)
    full = expand(scale.astype(np.float64), kind, shape)
    with np.errstate(over="ignore"):
        expected = np.asarray(
            [
                float(Fraction(v) * Fraction(s)) if math.isfinite(v) and v != 0 else v * s
                for v, s in zip(as_float(x).reshape(-1), full.reshape(-1))
            ]
        ).astype(scale_type)
    same(actual, expected.reshape(shape), "ovpool against the exact product")
    if fmt.elem != TensorProto.FLOAT4E2M1:
        same(actual, run_ort(model, {})[0], "ovpool against onnxruntime")


# ---------------------------------------------------------------------- INT2 / UINT2

TWO_BIT = {"int2": (TensorProto.INT2, -2, 1), "uint2": (TensorProto.UINT2, 0, 3)}


@pytest.mark.parametrize("name", list(TWO_BIT))
@pytest.mark.parametrize("kind", list(GRANULARITIES))
def test_two_bit_quantize_and_dequantize(name: str, kind: str) -> None:
    """QuantizeLinear-25: ``saturate(round_half_even(x / scale) + zero_point)`` in [-2, 1] / [0, 3],
    against the schema computed here; DequantizeLinear-25 against onnxruntime and the schema."""
    elem, low, high = TWO_BIT[name]
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    shape, scale_shape, attrs, _ = GRANULARITIES[kind]
    rng = np.random.default_rng(len(name))
    scale = draw_scale(rng, scale_shape)
    zero = rng.integers(low, high + 1, size=scale_shape)
    full, zfull = expand(scale, kind, shape), expand(zero, kind, shape)
    steps = rng.integers(low - 3, high + 4, size=shape) - zfull + rng.choice([0.0, 0.5, -0.5, 0.3], size=shape)
    x = (steps * full).astype(np.float32)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero.astype(dtype), "z")]
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="qnode", **attrs)
    model = model_of([node], [vi("x", TensorProto.FLOAT, list(shape))], ["q"], opset=25, initializers=inits)
    actual = run_ovpool(model, {"x": x})[0]
    assert actual.dtype == dtype
    expected = [
        min(max(round(Fraction(float(q))) + int(z), low), high) for q, z in zip((x / full).reshape(-1), zfull.reshape(-1))
    ]
    np.testing.assert_array_equal(actual.astype(np.int64).reshape(-1), expected)

    dq_inits = [numpy_helper.from_array(actual, "q"), *inits]
    dq = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dqnode", **attrs)
    dq_model = model_of([dq], [], ["y"], opset=25, initializers=dq_inits)
    y = run_ovpool(dq_model, {})[0]
    exact = (actual.astype(np.int64) - zfull) * full.astype(np.float64)
    np.testing.assert_array_equal(y, exact.astype(np.float32))
    np.testing.assert_array_equal(y, run_ort(dq_model, {})[0])


# ---------------------------------------------------------------------- refusals and errors


def _run_q(
    opset: int, zero: np.ndarray | None, scale: np.ndarray, attrs: dict[str, Any] | None = None, op: str = "QuantizeLinear"
):
    x = np.zeros(3, np.float32) if op == "QuantizeLinear" else np.zeros(3, zero.dtype if zero is not None else np.uint8)
    inits = [numpy_helper.from_array(scale, "s")] + ([numpy_helper.from_array(zero, "z")] if zero is not None else [])
    names = ["x", "s"] + (["z"] if zero is not None else [])
    node = helper.make_node(op, names, ["y"], name="qnode", **(attrs or {}))
    if op == "QuantizeLinear":
        model = model_of([node], [vi("x", TensorProto.FLOAT, [3])], ["y"], opset=opset, initializers=inits)
        return run_ovpool(model, {"x": x})
    model = model_of([node], [], ["y"], opset=opset, initializers=[numpy_helper.from_array(x, "x"), *inits])
    return run_ovpool(model, {})


def f8(value: float, name: str = "e4m3fn") -> np.ndarray:
    return np.array(value, np.float32).astype(np_of(FORMATS[name]))


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_non_zero_float_zero_point_is_refused_by_name(op: str) -> None:
    with pytest.raises(UnsupportedError, match="qnode.*zero point is 2.*zero points 0 only"):
        _run_q(21, f8(2.0), np.float32(1), op=op)
    assert _run_q(21, f8(-0.0), np.float32(1), op=op)[0].shape == (3,)


def test_float8e8m0_scale_is_refused_by_name() -> None:
    e8m0 = np.array(1.0, np.float32).astype(helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT8E8M0))
    for op in ("QuantizeLinear", "DequantizeLinear"):
        with pytest.raises(UnsupportedError, match="qnode.*float8e8m0"):
            _run_q(25, f8(0.0), e8m0, {"output_dtype": TensorProto.FLOAT} if op == "DequantizeLinear" else None, op)


@pytest.mark.parametrize(
    ("opset", "zero", "attrs", "match"),
    [
        (13, f8(0.0), None, "QuantizeLinear-13 quantizes to int8, uint8"),
        (21, f8(0.0, "float4e2m1"), None, "float4_e2m1fn"),
        (24, np.array(0, np.int8).astype(helper.tensor_dtype_to_np_dtype(TensorProto.INT2)), None, "int2"),
        (23, None, {"output_dtype": TensorProto.UINT2}, "output_dtype"),
        (21, f8(0.0), {"saturate": 2}, "saturate"),
    ],
)
def test_types_a_version_lacks_are_the_nodes_error(opset: int, zero: Any, attrs: Any, match: str) -> None:
    with pytest.raises(ModelError, match=f"qnode.*{match}|{match}.*qnode"):
        _run_q(opset, zero, np.float32(1), attrs)


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_microsoft_quantize_takes_no_float8(op: str) -> None:
    """com.microsoft QuantizeLinear/DequantizeLinear allow integer types only (onnxruntime refuses
    the model's float 8 types as invalid)."""
    x = np.zeros(3, np.float32)
    inputs = [x if op == "QuantizeLinear" else f8(x), np.float32(1), f8(0.0)]
    model, feeds = node_with_inputs(op, inputs, {1, 2} if op == "QuantizeLinear" else {0, 1, 2}, domain="com.microsoft", opset=1)
    with pytest.raises(ModelError, match="qnode.*float8_e4m3fn"):
        run_ovpool(model, feeds)


def test_integer_only_ops_still_refuse_float8_by_name() -> None:
    a = np.zeros((2, 2), np.float32).astype(np_of(FORMATS["e4m3fn"]))
    scale = np.float32(1)
    with pytest.raises(UnsupportedError, match="float8e4m3fn; ovpool runs integer quantization only in QLinearMatMul"):
        ovpool_of("QLinearMatMul", 21, [a, scale, a[0, 0], a, scale, a[0, 0], scale, a[0, 0]], constant=range(8))

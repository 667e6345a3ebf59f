"""Unary math and activations against onnxruntime at every since-version and every type the version
allows (onnxruntime skips the types it has no kernel for), special values (NaN, +-inf, +-0), the
schema where onnxruntime has no kernel (integer Erf-9, float64 Clip-6, Celu-28, float64 erf against
``math.erf``), the node's errors, and ONNX's own node test cases."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import pytest
from harness import (
    arrays,
    assert_node_error,
    check,
    check_node_case,
    expanded_case_params,
    make_model,
    node_case_params,
    node_error_params,
    opset_type_cases,
    run_ovpool,
    schema_dtypes,
    shapes,
    since_opsets,
    tolerance,
    version_type_cases,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------- unary ops against onnxruntime

NO_ATTRS: st.SearchStrategy[dict[str, Any]] = st.just({})


def _floats(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, width=32)


# op: (value range, attribute strategy)
UNARY: Mapping[str, tuple[tuple[float, float], st.SearchStrategy[dict[str, Any]]]] = {
    "Relu": ((-5, 5), NO_ATTRS),
    "LeakyRelu": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(-3, 3)})),
    "Elu": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(0.125, 3)})),
    "Selu": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(0.125, 3), "gamma": _floats(0.125, 3)})),
    "Celu": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(0.25, 3) | _floats(-3, -0.25)})),
    "Sigmoid": ((-30, 30), NO_ATTRS),
    "HardSigmoid": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(-1, 1), "beta": _floats(-1, 1)})),
    "HardSwish": ((-6, 6), NO_ATTRS),
    "Tanh": ((-10, 10), NO_ATTRS),
    "Softplus": ((-30, 30), NO_ATTRS),
    "Softsign": ((-10, 10), NO_ATTRS),
    "Mish": ((-10, 10), NO_ATTRS),
    "Gelu": ((-8, 8), st.fixed_dictionaries({}, optional={"approximate": st.sampled_from(["none", "tanh"])})),
    "Erf": ((-5, 5), NO_ATTRS),
    "Exp": ((-10, 10), NO_ATTRS),
    "Log": ((0.01, 100), NO_ATTRS),
    "Sqrt": ((0, 100), NO_ATTRS),
    "Reciprocal": ((0.05, 20), NO_ATTRS),
    "Abs": ((-100, 100), NO_ATTRS),
    "Neg": ((-100, 100), NO_ATTRS),
    "Sign": ((-3, 3), NO_ATTRS),
    "Floor": ((-5, 5), NO_ATTRS),
    "Ceil": ((-5, 5), NO_ATTRS),
    "Round": ((-5, 5), NO_ATTRS),
    "IsNaN": ((-5, 5), NO_ATTRS),
    "IsInf": (
        (-5, 5),
        st.fixed_dictionaries({}, optional={"detect_positive": st.integers(0, 1), "detect_negative": st.integers(0, 1)}),
    ),
    "Sin": ((-10, 10), NO_ATTRS),
    "Cos": ((-10, 10), NO_ATTRS),
    "Tan": ((-1.5, 1.5), NO_ATTRS),
    "Asin": ((-1, 1), NO_ATTRS),
    "Acos": ((-1, 1), NO_ATTRS),
    "Atan": ((-10, 10), NO_ATTRS),
    "Sinh": ((-5, 5), NO_ATTRS),
    "Cosh": ((-5, 5), NO_ATTRS),
    "Asinh": ((-10, 10), NO_ATTRS),
    "Acosh": ((1, 10), NO_ATTRS),
    "Atanh": ((-0.99, 0.99), NO_ATTRS),
    "ThresholdedRelu": ((-5, 5), st.fixed_dictionaries({}, optional={"alpha": _floats(-2, 2)})),
    "Shrink": ((-5, 5), st.fixed_dictionaries({}, optional={"lambd": _floats(0, 2), "bias": _floats(0, 2)})),
}


def _unary_cases() -> list[Any]:
    return [case for op in UNARY for case in version_type_cases(op, "T1" if op in ("IsNaN", "IsInf") else "T")]


def _values(draw: st.DrawFn, op: str, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    low, high = UNARY[op][0]
    if op == "Round":  # halves and near-halves: ties go to even
        return (arrays(draw, np.int32, shape, -20, 20).astype(np.float64) / 2 + draw(st.sampled_from([0, 0, 1e-3]))).astype(dtype)
    if np.dtype(dtype).kind == "u":
        low = max(low, 0)
    if np.dtype(dtype).kind in "iu" and op in ("Abs", "Neg", "Sign"):
        low, high = (-120, 120) if np.dtype(dtype).kind == "i" else (0, 250)
    x = arrays(draw, dtype, shape, low, high)
    if op == "Reciprocal":
        x = np.where(draw(st.booleans()), x, -x)
    return x


@pytest.mark.parametrize(("op", "opset", "dtype"), _unary_cases())
@settings(max_examples=8)
@given(data=st.data())
def test_unary_matches_onnxruntime(op: str, opset: int, dtype: Any, data: st.DataObject) -> None:
    """onnxruntime's float64 Shrink goes through float32 (5e-9 off): compared at float32's tolerance."""
    x = _values(data.draw, op, dtype, data.draw(shapes(max_side=5)))
    attrs = data.draw(UNARY[op][1])
    check(op, opset, [x], attrs, **tolerance(np.float32 if op == "Shrink" else dtype))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 40.0, -40.0, 100.0, -100.0])


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        (op, dtype)
        for op in sorted(UNARY)
        for dtype in (np.float32, np.float64)
        if dtype in schema_dtypes(op, since_opsets(op)[-1], "T1" if op.startswith("Is") else "T")
    ],
)
def test_special_values_match_onnxruntime(op: str, dtype: Any) -> None:
    """NaN, +-inf, +-0 and large values at the newest version, with default attributes."""
    opset = since_opsets(op)[-1]
    check(op, opset, [SPECIAL.astype(dtype)], {}, **tolerance(np.float32 if op == "Shrink" else dtype))


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("PRelu"))
@settings(max_examples=10)
@given(data=st.data())
def test_prelu_slope_broadcasts_to_x(opset: int, dtype: Any, data: st.DataObject) -> None:
    """The slope is X's shape or a suffix of it, any axis of it 1 (per-channel (C, 1, 1), scalar)."""
    shape = data.draw(shapes(1, max_side=5))
    suffix = shape[data.draw(st.integers(0, len(shape))) :]
    slope_shape = tuple(1 if data.draw(st.booleans()) else d for d in suffix)
    x = arrays(data.draw, dtype, shape, -5, 5)
    slope = arrays(data.draw, dtype, slope_shape, -3, 3)
    check("PRelu", opset, [x, slope], **tolerance(dtype))


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("Clip"))
@settings(max_examples=10)
@given(data=st.data())
def test_clip_matches_onnxruntime(opset: int, dtype: Any, data: st.DataObject) -> None:
    """Clip-6 attributes, Clip-11+ optional inputs (either, both, none; min > max included)."""
    x = arrays(data.draw, dtype, data.draw(shapes(max_side=5)), -10, 10)
    low = data.draw(st.none() | st.integers(-6, 6))
    high = data.draw(st.none() | st.integers(-6, 6))
    if np.dtype(dtype).kind == "u":
        low, high = (None if v is None else abs(v) for v in (low, high))
    if opset < 11:  # onnxruntime refuses a Clip-6 with min > max (the schema does not say)
        if low is not None and high is not None and low > high:
            low, high = high, low
        attrs = {k: float(v) for k, v in (("min", low), ("max", high)) if v is not None}
        check("Clip", opset, [x], attrs, **tolerance(dtype))
    else:
        bounds = [None if v is None else np.array(v, dtype=dtype) for v in (low, high)]
        check("Clip", opset, [x, *bounds], constant=data.draw(st.sampled_from([(), (1, 2)])), **tolerance(dtype))


def _gelu_tanh(v: float) -> float:
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))


def _f32(value: float) -> float:
    """An attribute default as ONNX stores it (float32)."""
    return float(np.float32(value))


# the schema's formulas, one float at a time, with default attributes
FORMULAS: Mapping[str, Any] = {
    "LeakyRelu": lambda v: v if v >= 0 else _f32(0.01) * v,
    "Elu": lambda v: v if v >= 0 else math.exp(v) - 1,
    "Selu": lambda v: _f32(1.0507009873554805) * (v if v > 0 else _f32(1.6732632423543772) * (math.exp(v) - 1)),
    "HardSigmoid": lambda v: max(0.0, min(1.0, _f32(0.2) * v + 0.5)),
    "HardSwish": lambda v: v * max(0.0, min(1.0, v * float(np.float32(1 / 6)) + 0.5)),
    "Softplus": lambda v: math.log1p(math.exp(v)) if v < 30 else v + math.log1p(math.exp(-v)),
    "Softsign": lambda v: v / (1 + abs(v)),
    "Mish": lambda v: v * math.tanh(math.log1p(math.exp(v)) if v < 30 else v),
    "ThresholdedRelu": lambda v: v if v > 1.0 else 0.0,
    "Tan": math.tan,
    "Asin": math.asin,
    "Acos": math.acos,
    "Atan": math.atan,
    "Sinh": math.sinh,
    "Cosh": math.cosh,
    "Asinh": math.asinh,
    "Acosh": math.acosh,
    "Atanh": math.atanh,
}


@pytest.mark.parametrize("op", sorted(FORMULAS))
def test_float64_follows_the_schema_formula(op: str) -> None:
    """onnxruntime has no float64 kernel for these: the schema's formula in Python floats, at every
    since-version (Gelu's tanh form too)."""
    low, high = UNARY[op][0]
    x = np.linspace(low, high, 401)
    for opset in since_opsets(op):
        (y,) = run_ovpool(make_model(op, opset, [x]), {"x0": x})
        assert y.dtype == np.float64
        np.testing.assert_allclose(y, [FORMULAS[op](v) for v in x.tolist()], rtol=1e-13, atol=1e-15)
    x = np.linspace(-8, 8, 401)
    (y,) = run_ovpool(make_model("Gelu", 20, [x], {"approximate": "tanh"}), {"x0": x})
    np.testing.assert_allclose(y, [_gelu_tanh(v) for v in x.tolist()], rtol=1e-13, atol=1e-15)


def test_clip_without_bounds_maps_infinities_to_type_limits() -> None:
    """An absent bound is numeric_limits of the input type (float32 -inf -> -3.4028235e38), as
    onnxruntime does for Clip-13."""
    x = np.array([-np.inf, 1.0, np.inf, np.nan], dtype=np.float32)
    (y,) = check("Clip", 13, [x, None, np.float32(2.0)])
    assert y[0] == np.finfo(np.float32).min and y[2] == 2.0


def test_clip_6_float64_follows_the_schema() -> None:
    """onnxruntime has no float64 Clip-6: min(max(x, min), max) element by element in Python; the
    absent max is float64's largest value (numeric_limits of T, the schema's text)."""
    x = np.array([-1e300, -3.0, 0.25, 7.0, 1e300, np.inf], dtype=np.float64)
    model = make_model("Clip", 7, [x], {"min": -2.0})
    (y,) = run_ovpool(model, {"x0": x})
    expected = [min(max(v, -2.0), np.finfo(np.float64).max) for v in x.tolist()]
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint16])
def test_erf_9_integers_truncate_per_the_schema(dtype: Any) -> None:
    """Erf-9 allows integer types and onnxruntime has no kernel for them: erf of the value, truncated
    to the type (math.erf in the test)."""
    info = np.iinfo(dtype)
    x = np.array([v for v in (-100, -7, -6, -5, -1, 0, 1, 2, 5, 6, 7, 100) if info.min <= v <= info.max], dtype=dtype)
    (y,) = run_ovpool(make_model("Erf", 9, [x]), {"x0": x})
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, [int(math.erf(v)) for v in x.tolist()])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_and_gelu_against_math_erf(dtype: Any) -> None:
    """Erf and exact Gelu on a dense grid against ``math.erf``/``math.erfc`` in double precision:
    within 4 units in the last place for erf; for Gelu 16 plus 2*x^2 (x^2/2 rounded once costs x^2/2
    units in the tail e^(-x^2/2): float32 Gelu rounds it, and so does the float64 oracle's x/sqrt 2)."""
    x = np.concatenate([np.linspace(-7, 7, 4001), np.geomspace(1e-30, 7, 501), -np.geomspace(1e-3, 38, 1001)]).astype(dtype)
    values = x.tolist()
    (erf,) = run_ovpool(make_model("Erf", 13, [x]), {"x0": x})
    (gelu,) = run_ovpool(make_model("Gelu", 20, [x]), {"x0": x})
    erf_ref = np.array([math.erf(v) for v in values])
    gelu_ref = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in values])

    def ulps(actual: np.ndarray, reference: np.ndarray) -> np.ndarray:
        normal = np.abs(reference) >= np.finfo(dtype).tiny
        spacing = np.spacing(np.abs(reference[normal]).astype(dtype)).astype(np.float64)
        return np.abs(actual[normal].astype(np.float64) - reference[normal]) / spacing

    assert ulps(erf, erf_ref).max() <= 4
    normal = np.abs(gelu_ref) >= np.finfo(dtype).tiny
    assert np.all(ulps(gelu, gelu_ref) <= 16 + 2 * x[normal].astype(np.float64) ** 2)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_celu_28_follows_the_schema(dtype: Any) -> None:
    """onnxruntime stops before opset 28: max(0, x) + min(0, alpha*(exp(x/alpha) - 1)) in Python."""
    x = np.array([-6.0, -1.0, -0.25, 0.0, 0.5, 3.0], dtype=dtype)
    for alpha in (1.0, 2.5, -1.5):
        (y,) = run_ovpool(make_model("Celu", 28, [x], {"alpha": alpha}), {"x0": x})
        expected = [max(0.0, v) + min(0.0, alpha * (math.exp(v / alpha) - 1)) for v in x.astype(np.float64).tolist()]
        assert y.dtype == dtype
        np.testing.assert_allclose(y.astype(np.float64), expected, **tolerance(dtype))


BFLOAT16 = onnx.helper.tensor_dtype_to_np_dtype(onnx.TensorProto.BFLOAT16)


@pytest.mark.parametrize("op", ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "Erf", "Softplus", "Exp", "Abs", "Neg", "Clip"])
def test_bfloat16_keeps_its_type(op: str) -> None:
    """onnxruntime has no bfloat16 kernels: its float32 result on the same (exactly widened) values,
    within one bfloat16 rounding."""
    x = np.random.default_rng(5).uniform(-4, 4, (3, 7)).astype(BFLOAT16)
    opset = since_opsets(op)[-1]
    (actual,) = run_ovpool(make_model(op, opset, [x]), {"x0": x})
    (expected,) = check(op, opset, [x.astype(np.float32)])
    assert actual.dtype == BFLOAT16
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=8e-3, atol=1e-3)


def test_sigmoid_keeps_tiny_values() -> None:
    """1/(1 + e^20) = 2.06e-9 is kept, not rounded to 0 by 1 - 1/(1 + e^-x)."""
    (y,) = run_ovpool(make_model("Sigmoid", 13, [np.float32([-20.0])]), {"x0": np.float32([-20.0])})
    np.testing.assert_allclose(y, [1 / (1 + math.exp(20))], rtol=1e-6)


def test_large_input_matches_small_runs() -> None:
    """Erf and Gelu work through runs of 65536 elements; a longer, non-contiguous input gives the same
    values element by element as the values one at a time."""
    x = np.random.default_rng(1).standard_normal((300, 700)).astype(np.float32).T
    for op in ("Erf", "Gelu"):
        model = make_model(op, 20, [x])
        (whole,) = run_ovpool(model, {"x0": x})
        parts = [run_ovpool(model, {"x0": row})[0] for row in x[:5]]
        np.testing.assert_array_equal(whole[:5], parts)


# ---------------------------------------------------------------- the node's errors


ErrorCase = tuple[str, int, list[Any], dict[str, Any]]

ERRORS: list[ErrorCase] = [
    ("Relu", 13, [np.int32([1, -1])], {}),  # Relu-13 has no int32 (Relu-14 has)
    ("Erf", 13, [np.int32([1])], {}),  # Erf-13 dropped the integer types of Erf-9
    ("PRelu", 16, [np.float32([-1, -2]), np.float32([[1], [2]])], {}),  # slope must broadcast to X one way
    ("PRelu", 16, [np.float32([-1, -2]), np.float64([1, 2])], {}),  # X and slope share T
    ("Clip", 13, [np.float32([1, 5]), np.float32([2, 3])], {}),  # min holds one value
    ("Clip", 13, [np.float32([1, 5]), np.float64(2)], {}),  # min has X's type
    ("Celu", 12, [np.float32([1])], {"alpha": 0.0}),
    ("Gelu", 20, [np.float32([1])], {"approximate": "erf"}),
    ("LeakyRelu", 16, [np.float32([1])], {"alpha": "0.1"}),
    ("IsInf", 10, [np.float32([1])], {"detect_positive": 1.5}),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), node_error_params(ERRORS))
def test_bad_nodes_are_model_errors(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any]) -> None:
    assert_node_error(op, opset, inputs, attrs)


# ---------------------------------------------------------------- ONNX's node test cases

MY_OPS = frozenset(UNARY) | {"PRelu", "Clip"}


@pytest.mark.parametrize("case", node_case_params(MY_OPS))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)


# ---------------------------------------------------------------- Swish and SwiGLU


@pytest.mark.parametrize("case", node_case_params(["Swish", "SwiGLU"]) + expanded_case_params(["Swish", "SwiGLU"]))
def test_swish_node_cases(case: Any) -> None:
    check_node_case(case)


def _swish_schema(a: np.ndarray, alpha: float) -> np.ndarray:
    """``a * sigmoid(alpha * a)`` in float64, alpha as the body casts it to a's type."""
    alpha_t = float(np.asarray(np.float32(alpha), dtype=a.dtype))
    ad = a.astype(np.float64)
    return ad / (1 + np.exp(-alpha_t * ad))


@settings(max_examples=30, deadline=None)
@given(
    x=st.sampled_from([np.float32, np.float64, np.float16]).flatmap(lambda t: shapes(0, 3).flatmap(lambda s: st.just((t, s)))),
    alpha=st.sampled_from([None, 0.5, 1.702, -1.0]),
    seed=st.integers(0, 2**16),
)
def test_swish_matches_onnxruntime(x: tuple[Any, tuple[int, ...]], alpha: float | None, seed: int) -> None:
    """Swish-24 (its one version) against onnxruntime and ``x * sigmoid(alpha * x)``."""
    dtype, shape = x
    values = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(dtype)
    attrs = {} if alpha is None else {"alpha": alpha}
    tol = tolerance(dtype)
    (y,) = check("Swish", 24, [values], attrs, **tol)
    np.testing.assert_allclose(y.astype(np.float64), _swish_schema(values, 1.0 if alpha is None else alpha), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("alpha", [None, 1.702])
def test_swiglu_matches_the_schema(dtype: type, alpha: float | None) -> None:
    """SwiGLU-28 (onnxruntime 1.31 has no opset 28): ``Swish_alpha(A) * B``, the Swish rounded to
    the type before the product (the body's two nodes): A = 1, B = 2 gives 2 * 0.7311 = 1.4621."""
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((2, 3, 4)).astype(dtype) * 3 for _ in range(2))
    a[0, 0, 0], b[0, 0, 0] = 1, 2
    attrs = {} if alpha is None else {"alpha": alpha}
    (y,) = run_ovpool(make_model("SwiGLU", 28, [a, b], attrs), {"x0": a, "x1": b})
    gate = _swish_schema(a, 1.0 if alpha is None else alpha)
    if dtype == np.float16:
        gate = gate.astype(np.float16).astype(np.float64)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), gate * b.astype(np.float64), **tolerance(dtype))
    if alpha is None:
        assert float(y[0, 0, 0]) == pytest.approx(2 / (1 + math.exp(-1)), rel=1e-3)


@pytest.mark.parametrize(
    ("op", "opset", "inputs", "match"),
    [
        ("Swish", 24, [np.ones(3, np.int32)], "type int32"),
        ("SwiGLU", 28, [np.ones(3, np.float32), np.ones((2, 3), np.float32)], "does not broadcast"),
        ("SwiGLU", 28, [np.ones(3, np.float32), np.ones(3, np.float16)], "type float16"),
    ],
)
def test_swish_refusals(op: str, opset: int, inputs: list[np.ndarray], match: str) -> None:
    assert_node_error(op, opset, inputs, match=f"{op.lower()}_node.*{match}")

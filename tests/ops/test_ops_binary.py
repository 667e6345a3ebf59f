"""Arithmetic, comparison, logic and variadic operators against onnxruntime at every since-version
and type, with numpy broadcasting (and Sum/Mean/Max/Min-6 without it); the schema where
onnxruntime stops (Mod-28, BitShift-28, integer division by zero), the node's errors, and ONNX's own
node test cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from harness import (
    arrays,
    assert_node_error,
    check,
    check_node_case,
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


@st.composite
def broadcast_shapes(draw: st.DrawFn, count: int, same: bool = False) -> list[tuple[int, ...]]:
    """``count`` shapes that broadcast together: suffixes of one shape with some axes set to 1."""
    full = draw(shapes(max_side=5))
    if same:
        return [full] * count
    result = []
    for _ in range(count):
        suffix = full[draw(st.integers(0, len(full))) :]
        result.append(tuple(1 if draw(st.booleans()) else d for d in suffix))
    return result


FLOATS = (np.float16, np.float32, np.float64)
ARITHMETIC = ("Add", "Sub", "Mul", "Div")
COMPARISONS = ("Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual")


def _range(dtype: Any) -> tuple[float, float]:
    kind = np.dtype(dtype).kind
    return (0, 200) if kind == "u" else (-100, 100) if kind == "i" else (-10, 10)


@pytest.mark.parametrize(("op", "opset", "dtype"), [case for op in ARITHMETIC for case in version_type_cases(op)])
@settings(max_examples=8)
@given(data=st.data())
def test_arithmetic_matches_onnxruntime(op: str, opset: int, dtype: Any, data: st.DataObject) -> None:
    """Integers wrap; Div of integers truncates toward zero (divisors of 0 are replaced by 1 here)."""
    shape_a, shape_b = data.draw(broadcast_shapes(2))
    a = arrays(data.draw, dtype, shape_a, *_range(dtype))
    b = arrays(data.draw, dtype, shape_b, *_range(dtype))
    if op == "Div" and np.dtype(dtype).kind in "iu":
        b = np.where(b == 0, np.ones_like(b), b)
    check(op, opset, [a, b], **tolerance(dtype))


@pytest.mark.parametrize(("op", "opset", "dtype"), [case for op in COMPARISONS for case in version_type_cases(op)])
@settings(max_examples=8)
@given(data=st.data())
def test_comparisons_match_onnxruntime(op: str, opset: int, dtype: Any, data: st.DataObject) -> None:
    """Few distinct values, so that equal pairs occur; NaN among floats compares false."""
    shape_a, shape_b = data.draw(broadcast_shapes(2))
    a, b = (np.round(arrays(data.draw, np.float64, s, -3, 3)) for s in (shape_a, shape_b))
    if np.dtype(dtype).kind == "f" and a.size > 1:
        a.flat[0] = np.nan
    if np.dtype(dtype).kind == "u":
        a, b = np.abs(a), np.abs(b)
    check(op, opset, [a.astype(dtype), b.astype(dtype)])


def test_equal_19_compares_strings() -> None:
    a = np.array([["a", "bc"], ["", "d"]], dtype=object)
    b = np.array(["a", "b"], dtype=object)
    (y,) = check("Equal", 19, [a, b])
    np.testing.assert_array_equal(y, [[True, False], [False, False]])


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
@settings(max_examples=8)
@given(data=st.data())
def test_logic_matches_onnxruntime(op: str, data: st.DataObject) -> None:
    count = 1 if op == "Not" else 2
    inputs = [arrays(data.draw, np.float64, s, 0, 1) > 0.5 for s in data.draw(broadcast_shapes(count))]
    check(op, since_opsets(op)[-1], inputs)


@pytest.mark.parametrize(
    ("opset", "dtype", "fmod"),
    [
        pytest.param(*p.values, fmod, id=f"{p.id}-fmod{fmod}")
        for p in opset_type_cases("Mod")
        for fmod in (0, 1)
        if fmod or p.values[1] not in FLOATS
    ],
)
@settings(max_examples=8)
@given(data=st.data())
def test_mod_matches_onnxruntime(opset: int, dtype: Any, fmod: int, data: st.DataObject) -> None:
    """fmod=0 is Python's % (integers only before Mod-28: floats are the node's error, see ERRORS),
    fmod=1 C's fmod; no zero divisors."""
    shape_a, shape_b = data.draw(broadcast_shapes(2))
    a = arrays(data.draw, dtype, shape_a, *_range(dtype))
    b = arrays(data.draw, dtype, shape_b, *_range(dtype))
    b = np.where(b == 0, np.ones_like(b), b)
    check("Mod", opset, [a, b], {"fmod": fmod}, **tolerance(dtype))


POW_TYPES = [
    (np.float32, np.float32),
    (np.float64, np.float64),
    (np.float16, np.float16),
    (np.float32, np.int64),
    (np.float32, np.int32),
    (np.float16, np.float32),
    (np.int32, np.int32),
    (np.int64, np.int64),
    (np.int32, np.float32),
    (np.int64, np.float64),
]


@pytest.mark.parametrize(
    ("opset", "base", "exponent"),
    [
        pytest.param(opset, b, e, id=f"{opset}-{np.dtype(b).name}-{np.dtype(e).name}")
        for opset in since_opsets("Pow")
        for b, e in POW_TYPES
        if b in schema_dtypes("Pow", opset, "T") and (e in schema_dtypes("Pow", opset, "T1") if opset >= 12 else e is b)
    ],
)
@settings(max_examples=8)
@given(data=st.data())
def test_pow_matches_onnxruntime(opset: int, base: Any, exponent: Any, data: st.DataObject) -> None:
    """The result has the base's type. An integer 0 to a negative power (1/0 as an integer) is
    undefined in C and left out."""
    shape_x, shape_y = data.draw(broadcast_shapes(2))
    x = arrays(data.draw, base, shape_x, -4, 4)
    y = arrays(data.draw, exponent, shape_y, -3, 3)
    if np.dtype(base).kind == "i":
        x = np.where(x == 0, np.ones_like(x), x)
    if np.dtype(base).kind == "f" and np.dtype(exponent).kind == "f" and data.draw(st.booleans()):
        y = np.round(y)  # negative bases to whole powers are real
    check("Pow", opset, [x, y], **tolerance(base))


@pytest.mark.parametrize("opset", since_opsets("Pow"))
def test_pow_by_constant_two_is_the_square(opset: int) -> None:
    x = np.array([-3.5, -0.0, 2.0, np.inf, np.nan], dtype=np.float32)
    check("Pow", opset, [x, np.float32(2.0)], constant=(1,))


@pytest.mark.parametrize(("opset", "exponent"), [(7, np.float32(2)), (12, np.int32(2)), (13, np.float64(2)), (15, np.int64(2))])
def test_pow_by_constant_two_in_place_and_chained(opset: int, exponent: Any) -> None:
    """A Pow by a constant 2 written over its dying base (``x * x`` then ``** 2``), and as the head
    of a chain (``** 2 + x`` then Sqrt): the bits of x * x computed here in float64 and rounded
    (exact, then rounded once: IEEE's float32 product), signed zeros, infinities and NaN included,
    whatever the exponent's type."""
    from onnx import helper, numpy_helper

    from ovpool.engine.graph import GraphSession

    x = np.array([-3.5, -0.0, 0.0, 2.0, 1e20, 1e-30, np.inf, -np.inf, np.nan, 7.25], dtype=np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["m"]),
        helper.make_node("Pow", ["m", "e"], ["p"]),
        helper.make_node("Pow", ["x", "e"], ["q"]),
        helper.make_node("Add", ["q", "x"], ["a"]),
        helper.make_node("Sqrt", ["a"], ["s"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", 1, [10])],
        [helper.make_empty_tensor_value_info(n) for n in ("p", "s")],
        initializer=[numpy_helper.from_array(np.array(exponent), "e")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    session = GraphSession(model)
    y = session.run({"x": x})
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        m = (wide * wide).astype(np.float32).astype(np.float64)
        p = (m * m).astype(np.float32)
        q = (wide * wide).astype(np.float32)
        s = np.sqrt((q + x).astype(np.float64)).astype(np.float32)
    for actual, expected in ((y["p"], p), (y["s"], s)):
        assert actual.dtype == np.float32
        assert actual.view(np.int32)[~np.isnan(expected)].tolist() == expected.view(np.int32)[~np.isnan(expected)].tolist()
        assert np.isnan(actual).tolist() == np.isnan(expected).tolist()


VARIADIC = ("Max", "Min", "Sum", "Mean")


@pytest.mark.parametrize(("op", "opset", "dtype"), [case for op in VARIADIC for case in version_type_cases(op)])
@settings(max_examples=8)
@given(data=st.data())
def test_variadic_matches_onnxruntime(op: str, opset: int, dtype: Any, data: st.DataObject) -> None:
    """One to four inputs; version 6 (in force in opset 7) without broadcasting; NaN wins in Max/Min."""
    count = data.draw(st.integers(1, 4))
    inputs = [arrays(data.draw, dtype, s, *_range(dtype)) for s in data.draw(broadcast_shapes(count, same=opset < 8))]
    if np.dtype(dtype).kind == "f" and inputs[-1].size and data.draw(st.booleans()):
        inputs[-1].flat[0] = np.nan
    check(op, opset, inputs, **tolerance(dtype))


@pytest.mark.parametrize(("opset", "dtype"), opset_type_cases("Where"))
@settings(max_examples=8)
@given(data=st.data())
def test_where_broadcasts_three_ways(opset: int, dtype: Any, data: st.DataObject) -> None:
    """Condition, X and Y of three broadcasting shapes, against onnxruntime."""
    shape_c, shape_x, shape_y = data.draw(broadcast_shapes(3))
    condition = arrays(data.draw, np.float64, shape_c, 0, 1) > 0.5
    x = arrays(data.draw, dtype, shape_x, *_range(dtype))
    y = arrays(data.draw, dtype, shape_y, *_range(dtype))
    check("Where", opset, [condition, x, y])


def test_where_picks_strings() -> None:
    condition = np.array([[True], [False]])
    (y,) = check("Where", 16, [condition, np.array(["a", "b"], dtype=object), np.array("z", dtype=object)])
    np.testing.assert_array_equal(y, [["a", "b"], ["z", "z"]])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@settings(max_examples=8)
@given(data=st.data())
def test_bit_shift_11_matches_onnxruntime(dtype: Any, direction: str, data: st.DataObject) -> None:
    """Shifts up to two past the bit width (which give 0)."""
    bits = np.dtype(dtype).itemsize * 8
    shape_x, shape_y = data.draw(broadcast_shapes(2))
    x = arrays(data.draw, np.float64, shape_x, 0, 2 ** min(bits, 52) - 1).astype(dtype)
    y = arrays(data.draw, dtype, shape_y, 0, bits + 2)
    check("BitShift", 11, [x, y], {"direction": direction})


# ---------------------------------------------------------------- the schema where onnxruntime stops


def test_mod_28_float_fmod_0_is_floor_mod() -> None:
    """Mod-28 (after onnxruntime's opsets): A - floor(A/B)*B with the schema's special cases, as
    Python's float % computes them (-3 % inf = inf, 0 % -2 = -0, inf % 2 = NaN, 1 % 0 = NaN)."""
    a = np.array([-7.5, 7.5, 7.5, -7.5, 0.0, -0.0, 3.0, -3.0, np.inf, 1.0, np.nan, 5.0], dtype=np.float64)
    b = np.array([2.0, -2.0, 2.0, -2.0, -2.0, 2.0, np.inf, np.inf, 2.0, 0.0, 1.0, np.nan], dtype=np.float64)
    (y,) = run_ovpool(make_model("Mod", 28, [a, b]), {"x0": a, "x1": b})

    def python_mod(x: float, d: float) -> float:
        if math.isnan(x) or math.isnan(d) or math.isinf(x) or d == 0:
            return math.nan
        return x % d

    expected = [python_mod(x, d) for x, d in zip(a.tolist(), b.tolist())]
    np.testing.assert_array_equal(y, expected)
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(y)[numbers], np.signbit(expected)[numbers])


def test_mod_28_keeps_integer_rules() -> None:
    a, b = np.int32([-7, 7, -7, 7]), np.int32([2, -2, -2, 2])
    (y0,) = run_ovpool(make_model("Mod", 28, [a, b]), {"x0": a, "x1": b})
    (y1,) = run_ovpool(make_model("Mod", 28, [a, b], {"fmod": 1}), {"x0": a, "x1": b})
    np.testing.assert_array_equal(y0, [x % d for x, d in zip(a.tolist(), b.tolist())])
    np.testing.assert_array_equal(y1, [int(math.fmod(x, d)) for x, d in zip(a.tolist(), b.tolist())])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_28_follows_the_schema(dtype: Any, direction: str) -> None:
    """BitShift-28 (after onnxruntime's opsets) on Python integers: an arithmetic right shift, a left
    shift that keeps the low bits as two's complement, and Y < 0 or Y >= width giving the sign
    fill (-1 for a negative X shifted right) or 0."""
    info = np.iinfo(dtype)
    bits = info.bits
    xs = [v for v in (info.min, -5, -1, 0, 1, 3, 64, info.max) if info.min <= v <= info.max]
    ys = [v for v in (-1, 0, 1, 3, bits - 1, bits, bits + 5) if info.min <= v <= info.max]
    x = np.array([a for a in xs for _ in ys], dtype=dtype)
    y = np.array([s for _ in xs for s in ys], dtype=dtype)
    (z,) = run_ovpool(make_model("BitShift", 28, [x, y], {"direction": direction}), {"x0": x, "x1": y})

    def shift(a: int, s: int) -> int:
        if s < 0 or s >= bits:
            return -1 if direction == "RIGHT" and a < 0 else 0
        if direction == "RIGHT":
            return a >> s
        low = (a << s) & ((1 << bits) - 1)
        return low - (1 << bits) if info.min < 0 and low >= 1 << (bits - 1) else low

    np.testing.assert_array_equal(z, [shift(a, s) for a, s in zip(x.tolist(), y.tolist())])


# ---------------------------------------------------------------- BitwiseAnd/Or/Xor/Not-18

BITWISE_TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


@pytest.mark.parametrize("dtype", BITWISE_TYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"])
@settings(max_examples=4)
@given(data=st.data())
def test_bitwise_match_onnxruntime(op: str, dtype: Any, data: st.DataObject) -> None:
    """Bitwise-18 (their only version) at each of the 8 integer types, over the type's whole range
    (negative values' two's complement bits), broadcast shapes."""
    info = np.iinfo(dtype)
    count = 1 if op == "BitwiseNot" else 2
    drawn = data.draw(broadcast_shapes(count))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    inputs = [rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True) for shape in drawn]
    (y,) = check(op, 18, inputs)
    if op == "BitwiseNot":  # the schema: every bit flipped, -x - 1 in two's complement
        flipped = [(~int(v)) & ((1 << info.bits) - 1) for v in inputs[0].reshape(-1).tolist()]
        signed = [v - (1 << info.bits) if info.min < 0 and v >= 1 << (info.bits - 1) else v for v in flipped]
        np.testing.assert_array_equal(y.reshape(-1), np.array(signed, dtype=dtype))


# ---------------------------------------------------------------- the node's errors

ERRORS = [
    ("Div", 14, [np.int32([1, 2]), np.int32([1, 0])], {}),  # integer division by zero
    ("Mod", 13, [np.int64([1, 2]), np.int64([0, 1])], {}),  # integer modulo by zero
    ("Mod", 13, [np.float32([1.5]), np.float32([1.0])], {}),  # fmod=0 on floats before Mod-28
    ("Mod", 13, [np.int32([1]), np.int32([1])], {"fmod": 2}),
    ("Add", 14, [np.float32([1]), np.float64([1])], {}),  # A and B share T
    ("Add", 14, [np.float32([1, 2]), np.float32([1, 2, 3])], {}),  # shapes do not broadcast
    ("Greater", 7, [np.int32([1]), np.int32([1])], {}),  # Greater-7 compares floats only
    ("Sum", 7, [np.float32([1, 2]), np.float32([[1, 2]])], {}),  # Sum-6 does not broadcast
    ("Max", 13, [np.float32([1]), np.float32([1, 2, 3]), np.float32([1, 2])], {}),
    ("Where", 16, [np.int32([1]), np.float32([1]), np.float32([2])], {}),  # the condition is bool
    ("BitShift", 11, [np.uint8([1]), np.uint8([1])], {}),  # direction is required
    ("BitShift", 11, [np.int8([1]), np.int8([1])], {"direction": "LEFT"}),  # signed from BitShift-28
    ("And", 7, [np.int32([1]), np.int32([1])], {}),
    ("BitwiseAnd", 18, [np.float32([1]), np.float32([1])], {}),  # integers only
    ("BitwiseOr", 18, [np.int32([1]), np.int64([1])], {}),  # A and B share T
    ("BitwiseXor", 18, [np.int8([1, 2]), np.int8([1, 2, 3])], {}),
    ("BitwiseNot", 18, [np.bool_([True])], {}),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), node_error_params(ERRORS))
def test_bad_nodes_are_model_errors(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any]) -> None:
    assert_node_error(op, opset, inputs, attrs)


# ---------------------------------------------------------------- ONNX's node test cases

MY_OPS = frozenset(ARITHMETIC + COMPARISONS + VARIADIC + ("Pow", "Mod", "Not", "And", "Or", "Xor", "Where", "BitShift"))
MY_OPS |= {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"}


@pytest.mark.parametrize("case", node_case_params(MY_OPS))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)

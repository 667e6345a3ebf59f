"""Elementwise IR layers: arithmetic, comparisons, logic, activations, Convert.

- Elementwise layers broadcast by ``auto_broadcast``: ``numpy`` (the default: (2, 3, 4) with (3, 1)
  gives (2, 3, 4)), ``none`` (equal shapes) or ``pdpd`` (B's dims, trailing ones dropped, line up
  with A's leading ones: (2, 3, 4, 5) with (2, 3, 1) gives (2, 3, 4, 5); an IR has no pdpd axis,
  OpenVINO reads it as 0).
- Divide of integers floors (``m_pythondiv``, the default): -7 / 2 = -4; with
  ``m_pythondiv="false"`` it truncates, -3. FloorMod has the divisor's sign (-7 mod 2 = 1), Mod
  the dividend's (-7 mod 2 = -1).
- Convert from a float to an integer type truncates toward zero and wraps: -2.5 -> -2, and 300 ->
  44 in u8, -9.2 -> 7 in u4 and i4; to the 8-bit floats it rounds to nearest even; to boolean, any
  non-zero is true. f16 weights followed by Convert to f32 (what ``ovc`` writes) are decompressed
  once, when the graph is prepared; u4/i4 weights are read two to a byte, the low nibble first.
- PRelu with a 1-D slope as long as the channel axis (axis 1) applies it per channel.
- BitwiseAnd/Or/Xor/Not-13 act on the bits of integers (5 & 3 = 1, ~5 = -6 in i32) and as logic
  on booleans. BitwiseLeftShift/RightShift-15 shift the bits (u8 5 << 5 = 160; i32 -8 >> 1 = -4,
  arithmetic for signed types, logical for unsigned ones); a shift by the width or more, which the
  specification leaves undefined, gives numpy's 0 (-1 for a negative value shifted right).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ovpool.engine.ir_layers.base import Builder, LayerNode, aligner, layer, same_type
from ovpool.engine.ops.base import Kernel
from ovpool.engine.ops.binary import ufunc_kernel
from ovpool.engine.ops.donated import InPlace, writable_float


def _binary(op_type: str, since: int, attrs: Mapping[str, Any] | None = None) -> Builder:
    """A two-input layer computed by ONNX ``op_type``-``since`` after ``auto_broadcast``."""

    def build(node: LayerNode) -> Kernel:
        kernel = node.onnx(op_type, since, attrs)
        align = aligner(node)
        if align is None:
            return kernel
        return lambda a, b: kernel(*align(a, b))

    return build


def _floats_in_place(run: Kernel, in_place: Kernel, code: tuple[Any, ...] | None = None) -> Kernel:
    """``run`` as an element-wise kernel the plan may run in place or in a chain (``InPlace``),
    by the in-place and tile forms of ``in_place``, which computes ``run``'s result on floats of
    one type by the same ufunc (the same bits); on other inputs (integers that Divide floors)
    ``run`` computes, allocating. ``run`` itself when ``in_place`` has no such forms (an
    ``auto_broadcast`` other than numpy wraps the kernel). ``code``: the compiled chain's rows
    (``InPlace.code``), when ``in_place`` has none."""
    if not isinstance(in_place, InPlace) or in_place.tile is None or in_place.quiet is None:
        return run
    donors, quiet_form = in_place.donors, in_place.quiet
    code = in_place.code or code

    def into(form: InPlace) -> Callable[..., tuple[np.ndarray, ...]]:
        def kernel(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
            if not writable_float(out) or a.dtype != b.dtype:
                return run(a, b)
            return form.donating(0 if out is a else 1)(a, b)

        return kernel

    quiet = InPlace(run, into(quiet_form), donors, in_place.tile, code=code)
    return InPlace(run, into(in_place), donors, in_place.tile, quiet, code)


def _extremum(op_type: str, ufunc: np.ufunc, bound: float) -> Builder:
    """Maximum-1/Minimum-1: ONNX ``op_type``-13 of the two inputs after ``auto_broadcast``, in
    place where the plan allows it (``ufunc`` into a dying float input: the same bits), and, with
    one input a constant of one float value, not NaN, in a compiled chain as a clip of the other
    input by that value and ``bound`` (inf for Maximum, -inf for Minimum): maximum(x, 2) is the
    clip's ``x < 2 ? 2 : x``, NaN kept, whichever input the constant is. Where the two values are
    equal (0.0 and -0.0) the clip gives the value clipped, and numpy the second input
    (``_ties_to_second``: maximum(0.0, -0.0) is -0.0 on x86): a zero constant is a clip when it is
    the first input and numpy does so, else it stays numpy's (the chain then runs numpy's ufunc
    by tiles). A NaN constant stays numpy's (two NaNs keep one payload)."""

    def build(node: LayerNode) -> Kernel:
        run = _binary(op_type, 13)(node)
        if aligner(node) is not None:
            return run
        # the compiled clip takes its bounds from the chain's arguments, never a result inside it
        code = None
        for value, other in ((1, 0), (0, 1)):
            constant = node.constant(value)
            if node.constant(other) is None and _exact_bound(constant, first=value == 0):
                code = (("clip", other, value, bound) if bound > 0 else ("clip", other, bound, value),)
        return _floats_in_place(run, ufunc_kernel(node.as_onnx(op_type, 13), ufunc), code)

    return build


def _exact_bound(constant: np.ndarray | None, first: bool) -> bool:
    """Whether a Maximum's or Minimum's constant input (the ``first`` or the second) is one float
    value the compiled clip by it computes numpy's bits for: not NaN, and not zero unless it is
    the first input and numpy returns the second on ties (2.0, -6.0: yes; NaN: no; 0.0: first
    only, on x86)."""
    if constant is None or constant.dtype.kind != "f" or constant.size != 1:
        return False
    value = float(constant.reshape(()))
    if math.isnan(value):
        return False
    return value != 0 or (first and _ties_to_second())


@functools.cache
def _ties_to_second() -> bool:
    """Whether numpy's maximum and minimum of a one-value first input and an array return the
    array's value where the two are equal: np.maximum(0.0, -0.0) is -0.0, np.minimum(-0.0, 0.0)
    is 0.0 (x86's vector max and min do), tried for float32 and float64, short and long arrays,
    new and in place."""
    for dtype in (np.float32, np.float64):
        for size in (1, 7, 64, 1000):
            for ufunc, constant, values in ((np.maximum, 0.0, -0.0), (np.minimum, -0.0, 0.0)):
                x = np.full(size, values, dtype)
                into = x.copy()
                for result in (ufunc(np.array(constant, dtype), x), ufunc(np.array(constant, dtype), into, out=into)):
                    if not np.array_equal(np.signbit(result), np.signbit(x)):
                        return False
    return True


layer("Maximum", 1)(_extremum("Max", np.maximum, math.inf))
layer("Minimum", 1)(_extremum("Min", np.minimum, -math.inf))
for _type, _onnx, _since in (
    ("Add", "Add", 14),
    ("Subtract", "Sub", 14),
    ("Multiply", "Mul", 14),
    ("Equal", "Equal", 19),
    ("Less", "Less", 13),
    ("LessEqual", "LessOrEqual", 16),
    ("Greater", "Greater", 13),
    ("GreaterEqual", "GreaterOrEqual", 16),
    ("LogicalAnd", "And", 7),
    ("LogicalOr", "Or", 7),
):
    layer(_type, 1)(_binary(_onnx, _since))
layer("LogicalXor", 2)(_binary("Xor", 7))


@layer("Power", 1)
def power(node: LayerNode) -> Kernel:
    """Power-1: a ** b (ONNX Pow-15). Unsigned integers of one type (the frontend's BitShift
    lowering writes them) as OpenVINO computes them, in double: u32 and u64 converted as the
    reference converts (2 ** 31 = 2147483648, 2 ** 32 = 0, 3 ** 21 = 1870418611: the low bits),
    u8 and u16, which the reference does not run, as the CPU plugin computes them: through int32,
    then saturated (2 ** 8 = 255; 3 ** 40, past int32, 0)."""
    pow_ = _binary("Pow", 15)(node)
    align = aligner(node)

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if a.dtype.kind != "u":
            return pow_(a, b)
        same_type(node, a, b)
        if align is not None:
            a, b = align(a, b)
        with np.errstate(all="ignore"):
            result = np.power(a.astype(np.float64), b.astype(np.float64))
        if a.dtype.itemsize >= 4:
            return (np.asarray(_float_to_integer(result, a.dtype)),)
        return (np.clip(_float_to_integer(result, np.dtype(np.int32)), 0, np.iinfo(a.dtype).max).astype(a.dtype),)

    return kernel


def _numpy_binary(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Builder:
    """A two-input layer computed by ``function`` on inputs of one element type, after ``auto_broadcast``."""

    def build(node: LayerNode) -> Kernel:
        align = aligner(node)

        def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
            same_type(node, a, b)
            if align is not None:
                a, b = align(a, b)
            if a.dtype.kind in "iu" and function in (np.mod, np.fmod, np.floor_divide) and not np.all(b):
                raise node.fail("integer division by zero (the divisor input holds 0)")
            with np.errstate(all="ignore"):
                return (np.asarray(function(a, b)),)

        return kernel

    return build


layer("FloorMod", 1)(_numpy_binary(np.mod))
for _type, _function in (("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)):
    layer(_type, 13)(_numpy_binary(_function))
layer("BitwiseLeftShift", 15)(_numpy_binary(np.left_shift))
layer("BitwiseRightShift", 15)(_numpy_binary(np.right_shift))
layer("Mod", 1)(_numpy_binary(np.fmod))
layer("NotEqual", 1)(_numpy_binary(np.not_equal))


@layer("Divide", 1)
def divide(node: LayerNode) -> Kernel:
    """Divide-1: a / b; integers floor (``m_pythondiv="true"``, the default: -7 / 2 = -4) or
    truncate (``"false"``: -3, ONNX Div)."""
    floor = node.flag("m_pythondiv", True)
    div = _binary("Div", 14)(node)
    floor_div = _numpy_binary(np.floor_divide)(node)

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        return floor_div(a, b) if floor and a.dtype.kind in "iu" else div(a, b)

    return _floats_in_place(kernel, div)


@layer("SquaredDifference", 1)
def squared_difference(node: LayerNode) -> Kernel:
    """SquaredDifference-1: (a - b)^2: 1 and 4 give 9."""
    sub = _binary("Sub", 14)(node)
    return lambda a, b: (np.square(sub(a, b)[0]),)


@layer("Select", 1)
def select(node: LayerNode) -> Kernel:
    """Select-1: ``then`` where the boolean ``cond`` holds, ``else`` elsewhere (ONNX Where), numpy
    broadcasting (``auto_broadcast="none"``: equal shapes)."""
    where = node.onnx("Where", 16)
    mode = node.choice("auto_broadcast", "numpy", ("numpy", "none"))

    def kernel(cond: np.ndarray, then: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, ...]:
        if mode == "none" and not cond.shape == then.shape == other.shape:
            raise node.fail(f"shapes {[list(a.shape) for a in (cond, then, other)]} differ (auto_broadcast none)")
        if cond.ndim == 0 and cond.dtype == np.bool_ and then.dtype == other.dtype and then.shape == other.shape:
            return ((then if cond else other).copy(),)  # one condition (a Range's bounds): 1 us, not 7
        return where(cond, then, other)

    return kernel


@layer("BitwiseNot", 13)
def bitwise_not(node: LayerNode) -> Kernel:
    """BitwiseNot-13: every bit flipped (~5 = -6 in i32), logical not on booleans."""
    return lambda x: (np.invert(x),)


@layer("LogicalNot", 1)
def logical_not(node: LayerNode) -> Kernel:
    return node.onnx("Not", 1)


def _unary(op_type: str, since: int) -> Builder:
    return lambda node: node.onnx(op_type, since)


for _type, _onnx, _since in (
    ("ReLU", "Relu", 14),
    ("Sigmoid", "Sigmoid", 13),
    ("Tanh", "Tanh", 13),
    ("Exp", "Exp", 13),
    ("Sqrt", "Sqrt", 13),
    ("Erf", "Erf", 13),
    ("Abs", "Abs", 13),
    ("Negative", "Neg", 13),
    ("Floor", "Floor", 13),
    ("Ceiling", "Ceil", 13),
    ("Sin", "Sin", 7),
    ("Cos", "Cos", 7),
    ("Sign", "Sign", 13),
    ("Tan", "Tan", 7),
    ("Asin", "Asin", 7),
    ("Acos", "Acos", 7),
    ("Atan", "Atan", 7),
    ("Sinh", "Sinh", 9),
    ("Cosh", "Cosh", 9),
):
    layer(_type, 1)(_unary(_onnx, _since))


@layer("Log", 1)
def log(node: LayerNode) -> Kernel:
    """Log-1: the natural logarithm (ONNX Log-13); on integers the specification's reference
    computes it in double and converts toward zero: log(20) = 2.996 gives 2 (OpenVINO CPU rounds,
    3: docs/semantics.md)."""
    onnx_log = node.onnx("Log", 13)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype.kind not in "iu":
            return onnx_log(x)
        with np.errstate(all="ignore"):
            return (np.trunc(np.log(x.astype(np.float64))).astype(x.dtype),)

    return kernel


layer("Mish", 4)(_unary("Mish", 18))
for _type, _onnx, _since in (("Asinh", "Asinh", 9), ("Acosh", "Acosh", 9), ("Atanh", "Atanh", 9)):
    layer(_type, 4)(_unary(_onnx, _since))
layer("IsNaN", 10)(_unary("IsNaN", 13))


@layer("IsFinite", 10)
def is_finite(node: LayerNode) -> Kernel:
    """IsFinite-10: true where x is neither infinite nor NaN."""
    return lambda x: (np.isfinite(x),)


@layer("IsInf", 10)
def is_inf(node: LayerNode) -> Kernel:
    """IsInf-10: true at +inf (``detect_positive``, default true) and -inf (``detect_negative``)."""
    attrs = {
        "detect_positive": int(node.flag("detect_positive", True)),
        "detect_negative": int(node.flag("detect_negative", True)),
    }
    return node.onnx("IsInf", 20, attrs)  # ONNX IsInf-20: IsInf-10's meaning, f16 and bf16 too


@layer("Round", 5)
def round_(node: LayerNode) -> Kernel:
    """Round-5: ``half_to_even`` (2.5 -> 2, ONNX Round) or ``half_away_from_zero`` (2.5 -> 3, -2.5 -> -3)."""
    even = node.choice("mode", "half_to_even", ("half_to_even", "half_away_from_zero")) == "half_to_even"
    onnx_round = node.onnx("Round", 11)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if even or x.dtype.kind in "iu":
            return onnx_round(x) if x.dtype.kind not in "iu" else (x,)
        return ((np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype),)

    return kernel


layer("SoftPlus", 4)(_unary("Softplus", 1))
layer("SoftSign", 9)(_unary("Softsign", 1))


def _float_formula(formula: Callable[[np.ndarray], np.ndarray]) -> Builder:
    """A one-input float layer computed by ``formula`` (float16 through float32)."""

    def build(node: LayerNode) -> Kernel:
        def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
            if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
                raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
            work = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
            with np.errstate(all="ignore"):
                return (np.asarray(formula(work)).astype(x.dtype, copy=False),)

        return kernel

    return build


def _relu6_over_6(x: np.ndarray) -> np.ndarray:
    """min(max(x + 3, 0), 6) / 6."""
    y = np.array(x + 3)  # an array even for a 0-d x, whose sum numpy gives as a scalar
    np.clip(y, 0, 6, out=y)
    y /= 6
    return y


layer("HSigmoid", 5)(_float_formula(_relu6_over_6))


@layer("HSwish", 4)
def hswish(node: LayerNode) -> Kernel:
    """HSwish-4: x * min(max(x + 3, 0), 6) / 6 (the divide last: 1 -> 0.6667, -4 -> 0, 4 -> 4), as
    an element-wise kernel the plan may run in place or in a chain (``InPlace``): each tile is
    computed by the same numpy passes in the same order as the whole tensor, so the same bits."""
    run = _float_formula(lambda x: x * _relu6_over_6(x))(node)

    def tile(dst: np.ndarray, x: np.ndarray) -> None:
        y = x + 3
        np.clip(y, 0, 6, out=y)
        y /= 6
        np.multiply(x, y, out=dst)

    def into(out: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(x):
            return run(x)
        with np.errstate(all="ignore"):
            tile(x, x)
        return (x,)

    code = (("add", 0, 3.0), ("clip", "prev", 0.0, 6.0), ("div", "prev", 6.0), ("mul", 0, "prev"))
    # ``run`` and ``into`` enter np.errstate themselves; as the quiet form they let the plan's run
    # loop hold it for the chains' tiles
    quiet = InPlace(run, into, (0,), tile, code=code)
    return InPlace(run, into, (0,), tile, quiet, code)


@layer("HardSigmoid", 1)
def hard_sigmoid(node: LayerNode) -> Kernel:
    """HardSigmoid-1: max(0, min(1, alpha * x + beta)) with alpha and beta as inputs: alpha 0.2,
    beta 0.5 give 0.7 for 1; in place and in chains (``InPlace``) by the same passes."""

    def kernel(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, ...]:
        same_type(node, x, alpha, beta)
        y = x * alpha.reshape(()) + beta.reshape(())
        return (np.clip(y, 0, 1).astype(x.dtype, copy=False),)

    def tile(dst: np.ndarray, x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> None:
        np.multiply(x, alpha.reshape(()), out=dst)
        np.add(dst, beta.reshape(()), out=dst)
        np.clip(dst, 0, 1, out=dst)

    def into(out: np.ndarray, x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(out) or out is not x or alpha.dtype != x.dtype or beta.dtype != x.dtype:
            return kernel(x, alpha, beta)
        with np.errstate(all="ignore"):
            tile(x, x, alpha, beta)
        return (x,)

    # the same passes on a tile, or compiled: x * alpha, + beta, numpy 2's clip to [0, 1]
    code = (("mul", 0, 1), ("add", "prev", 2), ("clip", "prev", 0.0, 1.0))
    quiet = InPlace(kernel, into, (0,), tile, code=code)
    return InPlace(kernel, into, (0,), tile, quiet, code)


@layer("Swish", 4)
def swish(node: LayerNode) -> Kernel:
    """Swish-4: x * sigmoid(beta * x), beta an optional input (1 when absent): 1 -> 0.7311."""
    sigmoid = node.onnx("Sigmoid", 13)

    def kernel(x: np.ndarray, beta: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        scaled = x if beta is None else x * beta.reshape(()).astype(x.dtype)
        return (x * sigmoid(scaled)[0],)

    return kernel


@layer("Gelu", 2, 7)
def gelu(node: LayerNode) -> Kernel:
    """Gelu-2 (erf) and Gelu-7 (``approximation_mode`` erf or tanh), ONNX Gelu-20: 1 -> 0.8413."""
    mode = node.choice("approximation_mode", "erf", ("erf", "tanh")) if node.layer.version == "opset7" else "erf"
    return node.onnx("Gelu", 20, {"approximate": "none" if mode == "erf" else "tanh"})


@layer("Elu", 1)
def elu(node: LayerNode) -> Kernel:
    """Elu-1: x for x > 0, alpha * (e^x - 1) otherwise."""
    return node.onnx("Elu", 6, {"alpha": node.number("alpha")})


@layer("Clamp", 1)
def clamp(node: LayerNode) -> Kernel:
    """Clamp-1: x clipped to [min, max]; on integers to [ceil(min), floor(max)]: 0.5..2.5 keeps 1 and 2."""
    low, high = node.number("min"), node.number("max")
    if low > high:
        raise node.fail(f"min {low} is above max {high}", "min")
    clip = node.onnx("Clip", 13)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        bounds: tuple[float, float] = (low, high)
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            bounds = (max(math.ceil(low), info.min), min(math.floor(high), info.max))
        return clip(x, np.array(bounds[0], x.dtype), np.array(bounds[1], x.dtype))

    return kernel


@layer("PReLU", 1)
def prelu(node: LayerNode) -> Kernel:
    """PRelu-1: x for x >= 0, slope * x otherwise; a 1-D slope as long as axis 1 of a rank-2+ input
    is per channel, a slope of one value applies to every element (a [1] slope on a 0-d -0.5 with
    slope 0.01 gives 0-d -0.005), any other slope broadcasts numpy-style."""
    onnx_prelu = node.onnx("PRelu", 16)

    def kernel(x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
        if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1] and slope.shape[0] > 1:
            slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
        elif slope.size == 1 and slope.ndim > x.ndim:
            slope = slope.reshape(())  # one slope for every element, of a 0-d input too
        return onnx_prelu(x, slope)

    return kernel


@layer("Selu", 1)
def selu(node: LayerNode) -> Kernel:
    """Selu-1: lambda * (x if x > 0 else alpha * (e^x - 1)), alpha and lambda as inputs."""

    def kernel(x: np.ndarray, alpha: np.ndarray, lambda_: np.ndarray) -> tuple[np.ndarray, ...]:
        same_type(node, x, alpha, lambda_)
        with np.errstate(over="ignore"):
            y = np.where(x > 0, x, alpha.reshape(()) * np.expm1(x)) * lambda_.reshape(())
        return (y.astype(x.dtype, copy=False),)

    return kernel


@layer("Convert", 1)
def convert(node: LayerNode) -> Kernel:
    """Convert-1 to ``destination_type``: floats to integers truncate toward zero and wrap (-2.5
    -> -2; 300 -> 44 in u8; -9.2 -> -9 -> 7 in i4 and u4), to the 8-bit floats ``f8e4m3``/``f8e5m2``
    round to nearest even (460 -> 448, 500 -> NaN in f8e4m3, which has no infinity), anything to
    boolean is ``!= 0``."""
    target = node.element_type("destination_type", narrow=True)
    return lambda x: (_converted(x, target),)


@layer("ConvertLike", 1)
def convert_like(node: LayerNode) -> Kernel:
    """ConvertLike-1: ``data`` converted (as Convert) to the element type of ``like``."""
    return lambda x, like: (_converted(x, like.dtype),)


_NARROW_INTEGERS = {"int4": np.dtype(np.int8), "uint4": np.dtype(np.uint8)}


def _float_to_integer(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Floats to an integer type as OpenVINO's reference and CPU plugin compute it (C++ leaves a
    value out of range undefined; x86 gives the lowest integer): truncated toward zero through
    int32 (int64 for i64 and u32), a value outside it, an infinity or NaN becoming its lowest
    value, then wrapped to the target: inf -> -2147483648 in i32 and 0 in u8, 300.5 -> 44 in u8.
    u64 takes [2**63, 2**64) as well (1.5e19 stays), through int64 after taking 2**63 off."""
    wide = target in (np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))
    bound = 2.0**63 if wide else 2.0**31
    if x.dtype.kind == "f" and x.size and -bound <= float(x.min()) and float(x.max()) < bound:
        # every value inside (no NaN): numpy's cast truncates toward zero as the rule (4 us, not 20)
        return x.astype(np.int64).astype(target)
    truncated = np.trunc(x.astype(np.float64))
    high = np.zeros(truncated.shape, bool)
    if target == np.uint64:
        with np.errstate(invalid="ignore"):
            high = truncated >= bound
        truncated = np.where(high, truncated - bound, truncated)
    with np.errstate(invalid="ignore"):
        inside = (truncated >= -bound) & (truncated < bound)
    integers = np.where(inside, truncated, -bound).astype(np.int64)
    if target == np.uint64:
        return (integers.view(np.uint64) ^ np.where(high, np.uint64(1 << 63), np.uint64(0))).reshape(x.shape)
    return integers.astype(target)


@functools.cache
def _name(dtype: np.dtype) -> str:
    """``dtype.name``, looked up: numpy makes it afresh at each read (6 us a Convert of four reads)."""
    return dtype.name


def _converted(x: np.ndarray, target: np.dtype) -> np.ndarray:
    if x.dtype == target:
        return x
    source = _name(x.dtype)
    if source in _NARROW_INTEGERS:  # 4-bit integers: their values, held in 8 bits
        x = x.astype(_NARROW_INTEGERS[source])
    elif source.startswith(("float8", "float4")):
        x = x.astype(np.float32)
    if target == np.bool_:
        return np.asarray(x != 0)
    if x.dtype.kind == "f" or _name(x.dtype) == "bfloat16":
        if target.kind in "iu" or _name(target) in _NARROW_INTEGERS:
            return _float_to_integer(x, target)
    if _name(target) in _NARROW_INTEGERS:
        return x.astype(np.int64).astype(target)
    return x.astype(target)

"""Arithmetic, comparison, logic and variadic operators, one kernel per ONNX version range, on numpy.

Every version from opset 7 broadcasts numpy-style ((2, 3, 4) with (3, 1) gives (2, 3, 4)), except
Sum/Mean/Max/Min-6 (in force in opsets 7 and 6..7), whose inputs must share one shape. Inputs of one
type parameter must share a dtype (Add of float32 and int64 is the node's error, never a silent
promotion) and the dtype must be one the version allows (Greater-7 has no int32, Greater-9 has).

- Add, Sub, Mul wrap around for integers (int8 100 + 100 = -56), as C does.
- Div of integers truncates toward zero: -7/2 = -3, 7/-2 = -3 (not numpy's floor -4); an integer
  division by zero is the node's error (onnxruntime fails the run too). Floats follow IEEE: 1/0 = inf.
- Pow gives the base's type. Pow-12+ takes an exponent of another type: float base 2.0 ** int64 3
  = 8.0; float16 base 4 ** float32 0.5 = 2 in float16; an integer base with an integer exponent is
  exact (3 ** 4 = 81, wrapping on overflow) and a negative exponent truncates the real result
  (2 ** -1 = 0.5 -> 0, (-1) ** -3 = -1); an integer base with a float exponent is computed in
  float64 and truncated (9 ** 1.5 = 27, 2 ** 0.5 -> 1).
- Mod: ``fmod=0`` on integers is Python's % (the sign of the divisor: -7 % 2 = 1, 7 % -2 = -1),
  ``fmod=1`` C's fmod (the sign of the dividend: -7 fmod 2 = -1). Mod-10/13 refuse ``fmod=0`` on
  floats; Mod-28 allows it: A - floor(A/B)*B, so -7.5 % 2 = 0.5. Integer modulo by zero is the
  node's error; float modulo by zero is NaN.
- Max, Min propagate NaN (max(1, NaN) = NaN); Sum, Mean add every input (Mean of 1 and 2: 1.5).
- Equal, Greater, GreaterOrEqual, Less, LessOrEqual give bool; Equal-19 compares strings.
- Not, And, Or, Xor work on bool; Where picks X where the condition holds, Y elsewhere.
- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot-18 work bit by bit on the integer types: uint8
  12 & 10 = 8, 12 | 10 = 14, 12 ^ 10 = 6, ~12 = 243; int8 ~12 = -13 (two's complement).
- BitShift-11 shifts unsigned integers, and a shift by the bit width or more gives 0 (1 << 8 in uint8
  is 0); BitShift-28 adds signed types: right shifts are arithmetic (-8 >> 1 = -4) and an
  over-shift or negative shift gives -1 for a negative X shifted right, 0 otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ovpool.engine.native.chain_ops import ufunc_rows
from ovpool.engine.ops.base import PLAIN, SHAPE_VALUE, Kernel, OpNode, Traits, outputs, register
from ovpool.engine.ops.checks import int_attr, str_attr, type_guard
from ovpool.engine.ops.donated import InPlace, ignoring_fp, writable_float
from ovpool.engine.ops.elementwise.unary import bit_select
from ovpool.engine.ops.precision import narrow, wide

Binary = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _broadcast_error(node: OpNode, *arrays: np.ndarray) -> Exception:
    shapes = ", ".join(str(a.shape) for a in arrays)
    return node.fail(f"input shapes {shapes} do not broadcast")


def _binary(node: OpNode, function: Binary, ufunc: np.ufunc | None = None) -> Kernel:
    """The kernel applying ``function(a, b)`` after the type check, with numpy's broadcasting; shapes
    that do not broadcast are the node's error. ``ufunc``, when ``function`` is that ufunc on
    floats, gives the in-place form (:class:`InPlace`): ``ufunc(a, b, out=a)`` when the result has
    a's shape (b broadcasts to it), ``out=b`` likewise."""
    check = type_guard(node)
    quiet = function in _QUIET_ON_INTEGERS

    def quiet_kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        check(a, b)
        try:
            y = function(a, b)
        except ValueError:
            raise _broadcast_error(node, a, b) from None
        return (y,) if type(y) is np.ndarray else outputs(y)

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if quiet and a.dtype.kind in "iub":  # no floating-point state to quiet: 1 us less a node
            return quiet_kernel(a, b)
        with np.errstate(all="ignore"):
            return quiet_kernel(a, b)

    def into(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(out) or a.dtype != b.dtype or max(a.ndim, b.ndim) > out.ndim:
            return quiet_kernel(a, b)
        check(a, b)
        try:
            ufunc(a, b, out=out)  # type: ignore[misc]
        except ValueError:  # the result is larger than out: numpy refuses before writing
            return quiet_kernel(a, b)
        return (out,)

    def tile(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        ufunc(a, b, out=dst)  # type: ignore[misc]

    if ufunc is None:
        return InPlace(kernel, quiet=InPlace(quiet_kernel))
    code = _CODES.get(ufunc)
    return InPlace(kernel, ignoring_fp(into), (0, 1), tile, InPlace(quiet_kernel, into, (0, 1), tile, code=code), code)


def ufunc_kernel(node: OpNode, ufunc: np.ufunc) -> Kernel:
    """The kernel of a two-input float ``ufunc`` (``np.maximum``) after the type check of ``node``,
    with its in-place and tile forms (:class:`InPlace`): ``ufunc(a, b)``, or ``ufunc(a, b,
    out=a)`` where the plan gives up a, the same bits."""
    return _binary(node, ufunc, ufunc)


# The compiled chain's row of each binary ufunc it has (add, sub, mul, div: ovpool.engine.native.chain_ops).
_CODES = ufunc_rows(2)


def _binary_factory(function: Binary) -> Callable[[OpNode], Kernel]:
    ufunc = function if function in _IN_PLACE else None
    return lambda node: _binary(node, function, ufunc)


_IN_PLACE = (np.add, np.subtract, np.multiply)  # float results of the inputs' type

_PLAIN: tuple[tuple[str, int, Binary, Traits], ...] = (
    ("Add", 7, np.add, SHAPE_VALUE),
    ("Sub", 7, np.subtract, SHAPE_VALUE),
    ("Mul", 7, np.multiply, SHAPE_VALUE),
    ("Equal", 7, np.equal, SHAPE_VALUE),
    ("Greater", 7, np.greater, SHAPE_VALUE),
    ("GreaterOrEqual", 12, np.greater_equal, SHAPE_VALUE),
    ("Less", 7, np.less, SHAPE_VALUE),
    ("LessOrEqual", 12, np.less_equal, SHAPE_VALUE),
    ("And", 7, np.logical_and, SHAPE_VALUE),
    ("Or", 7, np.logical_or, SHAPE_VALUE),
    ("Xor", 7, np.logical_xor, PLAIN),
    ("BitwiseAnd", 18, np.bitwise_and, PLAIN),
    ("BitwiseOr", 18, np.bitwise_or, PLAIN),
    ("BitwiseXor", 18, np.bitwise_xor, PLAIN),
)

for _op, _since, _function, _traits in _PLAIN:
    register(_op, _since, traits=_traits)(_binary_factory(_function))

# ufuncs that raise no floating-point flag on integers and bools (wrapping is silent; an integer
# floor division of the lowest value by -1 flags overflow, so Div, Mod and Pow are not here)
_QUIET_ON_INTEGERS = frozenset(f for _, _, f, _ in _PLAIN) | {np.left_shift, np.right_shift}


@register("Not", 1, traits=SHAPE_VALUE)
def not_(node: OpNode) -> Kernel:
    """Not-1: logical not of a bool tensor: [True, False] -> [False, True]."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        return outputs(np.logical_not(x))

    return kernel


@register("BitwiseNot", 18)
def bitwise_not(node: OpNode) -> Kernel:
    """BitwiseNot-18: every bit flipped, in the input's integer type: uint8 5 -> 250, int8 5 -> -6."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        return outputs(np.invert(x))

    return kernel


# ---------------------------------------------------------------- Div, Mod


def _nonzero_divisor(node: OpNode, b: np.ndarray) -> None:
    if b.dtype.kind in "iu" and not b.all():
        raise node.fail("integer division by zero (the divisor input holds 0)")


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a/b rounded toward zero for integers. Up to 32 bits, float64 division truncated: exact, as a
    non-whole quotient is at least 1/|b| from a whole number and float64's error at most 2^-21/|b|.
    64 bits: numpy's floor quotient, plus one where the division is inexact and the signs differ
    (-7 // 2 = -4 -> -3)."""
    if a.dtype.itemsize <= 4:
        quotient = np.asarray(np.divide(a, b, dtype=np.float64))
        np.trunc(quotient, out=quotient)
        return quotient.astype(a.dtype)
    q = np.floor_divide(a, b)
    if a.dtype.kind == "u":
        return q
    inexact = np.multiply(q, b) != a
    inexact &= np.bitwise_xor(a, b) < 0
    q += inexact
    return q


@register("Div", 7, traits=SHAPE_VALUE)
def div(node: OpNode) -> Kernel:
    """Div-7/13/14: floats IEEE (1/0 = inf, 0/0 = NaN); integers truncate toward zero (-7/2 = -3) and
    a zero divisor is the node's error."""

    def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu":
            _nonzero_divisor(node, b)
            return _truncating_divide(a, b)
        return np.divide(a, b)

    return _binary(node, divide, np.divide)


def _python_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer a % b with the divisor's sign: C's remainder, plus b where it is non-zero and its sign
    differs from b's (-7 fmod 2 = -1 -> 1)."""
    r = np.fmod(a, b)
    if a.dtype.kind == "u":
        return r
    fix = r != 0
    fix &= np.bitwise_xor(r, b) < 0
    r += np.multiply(fix, b, dtype=r.dtype)
    return r


def _mod(node: OpNode, float_python_mod: bool) -> Kernel:
    fmod = int_attr(node, "fmod", 0, (0, 1))

    def remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu":
            _nonzero_divisor(node, b)
            return np.fmod(a, b) if fmod else _python_mod(a, b)
        if fmod:
            return np.fmod(a, b)
        if not float_python_mod:
            raise node.fail(f"is 0 with {a.dtype} inputs; Mod-{node.since} needs fmod=1 for floating point", "fmod")
        return np.mod(a, b)

    return _binary(node, remainder)


@register("Mod", 10, 27, traits=SHAPE_VALUE)
def mod(node: OpNode) -> Kernel:
    """Mod-10/13: ``fmod=0`` (default) integers only, Python's %: -7 % 2 = 1, 7 % -2 = -1;
    ``fmod=1`` C's fmod, the dividend's sign: -7 fmod 2 = -1, -7.5 fmod 2 = -1.5."""
    return _mod(node, float_python_mod=False)


@register("Mod", 28, traits=SHAPE_VALUE)
def mod_28(node: OpNode) -> Kernel:
    """Mod-28: as Mod-13, and ``fmod=0`` on floats is A - floor(A/B)*B: -7.5 % 2 = 0.5, 3 % -inf =
    -inf, 0 % -2 = -0."""
    return _mod(node, float_python_mod=True)


# ---------------------------------------------------------------- Pow


def _integer_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer x ** integer y in x's type: exact for y >= 0 (wrapping on overflow), the truncated
    real value for y < 0 (2 ** -1 -> 0, 1 ** -2 -> 1, (-1) ** -3 -> -1)."""
    exponent = y.astype(x.dtype, copy=False)
    negative = exponent < 0
    if not negative.any():
        return np.power(x, exponent)
    result = np.power(x, np.maximum(exponent, 0))
    real = np.power(x.astype(np.float64), exponent.astype(np.float64))
    return np.where(negative, real.astype(x.dtype), result)


def _float_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Float x ** y in x's type, computed in float32 for half precision and in float64 when the
    exponent is float64."""
    work = np.dtype(np.float32) if x.dtype.itemsize < 4 else x.dtype
    if y.dtype.kind in "fV" and y.dtype.itemsize > work.itemsize:
        work = y.dtype
    base = x.astype(work, copy=False)
    exponent = y.astype(work, copy=False)
    if exponent.size == 1 and exponent.ndim <= base.ndim:
        return narrow(_power_by_scalar(base, float(exponent.reshape(()))), x.dtype)
    return narrow(np.power(base, exponent), x.dtype)


def _power_by_scalar(base: np.ndarray, exponent: float) -> np.ndarray:
    """x ** e for one exponent: x*x for 2 and x*x*x for 3 (what onnxruntime computes), |x| ** e with
    x's sign for other odd whole e and |x| ** e for even ones (numpy's power is fast for positive
    bases only: 60 ns a value for negative ones); any other e through np.power."""
    if exponent == 2:
        return np.square(base)
    if exponent == 3:
        y = np.square(base)
        y *= base
        return y
    if not exponent.is_integer():
        return np.power(base, exponent)
    y = np.asarray(np.power(np.abs(base), exponent))
    if exponent % 2:
        np.copysign(y, base, out=y)
    return y


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        if y.dtype.kind in "iu":
            return _integer_power(x, y)
        return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
    return _float_power(x, y)


@register("Pow", 7)
def pow_(node: OpNode) -> Kernel:
    """Pow-7: x ** y of one float type (2 ** 3 = 8, (-8) ** (1/3) = NaN). Pow-12/13/15: y may be any
    numeric type and the result has x's: int32 2 ** float32 0.5 = 1 (1.414 truncated), float32
    2 ** int64 -1 = 0.5, int64 2 ** int64 -1 = 0."""
    kernel = _binary(node, _power)
    constants = node.constants
    exponent = constants[1] if len(constants) > 1 else None
    if exponent is None or exponent.size != 1 or exponent.dtype.kind not in "fiu" or exponent.reshape(-1)[0] != 2:
        return kernel
    return _squaring(node, kernel)


def _squaring(node: OpNode, kernel: Kernel) -> Kernel:
    """Pow of a constant exponent 2 as ``kernel`` computes it, ``np.square`` (x * x: 3 -> 9, -0 ->
    0, -inf -> inf, NaN stays NaN), with the in-place form (the square written over a dying float
    base of the result's shape) and the tile and compiled forms of a chain of element-wise nodes
    (``ovpool.engine.chains``): the row x * x, the same IEEE product as numpy's square, so
    silero's STFT magnitude ``sqrt(re ** 2 + im ** 2)`` runs as one chain. A float32 base squared
    in float64 (a float64 exponent) and rounded back is the float32 square: the product is exact
    in float64."""
    check = type_guard(node)
    quiet = kernel.quiet if isinstance(kernel, InPlace) and kernel.quiet is not None else kernel

    def into(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(out) or b.ndim > out.ndim:
            return quiet(a, b)
        check(a, b)
        np.square(a, out=out)
        return (out,)

    def tile(dst: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        np.square(a, out=dst)

    code = (("mul", 0, 0),)
    return InPlace(kernel, ignoring_fp(into), (0,), tile, InPlace(quiet, into, (0,), tile, code=code), code)


# ---------------------------------------------------------------- variadic


def _same_shapes(node: OpNode, arrays: tuple[np.ndarray, ...]) -> None:
    if any(a.shape != arrays[0].shape for a in arrays):
        raise node.fail(f"inputs of shapes {', '.join(str(a.shape) for a in arrays)}: {node.op_type}-6 does not broadcast")


def _variadic(node: OpNode, fold: Callable[[tuple[np.ndarray, ...]], np.ndarray], quiet_on_integers: bool = False) -> Kernel:
    """The kernel for Max/Min/Sum/Mean: at least one input, of one type; version 6 needs one shape,
    8+ broadcast numpy-style. ``quiet_on_integers``: ``fold`` raises no floating-point flag on
    integers (a maximum, a wrapping sum), which then skip the ``np.errstate`` (1 us of a Min of two
    one-value int64 inputs' 2.8)."""
    check = type_guard(node)
    broadcasts = node.since >= 8

    def kernel(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        if not arrays:
            raise node.fail("has no inputs; it needs at least one")
        check(*arrays)
        if not broadcasts:
            _same_shapes(node, arrays)
        try:
            if quiet_on_integers and arrays[0].dtype.kind in "iub":  # one type: checked above
                return outputs(fold(arrays))
            with np.errstate(all="ignore"):
                return outputs(fold(arrays))
        except ValueError:
            raise _broadcast_error(node, *arrays) from None

    return kernel


def _accumulate(function: np.ufunc, arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """function(...function(a0, a1)..., an), in place once the result has its final shape."""
    if len(arrays) == 1:
        return arrays[0].copy()
    result = np.asarray(function(arrays[0], arrays[1]))
    for array in arrays[2:]:
        if np.broadcast_shapes(result.shape, array.shape) == result.shape:
            function(result, array, out=result)
        else:
            result = function(result, array)
    return result


@register("Max", 6, traits=SHAPE_VALUE)
def max_(node: OpNode) -> Kernel:
    """Max-6/8/12/13: element-wise maximum of every input; NaN wins: max(1, NaN, 0) = NaN.
    Max-12 adds integer types."""
    return _variadic(node, functools.partial(_accumulate, np.maximum), quiet_on_integers=True)


@register("Min", 6, traits=SHAPE_VALUE)
def min_(node: OpNode) -> Kernel:
    """Min-6/8/12/13: element-wise minimum of every input; NaN wins: min(1, NaN) = NaN."""
    return _variadic(node, functools.partial(_accumulate, np.minimum), quiet_on_integers=True)


@register("Sum", 6)
def sum_(node: OpNode) -> Kernel:
    """Sum-6/8/13: the element-wise sum of every input (half precision added in float32 and
    rounded once): 1 + 2 + 0.5 = 3.5."""

    def fold(arrays: tuple[np.ndarray, ...]) -> np.ndarray:
        return narrow(_accumulate(np.add, tuple(wide(a) for a in arrays)), arrays[0].dtype)

    return _variadic(node, fold)


@register("Mean", 6)
def mean(node: OpNode) -> Kernel:
    """Mean-6/8/13: the element-wise sum divided by the number of inputs: mean(1, 2) = 1.5."""

    def fold(arrays: tuple[np.ndarray, ...]) -> np.ndarray:
        total = _accumulate(np.add, tuple(wide(a) for a in arrays))
        return narrow(np.divide(total, len(arrays), out=total), arrays[0].dtype)

    return _variadic(node, fold)


# ---------------------------------------------------------------- Where, BitShift


@register("Where", 9, traits=SHAPE_VALUE)
def where(node: OpNode) -> Kernel:
    """Where-9/16: X where the bool condition holds, else Y, broadcast three ways: condition
    [[True], [False]] with X [1, 2] and Y 0 gives [[1, 2], [0, 0]]. Numbers and bools are picked by
    bit masks (``np.where`` branches per element: slow on a random condition); strings by ``np.where``."""
    check = type_guard(node)

    def kernel(condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        check(condition, x, y)
        try:
            return outputs(bit_select(condition, x, y) if x.dtype.kind in "biufV" else np.where(condition, x, y))
        except ValueError:
            raise _broadcast_error(node, condition, x, y) from None

    return kernel


def _bit_shift(node: OpNode) -> Kernel:
    direction = str_attr(node, "direction", None, ("LEFT", "RIGHT"))
    return _binary(node, np.left_shift if direction == "LEFT" else np.right_shift)


@register("BitShift", 11, 27)
def bit_shift(node: OpNode) -> Kernel:
    """BitShift-11: unsigned X shifted by Y bits, ``direction`` LEFT or RIGHT (required): uint8 1 << 1
    = 2, 255 << 7 = 128 (bits past the width are dropped), 1 << 8 = 0."""
    return _bit_shift(node)


@register("BitShift", 28)
def bit_shift_28(node: OpNode) -> Kernel:
    """BitShift-28: also signed X; right shifts are arithmetic (-8 >> 1 = -4), left shifts drop bits
    past the sign bit (int8 64 << 1 = -128); Y negative or >= the bit width gives -1 for a negative
    X shifted right, else 0 (numpy's shifts define exactly this)."""
    return _bit_shift(node)

"""Unary math, one numpy function per op (Exp, Log, Sqrt, ... Atanh; Round halves to even, Sign keeps
NaN), and the element-wise kernel they and the activations share (``_elementwise``: an input-typed
result, an in-place form, a tile form for chains and a compiled chain row where one exists).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ovpool.engine.memo import scalar
from ovpool.engine.native.chain_ops import ufunc_rows
from ovpool.engine.ops.base import PLAIN, SHAPE_VALUE, Kernel, OpNode, Traits, outputs, register
from ovpool.engine.ops.checks import type_guard
from ovpool.engine.ops.donated import InPlace, ignoring_fp, writable_float
from ovpool.engine.ops.precision import _is_half

Unary = Callable[[np.ndarray], np.ndarray]


_SIMPLE: tuple[tuple[str, int, np.ufunc, Traits], ...] = (
    ("Exp", 6, np.exp, PLAIN),
    ("Log", 6, np.log, PLAIN),
    ("Sqrt", 6, np.sqrt, PLAIN),
    ("Reciprocal", 6, np.reciprocal, PLAIN),
    ("Abs", 6, np.abs, SHAPE_VALUE),
    ("Neg", 6, np.negative, SHAPE_VALUE),
    ("Floor", 6, np.floor, SHAPE_VALUE),
    ("Ceil", 6, np.ceil, SHAPE_VALUE),
    ("Tanh", 6, np.tanh, PLAIN),
    ("Sign", 9, np.sign, PLAIN),
    ("Round", 11, np.rint, PLAIN),
    ("IsNaN", 9, np.isnan, PLAIN),
    ("Sin", 7, np.sin, PLAIN),
    ("Cos", 7, np.cos, PLAIN),
    ("Tan", 7, np.tan, PLAIN),
    ("Asin", 7, np.arcsin, PLAIN),
    ("Acos", 7, np.arccos, PLAIN),
    ("Atan", 7, np.arctan, PLAIN),
    ("Sinh", 9, np.sinh, PLAIN),
    ("Cosh", 9, np.cosh, PLAIN),
    ("Asinh", 9, np.arcsinh, PLAIN),
    ("Acosh", 9, np.arccosh, PLAIN),
    ("Atanh", 9, np.arctanh, PLAIN),
)


def _elementwise(
    node: OpNode,
    formula: Unary,
    tile: Callable[[np.ndarray, np.ndarray], object] | None = None,
    code: tuple[Any, ...] | None = None,
) -> Kernel:
    """The kernel applying ``formula`` after the type check. float16 and bfloat16 are computed in
    float32 and rounded once (numpy's half-precision loops are slower than the two casts); a 0-d
    input is seen as shape (1,), so formulas can work in place (numpy gives scalars for 0-d).
    ``tile(dst, x)``, when given, writes ``formula(x)`` of a float32/float64 ``x`` into ``dst`` by
    the same steps (``dst`` may be ``x``): the in-place form (:class:`InPlace`)."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        vector = x.reshape(1) if x.ndim == 0 else x
        if _is_half(x.dtype):
            y = formula(vector.astype(np.float32))
            y = y.astype(x.dtype) if y.dtype == np.float32 else y
        else:
            y = formula(vector)
        return (y,) if x.ndim else outputs(y.reshape(()))

    def in_place(out: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(x):
            return kernel(x)
        check(x)
        assert tile is not None
        tile(x, x)
        return (x,)

    into = in_place if tile is not None else None
    quiet = InPlace(kernel, into, (0,), tile, code=code)
    return InPlace(ignoring_fp(kernel), None if into is None else ignoring_fp(into), (0,), tile, quiet, code)


# The compiled chain's rows of the simple ops it has (``ovpool.engine.native.chain_ops``): Sqrt, whose
# IEEE square root is correctly rounded in C as in numpy, so the same bits.
_SIMPLE_CODES = ufunc_rows(1)


def _simple_factory(function: np.ufunc) -> Callable[[OpNode], Kernel]:
    tile = None if function is np.isnan else functools.partial(_ufunc_into, function)
    code = _SIMPLE_CODES.get(function)
    return lambda node: _elementwise(node, function, tile, code)


def _ufunc_into(function: np.ufunc, dst: np.ndarray, x: np.ndarray) -> None:
    function(x, out=dst)


for _op, _since, _function, _traits in _SIMPLE:
    register(_op, _since, traits=_traits)(_simple_factory(_function))


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _mask_bits(mask: np.ndarray, itemsize: int) -> np.ndarray:
    """All ones where ``mask``, zeros elsewhere, as integers of ``itemsize`` bytes."""
    bits = mask.view(np.int8).astype(_BITS[itemsize])
    return np.negative(bits, out=bits)


def keep(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``x`` where ``mask``, +0 elsewhere (a float array and a bool array of one shape), without a
    branch per element: [-1.5, inf, 2] with [F, F, T] -> [0, 0, 2] (``np.where`` on a random mask
    costs ten times more)."""
    bits = _mask_bits(mask, x.itemsize)
    np.bitwise_and(x.view(bits.dtype), bits, out=bits)
    return bits.view(x.dtype)


def bit_select(condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where the bool ``condition`` holds, ``b`` elsewhere, broadcast three ways (``a`` and ``b``
    of one type, any item size of 1, 2, 4 or 8 bytes), by bit masks instead of a branch per element:
    [T, F] with [1.5, 2.5] and 0 -> [1.5, 0]."""
    bits = np.empty(np.broadcast_shapes(condition.shape, a.shape, b.shape), _BITS[a.itemsize])
    np.negative(condition.view(np.int8), out=bits)
    chosen = np.asarray(np.bitwise_and(a.view(bits.dtype), bits))
    np.invert(bits, out=bits)
    np.bitwise_and(b.view(bits.dtype), bits, out=bits)
    np.bitwise_or(chosen, bits, out=chosen)
    return chosen.view(a.dtype)


# numpy's clip ufunc, which np.clip calls after about 2 us of argument handling; called directly,
# the same loop gives the same bits (numpy 2 moved it from numpy.core to numpy._core).
_UMATH = "numpy._core.umath" if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else "numpy.core.umath"
_CLIP: np.ufunc = importlib.import_module(_UMATH).clip


def _positive_part(x: np.ndarray) -> np.ndarray:
    """max(x, 0), NaN kept: a clip to [0, inf] for floats (numpy's fastest form), max for integers;
    [-2.5, nan, 3] -> [0, nan, 3]."""
    if x.dtype.kind == "f":
        return _CLIP(x, scalar(0, x.dtype), scalar(np.inf, x.dtype))
    return np.maximum(x, 0)


def _negative_part(x: np.ndarray) -> np.ndarray:
    """min(x, 0), NaN kept."""
    if x.dtype.kind == "f":
        return _CLIP(x, scalar(-np.inf, x.dtype), scalar(0, x.dtype))
    return np.minimum(x, 0)

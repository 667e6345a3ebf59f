"""Softmax, LogSoftmax and Hardmax: each version's axis rule.

Versions 1 and 11 coerce the input to 2-D at ``axis`` (default 1) and normalise each row of that
matrix: a (2, 3, 4) input with axis=1 is a 2 x 12 matrix, so each of the 2 batch rows is softmaxed
over its 12 values together (every output row sums to 1 over 12 elements, not over 3). Version 13
normalises along the one ``axis`` (default -1): the same (2, 3, 4) input with axis=1 gets 8
softmaxes of 3 values each.

Softmax subtracts the maximum before exponentiating (``exp(x - max) / sum(exp(x - max))``) so
``[1000, 1000]`` gives ``[0.5, 0.5]``, not NaN (inputs all within (-40, 40) need no shift and get
none); LogSoftmax is ``x - max - log(sum(exp(x - max)))``.
Hardmax puts 1 at the first maximum and 0 elsewhere: ``[3, 5, 5]`` gives ``[0, 1, 0]``. Float16
(and other narrow float) inputs of versions 1 and 11 are computed in float32 and the result cast
back to the input type; Softmax-13 and LogSoftmax-13 follow their function bodies, whose steps
(ReduceMax, Sub, Exp, ReduceSum, Div or Log and Sub) are each in the input type: every step's
result is rounded to float16, so exp(-0.6) is 0.5488 before the sum (ONNX's expected float16 data
are those, one float16 step from a softmax rounded once).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ovpool.engine.memo import scalar
from ovpool.engine.ops.base import Kernel, OpNode, normalize_axis, register
from ovpool.engine.ops.precision import rounding

Rule = Callable[[np.ndarray, int], np.ndarray]


# The reductions np.sum, ndarray.min and ndarray.max call after about 1 us of argument handling each
# (the same loops, so the same bits).
_add_reduce: Callable[..., np.ndarray] = np.add.reduce
_min_reduce: Callable[..., np.ndarray] = np.minimum.reduce
_max_reduce: Callable[..., np.ndarray] = np.maximum.reduce


def _sum(x: np.ndarray, axis: int) -> np.ndarray:
    """Sum along ``axis`` keeping it; along the last axis through einsum (much faster on short rows)."""
    if axis == x.ndim - 1:
        return np.einsum("...i->...", x)[..., None]
    return _add_reduce(x, axis=axis, keepdims=True)


# Inside (-40, 40) exp neither overflows nor underflows (float32: e^40 = 2.4e17, e^-40 = 4.2e-18, even a
# sum of 10^20 such terms is finite), so the shift by the row maximum changes nothing and is skipped:
# two whole-array reductions (fast) replace a row-wise maximum and a subtraction (slow on short rows).
_EXP_SAFE = 40.0


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if -_EXP_SAFE < _min_reduce(x, axis=None) and _max_reduce(x, axis=None) < _EXP_SAFE:
        e = np.exp(x)
    else:
        e = np.subtract(x, _max_reduce(x, axis=axis, keepdims=True))
        np.exp(e, out=e)
    e *= np.divide(scalar(1, e.dtype), _sum(e, axis))
    return e


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.subtract(x, x.max(axis=axis, keepdims=True))
    shifted -= np.log(_sum(np.exp(shifted), axis))
    return shifted


def softmax_steps(x: np.ndarray, axis: int, step: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Softmax-13's body on a float32/float64 ``x``: ``Exp(x - max) / ReduceSum(Exp(x - max))``,
    each step's result passed through ``step`` (the rounding to the type the body computes in); a
    row of ``-inf`` gives NaN."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = step(np.exp(step(x - x.max(axis=axis, keepdims=True))))
        return step(e / step(_sum(e, axis)))


def _softmax_in_type(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax-13's body in the narrow type of ``x``, each step computed in float32 and rounded."""
    work = np.dtype(np.float32)
    return softmax_steps(x.astype(work), axis, rounding(x.dtype, work)).astype(x.dtype)


def _log_softmax_in_type(x: np.ndarray, axis: int) -> np.ndarray:
    """LogSoftmax-13's body in the narrow type of ``x``: ``(x - max) - Log(ReduceSum(Exp(x - max)))``,
    each step rounded to the type."""
    dtype = x.dtype
    wide = x.astype(np.float32)
    shifted = (wide - wide.max(axis=axis, keepdims=True)).astype(dtype).astype(np.float32)
    total = _sum(np.exp(shifted).astype(dtype).astype(np.float32), axis).astype(dtype).astype(np.float32)
    return (shifted - np.log(total).astype(dtype).astype(np.float32)).astype(dtype)


def _in_type(wide: Rule, narrow: Rule) -> Rule:
    """``wide`` for float32 and float64 inputs, ``narrow`` (the body's steps in the type) for the others."""

    def rule(x: np.ndarray, axis: int) -> np.ndarray:
        return wide(x, axis) if x.dtype in (np.float32, np.float64) else narrow(x, axis)

    return rule


def _hardmax(x: np.ndarray, axis: int) -> np.ndarray:
    out = np.zeros_like(x)
    np.put_along_axis(out, np.argmax(x, axis=axis, keepdims=True), 1, axis=axis)
    return out


def _check_float(node: OpNode, x: np.ndarray) -> None:
    if x.dtype.kind in "iub":
        raise node.fail(f"input of type {x.dtype} is not a floating-point tensor")


def _apply(rule: Rule, x: np.ndarray, axis: int, upcast: bool) -> np.ndarray:
    """``rule`` along ``axis``; float16 computed in float32 when ``upcast`` (exp and sums), cast back."""
    if x.size == 0:
        return x.copy()
    if upcast and x.dtype not in (np.float32, np.float64):
        return rule(x.astype(np.float32), axis).astype(x.dtype)
    return rule(x, axis)


def _coerced(node: OpNode, rule: Rule, upcast: bool) -> Kernel:
    """Versions 1 and 11: rows of the 2-D matrix ``[prod(shape[:axis]), prod(shape[axis:])]``."""
    axis = int(node.attr("axis", 1))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, x)
        k = normalize_axis(node, axis, x.ndim)
        if x.size == 0:
            return (x.copy(),)
        rows = math.prod(x.shape[:k])
        return (_apply(rule, x.reshape(rows, -1), 1, upcast).reshape(x.shape),)

    return kernel


def _single_axis(node: OpNode, rule: Rule, upcast: bool) -> Kernel:
    """Version 13: along the one ``axis`` (default -1)."""
    axis = int(node.attr("axis", -1))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, x)
        return (_apply(rule, x, normalize_axis(node, axis, x.ndim), upcast),)

    return kernel


@register("Softmax", 1, 12)
def softmax_coerced(node: OpNode) -> Kernel:
    """Softmax-1/11: a (2, 3, 4) input with axis=1 is softmaxed over the 12 values of each batch row."""
    return _coerced(node, _softmax, True)


@register("Softmax", 13)
def softmax(node: OpNode) -> Kernel:
    """Softmax-13: a (2, 3, 4) input with axis=1 is softmaxed over the 3 values of each of 8 columns;
    float16 and bfloat16 step by step in the type, as the function body."""
    return _single_axis(node, _in_type(_softmax, _softmax_in_type), False)


@register("LogSoftmax", 1, 12)
def log_softmax_coerced(node: OpNode) -> Kernel:
    """LogSoftmax-1/11: log of Softmax-1/11 (rows of the 2-D coercion at ``axis``, default 1)."""
    return _coerced(node, _log_softmax, True)


@register("LogSoftmax", 13)
def log_softmax(node: OpNode) -> Kernel:
    """LogSoftmax-13: ``x - max - log(sum(exp(x - max)))`` along ``axis`` (default -1); float16
    and bfloat16 step by step in the type, as the function body."""
    return _single_axis(node, _in_type(_log_softmax, _log_softmax_in_type), False)


@register("Hardmax", 1, 12)
def hardmax_coerced(node: OpNode) -> Kernel:
    """Hardmax-1/11: one 1 per row of the 2-D coercion: a (2, 3, 4) input with axis=1 has two 1s."""
    return _coerced(node, _hardmax, False)


@register("Hardmax", 13)
def hardmax(node: OpNode) -> Kernel:
    """Hardmax-13: one 1 per line along ``axis``: a (2, 3, 4) input with axis=1 has eight 1s."""
    return _single_axis(node, _hardmax, False)

"""Reductions (ReduceSum, ReduceMean, ReduceMax, ... ReduceLogSumExp) and ArgMax/ArgMin.

Where the axes come from is what changes between versions: an ``axes`` ATTRIBUTE before
ReduceSum-13 and before version 18 of the others (absent: reduce every axis), an optional ``axes``
INPUT from then on, with ``noop_with_empty_axes``: an omitted or empty ``axes`` input reduces every
axis, or none when ``noop_with_empty_axes=1``. Reducing no axis still applies the rest of the
formula: ReduceSumSquare of ``[-2, 3]`` with no axes is ``[4, 9]``, ReduceL1 ``[2, 3]``, ReduceLogSum
``log(x)``. ``keepdims`` (default 1) keeps reduced axes as 1s: a (2, 3, 4) input reduced over
axes [1] is (2, 1, 4), or (2, 4) with keepdims=0. A repeated axis counts once (as onnxruntime does).

Reducing zero elements gives the schema's identities: Sum/L1/L2/SumSquare 0, Prod 1, Max -inf (the
type's minimum for integers and False for bool), Min +inf (maximum, True), LogSumExp and LogSum
-inf; Mean, undefined in the schema, gives 0 as onnxruntime does. Integer inputs keep their type:
the mean truncates toward zero (``[-5, -1, -3, -4]`` gives -3), L2, LogSum and LogSumExp are
computed in float64 and truncated (``sqrt(51)`` gives 7); a NaN or out-of-range value becomes the
type's minimum, as the x86 conversion onnxruntime's C++ cast compiles to does. Float16 inputs are
accumulated in float32 and the result cast back.

ArgMax/ArgMin give int64 indices along ``axis`` (default 0), the first extreme unless
``select_last_index=1`` (version 12 on): ArgMax of ``[1, 5, 5]`` is 1, or 2 with select_last_index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ovpool.engine.memo import ShapeMemo, scalar
from ovpool.engine.ops.base import LATEST, PLAIN, SHAPE_VALUE, Kernel, OpNode, Traits, normalize_axis, outputs, register

Axes = tuple[int, ...]
Formula = Callable[[np.ndarray, Axes, bool], np.ndarray]


def _accumulator(x: np.ndarray) -> np.ndarray:
    """``x`` in the type sums are computed in: float16 (and other narrow floats) as float32."""
    if x.dtype.kind in "iub" or x.dtype in (np.float32, np.float64):
        return x
    return x.astype(np.float32)


def _to_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results cast to ``dtype``; integers truncate, NaN and out-of-range values become the minimum."""
    if dtype.kind not in "iu":
        return values.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    limit = 2.0 ** (info.bits - (1 if dtype.kind == "i" else 0))
    valid = np.isfinite(values) & (values >= info.min) & (values < limit)
    return np.where(valid, values, info.min).astype(dtype)


# The loop np.sum calls after ~1.5 us of argument handling (typed loosely: keepdims is a bool here).
_add_reduce: Callable[..., np.ndarray] = np.add.reduce


def _sum(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    work = _accumulator(x)
    return _add_reduce(work, axis=axes, keepdims=keepdims, dtype=work.dtype).astype(x.dtype, copy=False)


def _mean(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    """The sum over ``axes`` divided by the count: [3, -4] gives -0.5; integers round toward zero."""
    work = _accumulator(x)
    total = _add_reduce(work, axis=axes, keepdims=keepdims, dtype=work.dtype)
    count = math.prod(x.shape[a] for a in axes)
    if count == 0:
        return total.astype(x.dtype, copy=False)
    if x.dtype.kind in "iu":
        quotient = np.abs(total) // count
        return np.where(total < 0, -quotient, quotient).astype(x.dtype, copy=False)
    return np.divide(total, scalar(count, total.dtype)).astype(x.dtype, copy=False)


def _extreme(ufunc: np.ufunc, sign: int) -> Formula:
    """ReduceMax (``np.maximum``, sign -1: the empty result is the lowest value) or ReduceMin."""

    def reduce(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
        if all(x.shape[a] for a in axes):
            return ufunc.reduce(x, axis=axes, keepdims=keepdims)
        if x.dtype == np.bool_:
            initial: object = sign > 0
        elif x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            initial = info.max if sign > 0 else info.min
        else:
            initial = sign * np.inf
        return ufunc.reduce(x, axis=axes, keepdims=keepdims, initial=initial)

    return reduce


def _prod(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    work = _accumulator(x)
    return np.prod(work, axis=axes, keepdims=keepdims, dtype=work.dtype).astype(x.dtype, copy=False)


def _l1(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    return _sum(np.abs(x), axes, keepdims)


def _sum_square(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    work = _accumulator(x)
    return np.sum(work * work, axis=axes, keepdims=keepdims, dtype=work.dtype).astype(x.dtype, copy=False)


def _l2(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    work = _accumulator(x)
    squares = np.sum(work * work, axis=axes, keepdims=keepdims, dtype=work.dtype)
    if x.dtype.kind in "iu":
        return _to_type(np.sqrt(squares.astype(np.float64)), x.dtype)
    return np.sqrt(squares).astype(x.dtype, copy=False)


def _log_sum(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    work = _accumulator(x)
    total = np.sum(work, axis=axes, keepdims=keepdims, dtype=work.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _to_type(np.log(total.astype(np.float64) if x.dtype.kind in "iu" else total), x.dtype)


def _log_sum_exp(x: np.ndarray, axes: Axes, keepdims: bool) -> np.ndarray:
    """``log(sum(exp(x - m))) + m`` with ``m`` the maximum (0 where it is infinite or there is none)."""
    work = x.astype(np.float64) if x.dtype.kind in "iub" else _accumulator(x)
    top = _extreme(np.maximum, -1)(work, axes, True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        total = np.log(np.sum(np.exp(work - top), axis=axes, keepdims=True)) + top
    return _to_type(total if keepdims else np.squeeze(total, axis=axes), x.dtype)


@dataclass(frozen=True)
class _Reduction:
    op_type: str
    formula: Formula
    axes_input_since: int  # the first since-version that takes axes as an input
    example: str  # the rule on [3, -4] reduced over its one axis
    traits: Traits = PLAIN


_REDUCTIONS = (
    _Reduction("ReduceSum", _sum, 13, "3 + -4 = -1", SHAPE_VALUE),
    _Reduction("ReduceMean", _mean, 18, "(3 + -4) / 2 = -0.5"),
    _Reduction("ReduceMax", _extreme(np.maximum, -1), 18, "3", SHAPE_VALUE),
    _Reduction("ReduceMin", _extreme(np.minimum, 1), 18, "-4", SHAPE_VALUE),
    _Reduction("ReduceProd", _prod, 18, "3 * -4 = -12", SHAPE_VALUE),
    _Reduction("ReduceL1", _l1, 18, "|3| + |-4| = 7"),
    _Reduction("ReduceL2", _l2, 18, "sqrt(9 + 16) = 5"),
    _Reduction("ReduceSumSquare", _sum_square, 18, "9 + 16 = 25"),
    _Reduction("ReduceLogSum", _log_sum, 18, "log(-1) = NaN"),
    _Reduction("ReduceLogSumExp", _log_sum_exp, 18, "log(exp(3) + exp(-4)) = 3.000911"),
)


def _axes(node: OpNode, axes: Sequence[int], rank: int) -> Axes:
    """``axes`` normalised to ``[0, rank)``, sorted, each once."""
    return tuple(sorted({normalize_axis(node, int(a), rank, "axes") for a in axes}))


def _axes_value(node: OpNode, value: np.ndarray) -> list[int]:
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or array.ndim > 1:
        raise node.fail(f"input 'axes' must be a 1-D integer tensor, got {array.dtype} of shape {array.shape}")
    return [int(a) for a in array.reshape(-1)]


def _with_attribute_axes(node: OpNode, formula: Formula) -> Kernel:
    """Versions with an ``axes`` attribute: absent (or empty) reduces every axis."""
    axes = node.attr("axes")
    keepdims = bool(node.attr("keepdims", 1))

    chosen_of: ShapeMemo[int, Axes] = ShapeMemo(lambda rank: _axes(node, axes, rank) if axes else tuple(range(rank)))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return outputs(formula(x, chosen_of(x.ndim), keepdims))

    return kernel


def _with_input_axes(node: OpNode, formula: Formula) -> Kernel:
    """Versions with an optional ``axes`` input and ``noop_with_empty_axes``."""
    keepdims = bool(node.attr("keepdims", 1))
    noop = bool(node.attr("noop_with_empty_axes", 0))
    known = node.constants[1] if len(node.constants) > 1 else None
    constant_axes = None if known is None else _axes_value(node, known)
    chosen_of: ShapeMemo[tuple[int, tuple[int, ...]], Axes] = ShapeMemo(lambda key: _axes(node, key[1], key[0]))

    def kernel(x: np.ndarray, axes_input: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if axes_input is None:
            axes = []
        elif constant_axes is not None:
            axes = constant_axes
        else:
            axes = _axes_value(node, axes_input)
        if axes:
            chosen = chosen_of((x.ndim, tuple(axes)))
        else:
            chosen = () if noop else tuple(range(x.ndim))
        return outputs(formula(x, chosen, keepdims))

    return kernel


def _register_reductions() -> None:
    for reduction in _REDUCTIONS:

        def attribute_form(node: OpNode, formula: Formula = reduction.formula) -> Kernel:
            return _with_attribute_axes(node, formula)

        def input_form(node: OpNode, formula: Formula = reduction.formula) -> Kernel:
            return _with_input_axes(node, formula)

        attribute_form.__doc__ = (
            f"{reduction.op_type}-1..{reduction.axes_input_since - 1}, axes attribute (absent: every axis): "
            f"[3, -4] gives {reduction.example}."
        )
        input_form.__doc__ = (
            f"{reduction.op_type}-{reduction.axes_input_since}+, optional axes input and noop_with_empty_axes: "
            f"[3, -4] gives {reduction.example}."
        )
        register(reduction.op_type, 1, reduction.axes_input_since - 1, traits=reduction.traits)(attribute_form)
        register(reduction.op_type, reduction.axes_input_since, LATEST, traits=reduction.traits)(input_form)


_register_reductions()


def _arg(node: OpNode, find: Callable[..., np.ndarray]) -> Kernel:
    axis = int(node.attr("axis", 0))
    keepdims = bool(node.attr("keepdims", 1))
    last = bool(node.attr("select_last_index", 0))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        k = normalize_axis(node, axis, x.ndim)
        if x.shape[k] == 0:
            raise node.fail(f"axis {axis} of the input shape {x.shape} is empty: no index to select", "axis")
        if last:
            index = x.shape[k] - 1 - find(np.flip(x, axis=k), axis=k, keepdims=keepdims)
        else:
            index = find(x, axis=k, keepdims=keepdims)
        return outputs(index.astype(np.int64, copy=False))

    return kernel


@register("ArgMax", 1)
def argmax(node: OpNode) -> Kernel:
    """ArgMax-1/11/12/13: ``[[1, 5, 5]]`` with axis=1 gives ``[[1]]``; ``[[2]]`` with select_last_index=1 (12+)."""
    return _arg(node, np.argmax)


@register("ArgMin", 1)
def argmin(node: OpNode) -> Kernel:
    """ArgMin-1/11/12/13: ``[[4, 1, 1]]`` with axis=1 gives ``[[1]]``; ``[[2]]`` with select_last_index=1 (12+)."""
    return _arg(node, np.argmin)

"""Clip: Clip-6's ``min``/``max`` attributes, Clip-11+'s optional scalar inputs; an absent bound is
the type's limit (``type_limits``: float32 -inf clips to -3.4028235e38); min > max gives max.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.checks import float_attr, type_guard
from ovpool.engine.ops.donated import InPlace, writable_float
from ovpool.engine.ops.elementwise.unary import _CLIP
from ovpool.engine.ops.precision import _is_half


def _clip(x: np.ndarray, low: Any, high: Any) -> np.ndarray:
    """min(high, max(x, low)) with None for "no bound"; NaN stays NaN; low > high gives high; half
    precision through float32 (exact: the bounds are of x's type)."""
    if low is None and high is None:
        return x.copy()
    if _is_half(x.dtype):
        low32 = None if low is None else np.float32(low)
        high32 = None if high is None else np.float32(high)
        return np.clip(x.astype(np.float32), low32, high32).astype(x.dtype)
    if low is None or high is None:
        return np.clip(x, low, high)
    return _CLIP(x, low, high)


@functools.cache
def type_limits(dtype: np.dtype) -> tuple[Any, Any]:
    """numeric_limits<T>::lowest() and max() as read-only 0-d arrays of ``dtype`` (float32:
    -3.4028235e38 and 3.4028235e38; a 0-d array is the quicker ufunc operand: Clip reads them on
    every call), worked out once per type; ints need no clipping (None): no value lies beyond
    them."""
    if dtype.kind in "iub":
        return None, None
    if dtype.kind == "V":  # bfloat16, which np.finfo does not know: largest finite 0x7F7F, lowest 0xFF7F
        low, high = (np.array(bits, np.uint16).view(dtype).reshape(()) for bits in (0xFF7F, 0x7F7F))
    else:
        info = np.finfo(dtype)
        low, high = np.array(info.min, dtype), np.array(info.max, dtype)
    low.flags.writeable = high.flags.writeable = False
    return low, high


@register("Clip", 6, 10)
def clip_attributes(node: OpNode) -> Kernel:
    """Clip-6: ``min``/``max`` attributes; absent, they are the input type's numeric_limits (the
    schema's text; its stored default is float32's): [-2, 0.5, 9] with min=0, max=1 -> [0, 0.5, 1];
    float32 -inf without ``min`` -> -3.4028235e38."""
    low_attr = float_attr(node, "min", 0.0) if "min" in node.attrs else None
    high_attr = float_attr(node, "max", 0.0) if "max" in node.attrs else None
    check = type_guard(node)

    @functools.cache
    def bounds_of(dtype: np.dtype) -> tuple[Any, Any]:
        lowest, highest = type_limits(dtype)
        with np.errstate(over="ignore"):
            low = lowest if low_attr is None else np.array(dtype.type(low_attr))
            high = highest if high_attr is None else np.array(dtype.type(high_attr))
        return low, high

    def bounds(x: np.ndarray) -> tuple[Any, Any]:
        """The bounds in X's type (a 0-d array each), worked out once per type."""
        return bounds_of(x.dtype)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        return outputs(_clip(x, *bounds(x)))

    def tile(dst: np.ndarray, x: np.ndarray) -> None:
        _CLIP(x, *bounds(x), out=dst)

    def into(out: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(x):
            return kernel(x)
        check(x)
        tile(x, x)
        return (x,)

    code = (("clip", 0, "low" if low_attr is None else low_attr, "high" if high_attr is None else high_attr),)
    return InPlace(kernel, into, (0,), tile, code=code)


@register("Clip", 11)
def clip_inputs(node: OpNode) -> Kernel:
    """Clip-11/12/13: ``min``/``max`` are optional one-element inputs of X's type (11: floats, 12+:
    integers too); absent, the type's limits. min 2 > max 1 gives 1 everywhere (Clip-13 says so;
    it is min(max, max(x, min)) in every version): [1, 5] with min 2 -> [2, 5]."""
    check = type_guard(node)

    def bound(value: np.ndarray | None, name: str) -> Any:
        if value is None:
            return None
        if value.size != 1:
            raise node.fail(f"input '{name}' has shape {value.shape}; it must hold one value")
        return value.reshape(())

    constants = tuple(node.constants) + (None, None, None)
    # the constant bounds checked and seen as 0-d once, here (a model's Relu6 has them)
    known = [(c, None if c is None or c.size != 1 else c.reshape(())) for c in constants[1:3]]

    def bounds(x: np.ndarray, low: np.ndarray | None, high: np.ndarray | None) -> tuple[Any, Any]:
        lowest, highest = type_limits(x.dtype)
        if low is None:
            low_value = lowest
        else:
            low_value = known[0][1] if low is known[0][0] and known[0][1] is not None else bound(low, "min")
        if high is None:
            high_value = highest
        else:
            high_value = known[1][1] if high is known[1][0] and known[1][1] is not None else bound(high, "max")
        return low_value, high_value

    def kernel(x: np.ndarray, low: np.ndarray | None = None, high: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        check(x, low, high)
        return outputs(_clip(x, *bounds(x, low, high)))

    def tile(dst: np.ndarray, x: np.ndarray, low: np.ndarray | None = None, high: np.ndarray | None = None) -> None:
        _CLIP(x, *bounds(x, low, high), out=dst)

    def into(
        out: np.ndarray, x: np.ndarray, low: np.ndarray | None = None, high: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        if not writable_float(x):
            return kernel(x, low, high)
        check(x, low, high)
        tile(x, x, low, high)
        return (x,)

    return InPlace(kernel, into, (0,), tile, code=(("clip", 0, 1, 2),))

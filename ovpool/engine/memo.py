"""Memos of kernels: per-shape derivations, dtype names and 0-d constants. What a kernel derives from its inputs' dims (an output shape, an index tuple),
worked out and checked on the first run with those dims and looked up on the next ones.

A Loop body runs the same Squeeze, Slice or Expand hundreds of times on tensors of one shape; the
rule and its checks (axes in range, dims of size 1, broadcastable) hold for every tensor of that
shape, so they need to be worked out once. ``memo = ShapeMemo(derive)``; ``memo(key)`` is
``derive(key)``, computed at the first call with that key. A derive that raises stores nothing:
the next call with that key raises again. At most ``LIMIT`` keys are kept (a model whose dims
change on every run starts again from empty, no memory grows without bound).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

LIMIT = 64


class ShapeMemo(Generic[K, V]):
    """``derive`` memoized on its key: ``ShapeMemo(lambda s: s[::-1])((2, 3))`` is ``(3, 2)``,
    computed once."""

    __slots__ = ("_derive", "_values")

    def __init__(self, derive: Callable[[K], V]) -> None:
        self._derive = derive
        self._values: dict[K, V] = {}

    def __call__(self, key: K) -> V:
        try:
            return self._values[key]
        except KeyError:
            pass
        value = self._derive(key)
        if len(self._values) >= LIMIT:
            self._values.clear()
        self._values[key] = value
        return value


@functools.cache
def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name`` ("float32"), which numpy builds anew on each read (a few microseconds: more
    than a Squeeze of a small tensor)."""
    return dtype.name


@functools.lru_cache(maxsize=256)
def scalar(value: float, dtype: np.dtype) -> np.ndarray:
    """``value`` as a read-only 0-d array of ``dtype``: what a ufunc given the Python number
    converts it to (``np.add(x, 1)`` of a float32 x adds float32 1), made once. numpy 2.4 spends
    about 0.45 us a call converting a Python scalar operand: ``np.maximum(x, scalar(0, x.dtype))``
    is the bits of ``np.maximum(x, 0)`` in 0.5 us instead of 0.9 for 384 values. ``value`` is
    rounded to ``dtype`` as numpy rounds it (1/6 in float32 is 0.16666667); out of its range, an
    infinity (1e300 in float32)."""
    with np.errstate(over="ignore"):
        constant = np.asarray(value, dtype=dtype)
    constant.flags.writeable = False
    return constant

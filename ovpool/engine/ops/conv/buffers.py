"""What every Conv route shares: the input padded into a zero-bordered buffer, the bias added per
output plane (compiled, else numpy's broadcast add), numpy's ufunc buffer kept small around the
kernels (``small_ufunc_buffers``).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from ovpool.engine.native.compiled import address, bias_for

UFUNC_BUFFER = 16  # elements: numpy's ufunc buffer inside the Conv kernels (see small_ufunc_buffers)


# elements: below this, a bias add is cheaper than setting numpy's buffer size around it (8.7 against
# 1.8 us for 258 x 4 outputs; 24 against 50 us for 64 x 3,136)
SMALL_ADD = 1 << 15


def _pad_buffer(x: np.ndarray, begin: tuple[int, ...], end: tuple[int, ...], tail: int = 0) -> np.ndarray:
    """``x`` (N, C, *L) with zeros around its spatial axes, flat, followed by ``tail`` zeros (read by
    the flat tap views, never kept); ``x`` itself, flat, when there is nothing to add."""
    if not any(begin) and not any(end) and not tail:
        return np.ascontiguousarray(x).reshape(-1)
    padding = _padding(x.shape, begin, end)
    flat = np.zeros(padding.cells + tail, dtype=x.dtype)
    flat[: padding.cells].reshape(padding.shape)[padding.interior] = x
    return flat


class _Padding(NamedTuple):
    """An input shape padded: the padded shape, its cells and where the input sits in it."""

    shape: tuple[int, ...]
    cells: int
    interior: tuple[slice, ...]


@functools.lru_cache(maxsize=256)
def _padding(shape: tuple[int, ...], begin: tuple[int, ...], end: tuple[int, ...]) -> _Padding:
    """(N, C, *L) with ``begin`` and ``end`` added to L: (1, 2, 5) with (1,), (2,) is (1, 2, 8), 16
    cells, the input at [:, :, 1:6]; worked out once per shape and pads (each Conv of a run asks
    two or three times)."""
    padded = shape[:2] + tuple(n + b + e for n, b, e in zip(shape[2:], begin, end))
    interior = (slice(None), slice(None)) + tuple(slice(b, b + n) for b, n in zip(begin, shape[2:]))
    return _Padding(padded, math.prod(padded), interior)


def _padded_shape(shape: tuple[int, ...], begin: tuple[int, ...], end: tuple[int, ...]) -> tuple[int, ...]:
    """The padded shape of ``_padding``: (1, 2, 5) with (1,), (2,) is (1, 2, 8)."""
    return _padding(shape, begin, end).shape


def _padded(x: np.ndarray, begin: tuple[int, ...], end: tuple[int, ...]) -> np.ndarray:
    return _pad_buffer(x, begin, end).reshape(_padded_shape(x.shape, begin, end))


def _add_bias(y: np.ndarray, bias: np.ndarray) -> None:
    """``y`` (N, g, M/g, P) plus ``bias`` (M values) over each plane of P, in place: compiled
    (``compiled.bias_for``, one pass: 200 planes of 192 in 4.5 against numpy's 11.5 us), else
    numpy's broadcast add, with its ufunc buffer small where that pays (SMALL_ADD)."""
    add = bias_for(y.dtype)
    if add is not None and y.flags.c_contiguous and bias.flags.c_contiguous and bias.dtype == y.dtype:
        add(address(y), address(bias), math.prod(y.shape[:-1]), bias.size, y.shape[-1])
    elif y.size < SMALL_ADD:
        y += bias.reshape(y.shape[1:-1] + (1,))
    else:
        with small_ufunc_buffers():
            y += bias.reshape(y.shape[1:-1] + (1,))


@contextlib.contextmanager
def small_ufunc_buffers() -> Iterator[None]:
    """numpy's ufunc buffer at UFUNC_BUFFER elements inside the block, restored after (also on an
    error). numpy 2.4 copies operands through its buffer (8192 elements by default) when their
    innermost run is shorter than it and the axes do not merge, even when nothing needs converting:
    a multiply of 48 rows of 1,008 floats by one weight per row took 0.43 ns per element, 0.13 ns
    with a buffer of 16 (no copy). The kernels' operands share one type and never need the buffer;
    an operation that converts types would be slower with it (a float16 by float32 multiply: 2.4x)."""
    old = np.setbufsize(UFUNC_BUFFER)
    try:
        yield
    finally:
        np.setbufsize(old)

"""ovpool's compiled depthwise tap loop (``_taps.c``), called through ctypes.

The extension is built with the package where a C compiler is found (``setup.py``; it is
optional). ``taps_for(dtype)`` gives its loop for float32 or float64, or None where it was not
built, for another dtype, or with ``OVPOOL_COMPILED=0``: ``conv.py`` then runs the same loop in
numpy, with the same results bit for bit. ``taps(buffer, plane, first, count, groups, mg,
offsets, taps, weights, bias, scratch, cells, out, runs)`` takes addresses for the arrays
(``bias`` 0 for none): ``count`` planes of ``plane`` elements from ``buffer``, the tile's first
plane being plane ``first`` of the run (its group ``first % groups``), weights (groups, mg,
taps), bias (groups, mg), a scratch of ``cells`` values, the output (count, mg, *out) and
``runs``, the five int64 (outer, outer pitch, inner, inner pitch, width) that place the kept
positions of the cells in the output. A 3x3 kernel over one 4x4 plane padded to 6x6 (stride 1):
offsets 0, 1, 2, 6, 7, 8, 12, 13, 14, 4 x 6 = 24 cells, runs (4, 6, 1, 0, 4): columns 4 and 5 of
each row are dropped.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np

from ovpool.runtime.ops.blas import compiled_allowed

Taps = Callable[[int, int, int, int, int, int, int, int, int, int, int, int, int, int], None]

_NAMES = {np.dtype(np.float32): "ovpool_taps_f32", np.dtype(np.float64): "ovpool_taps_f64"}


@functools.cache
def taps_for(dtype: np.dtype) -> Taps | None:
    """The compiled loop for ``dtype``, or None (not built, another dtype, ``OVPOOL_COMPILED=0``)."""
    name = _NAMES.get(np.dtype(dtype))
    if name is None or not compiled_allowed():
        return None
    try:
        from ovpool.runtime.ops import _taps  # type: ignore[attr-defined]
    except ImportError:
        return None
    function = getattr(ctypes.CDLL(_taps.__file__), name)
    integer, pointer = ctypes.c_int64, ctypes.c_void_p
    function.argtypes = [pointer] + [integer] * 5 + [pointer, integer, pointer, pointer, pointer, integer, pointer, pointer]
    function.restype = None
    loop: Taps = function
    return loop

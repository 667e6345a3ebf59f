"""The type a formula is computed in: float32 for float16 and bfloat16 (``wide``), rounded once to
the input's type at the end (``narrow``), or at each step where the schema's arithmetic is in the
narrow type (``rounding``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def wide(x: np.ndarray) -> np.ndarray:
    """``x`` in the type formulas are computed in: float32 for float16 and bfloat16 (numpy rounds
    each half-precision step), else ``x`` itself, not copied."""
    return x.astype(np.float32) if _is_half(x.dtype) else x


def narrow(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``y`` in ``dtype``, without a copy when it already is."""
    return y if y.dtype == dtype else y.astype(dtype)


def rounding(dtype: np.dtype, work: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
    """One step of arithmetic in ``dtype`` carried out in the wider ``work`` type: a ``work`` value
    rounded to ``dtype`` and widened back (float16: 0.1 becomes 0.0999755859375); the identity when
    ``dtype`` is ``work`` or not narrower (float64 steps in float32 work are not rounded)."""
    if dtype == work or not _is_half(dtype) and dtype.itemsize >= work.itemsize:
        return lambda x: x
    return lambda x: x.astype(dtype).astype(work)


def _is_half(dtype: np.dtype) -> bool:
    return dtype.itemsize == 2 and dtype.kind in "fV"

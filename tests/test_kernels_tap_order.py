"""The numpy pooling kernels (ovpool/kernels.py) combine taps in tap order, bit for bit.

Max over signed zeros and NaN is where the order shows: ``np.maximum(-0.0, 0.0)`` is 0.0 and
``np.maximum(0.0, -0.0)`` is -0.0. The oracle folds each window's taps in order (kernel tap 0
first), from -inf, with the same ``np.maximum`` on scalars: a direct loop over outputs and taps,
padding skipped. Every 1-D input of length 5 over {-0.0, 0.0, -1.0, NaN} is tried, for windows
whose first tap misses the padded first output (k3 s2 p1) and for ones whose taps all cover it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ovpool import kernels
from ovpool.spec import PoolKind, PoolSpec

VALUES = (-0.0, 0.0, -1.0, np.nan)


def max_in_tap_order(x: np.ndarray, k: int, s: int, pad: int) -> np.ndarray:
    """``y[o] = max(... max(max(-inf, x[o*s - pad]), x[o*s - pad + 1]) ...)``, taps in the input."""
    out = (len(x) + 2 * pad - k) // s + 1
    y = np.empty(out, dtype=x.dtype)
    for o in range(out):
        acc = np.float32(-np.inf)
        for t in range(k):
            i = o * s - pad + t
            if 0 <= i < len(x):
                acc = np.maximum(acc, x[i])
        y[o] = acc
    return y


@pytest.mark.parametrize(("k", "s", "pad"), [(3, 2, 1), (2, 2, 0), (3, 1, 1), (3, 1, 0), (5, 1, 2), (2, 1, 1)])
def test_max_pool_keeps_tap_order_bits(k: int, s: int, pad: int) -> None:
    spec = PoolSpec(PoolKind.MAX, kernel=(k,), strides=(s,), pads_begin=(pad,), pads_end=(pad,))
    for values in itertools.product(VALUES, repeat=5):
        x = np.array(values, dtype=np.float32)
        y = kernels.pool(x.reshape(1, 1, -1), spec)
        assert isinstance(y, np.ndarray)
        expected = max_in_tap_order(x, k, s, pad)
        np.testing.assert_array_equal(y[0, 0], expected)
        np.testing.assert_array_equal(np.signbit(y[0, 0]), np.signbit(expected))


@pytest.mark.parametrize("room", [1.5, 100.0])
@pytest.mark.parametrize("k", [4, 7, 9, 13])
def test_wide_stride_one_max_pools_keep_tap_order_bits(monkeypatch: pytest.MonkeyPatch, k: int, room: float) -> None:
    """Windows of 4 to 13 taps (SPP's 9 and 13) in the stride-1 form: 40 values drawn from
    {-0.0, 0.0, -1.0, NaN}, pads k//2 and 0. Within the pooling rule's working memory the taps go
    in order; with room for 100 inputs they combine by doubling."""
    monkeypatch.setattr(kernels, "SCRATCH_INPUTS", room)
    rng = np.random.default_rng(k)
    for pad in (k // 2, 0):
        spec = PoolSpec(PoolKind.MAX, kernel=(k,), strides=(1,), pads_begin=(pad,), pads_end=(pad,))
        for _ in range(50):
            x = rng.choice(np.array(VALUES, dtype=np.float32), 40)
            y = kernels.pool(x.reshape(1, 1, -1), spec)
            assert isinstance(y, np.ndarray)
            expected = max_in_tap_order(x, k, 1, pad)
            np.testing.assert_array_equal(y[0, 0], expected)
            np.testing.assert_array_equal(np.signbit(y[0, 0]), np.signbit(expected))

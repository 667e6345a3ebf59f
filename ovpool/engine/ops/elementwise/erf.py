"""Erf and Gelu. numpy has no erf: :func:`erf` and Gelu use polynomial fits made once from
``math.erf``/``math.erfc`` (``erf(x) = x*P(x^2)`` below 0.9; above, ``erfc(a) =
e^(-a^2)*R(1/(1 + p*a))``), accurate to a few units in the last place of float32 and float64.
Erf: 0.5 -> 0.5205; integer types (Erf-9) truncate: erf(3) = 0.99998 -> 0, erf(6) -> 1. Gelu
0.5*x*(1 + erf(x/sqrt 2)): 1 -> 0.8413; ``approximate="tanh"`` 1 -> 0.8412.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.checks import str_attr, type_guard
from ovpool.engine.ops.elementwise.unary import _BITS, _elementwise
from ovpool.engine.ops.precision import _is_half


def _erfcx(a: float) -> float:
    """e^(a^2)*erfc(a) for a >= 0, to a few ulp: a^2 squared exactly below 4, a continued fraction above."""
    if a < 4:
        square = Fraction(a) ** 2
        high = float(square)
        return math.erfc(a) * math.exp(high) * (1 + float(square - Fraction(high)))
    denominator = a
    for k in range(40, 0, -1):
        denominator = a + (k / 2) / denominator
    return 1 / (math.sqrt(math.pi) * denominator)


class _Fit:
    """A polynomial fitted at import time to ``function`` on ``[low, high]`` of its variable, in the
    power basis of ``u = (w - mid)/half`` (Chebyshev nodes, least squares)."""

    def __init__(self, function: Callable[[float], float], low: float, high: float, degree: int) -> None:
        self.mid, self.half = (low + high) / 2, (high - low) / 2
        count = 20 * degree + 8
        nodes = np.cos(np.pi * (np.arange(count) + 0.5) / count)
        values = [function(self.mid + self.half * u) for u in nodes]
        chebyshev = np.polynomial.chebyshev.chebfit(nodes, values, degree)
        self.coefficients = tuple(float(c) for c in np.polynomial.chebyshev.cheb2poly(chebyshev)[::-1])

    def horner(self, u: np.ndarray, out: np.ndarray) -> None:
        """The polynomial at ``u`` (already scaled) into ``out``, in ``u``'s type."""
        first, *rest = self.coefficients
        np.multiply(u, first, out=out)
        for c in rest[:-1]:
            out += c
            out *= u
        out += rest[-1]


class _ErfcTail:
    """erfc(a) = e^(-a^2)*R(t), t = 1/(1 + p*a), R fitted for a in [low, high]."""

    P = 0.35

    def __init__(self, low: float, high: float, degree: int) -> None:
        self.low, self.high = low, high
        self.fit = _Fit(lambda t: _erfcx((1 / t - 1) / self.P), 1 / (1 + self.P * high), 1 / (1 + self.P * low), degree)

    def erfcx(self, a: np.ndarray, out: np.ndarray, u: np.ndarray) -> None:
        """e^(a^2)*erfc(a) into ``out`` (``u`` is scratch): u = 1/(half*(1 + p*a)) - mid/half."""
        half = self.fit.half
        np.multiply(a, half * self.P, out=u)
        u += half
        np.reciprocal(u, out=u)
        u -= self.fit.mid / half
        self.fit.horner(u, out)


def _select_into(mask: np.ndarray, a: np.ndarray, out: np.ndarray, bits: np.ndarray) -> None:
    """``out`` becomes ``a`` where ``mask`` (``a`` and ``bits``, an integer array of the item size,
    are overwritten), without a branch per element."""
    np.copyto(bits, mask)
    np.negative(bits, out=bits)
    chosen = a.view(bits.dtype)
    np.bitwise_and(chosen, bits, out=chosen)
    np.invert(bits, out=bits)
    kept = out.view(bits.dtype)
    np.bitwise_and(kept, bits, out=kept)
    np.bitwise_or(kept, chosen, out=kept)


class _ErfFits:
    """The fits one float type needs: ``small`` erf(x)/x in x^2 for |x| < 0.9, ``tails`` erfc pieces
    above 0.9 for Erf, ``wide`` erfc pieces from 0 (Gelu), ``saturate`` where erf rounds to 1."""

    SPLIT = 0.9

    def __init__(
        self,
        small_degree: int,
        tails: tuple[tuple[float, float, int], ...],
        wide: tuple[tuple[float, float, int], ...],
        saturate: float,
    ) -> None:
        self.small = _Fit(
            lambda s: math.erf(math.sqrt(s)) / math.sqrt(s) if s > 0 else 2 / math.sqrt(math.pi),
            0.0,
            self.SPLIT**2,
            small_degree,
        )
        self.tails = tuple(_ErfcTail(*piece) for piece in tails)
        self.wide = tuple(_ErfcTail(*piece) for piece in wide)
        self.saturate = saturate
        self.underflow = wide[-1][1]

    @staticmethod
    def erfcx(a: np.ndarray, pieces: tuple[_ErfcTail, ...], out: np.ndarray, scratch: list[np.ndarray], mask: np.ndarray) -> None:
        """e^(a^2)*erfc(a) for a >= 0 into ``out``, from the piece whose range holds a (the first
        below its range); two scratch arrays."""
        u, spare = scratch
        pieces[0].erfcx(a, out, u)
        for piece in pieces[1:]:
            piece.erfcx(a, spare, u)
            np.greater_equal(a, piece.low, out=mask)
            _select_into(mask, spare, out, u.view(_BITS[u.itemsize]))


@functools.cache
def _erf_fits(dtype: np.dtype) -> _ErfFits:
    """float32: degree 5 below 0.9 and 7 on [0.9, 4] (erf is 1.0 in float32 from 3.92), Gelu's erfc
    one degree-10 piece on [0, 10.5] (e^(-a^2) is 0 in float32 from 10.2). float64: degree 11; erfc
    pieces of degree 14 on [0.9, 4] and [4, 27.3] (e^(-a^2) is 0 in float64 from 27.3)."""
    if dtype == np.float32:
        return _ErfFits(5, ((0.9, 4.0, 7),), ((0.0, 10.5, 10),), 4.0)
    return _ErfFits(11, ((0.9, 4.0, 14), (4.0, 27.3, 14)), ((0.0, 0.9, 12), (0.9, 4.0, 14), (4.0, 27.3, 14)), 6.0)


def _exp_neg_square(v: np.ndarray, scale: float, out: np.ndarray, scratch: list[np.ndarray]) -> None:
    """e^(-scale*v^2) into ``out`` for ``scale`` a power of two and |v| < 1e300. float64 splits v as
    z + (v - z) with z of 24 bits (Veltkamp), so scale*z^2 is exact and the exponent loses nothing
    (erfc(20) keeps its last digits); float32 squares directly (a relative error of 2^-24*v^2 in the
    result: 6e-6 at v = 10)."""
    np.multiply(v, v, out=out)
    if v.dtype != np.float64:
        out *= -scale
        np.exp(out, out=out)
        return
    z, low = scratch
    np.multiply(v, 2.0**29 + 1, out=z)
    np.subtract(z, v, out=low)
    np.subtract(z, low, out=z)
    np.multiply(z, z, out=out)
    out *= -scale
    np.exp(out, out=out)
    np.subtract(v, z, out=low)
    z += v
    low *= z
    low *= -scale
    np.exp(low, out=low)
    out *= low


_CHUNK = 1 << 16


def _chunked(function: Callable[[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray], None], x: np.ndarray) -> np.ndarray:
    """``function(x_part, out_part, scratch, mask)`` over runs of 65536 elements of float ``x``, with
    four scratch arrays and a bool one reused from run to run: a few long-lived buffers instead of a
    fresh array per step (fresh pages are what a dozen numpy steps over 1e6 values spend most on)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    size = min(flat.size, _CHUNK)
    scratch = [np.empty(size, flat.dtype) for _ in range(4)]
    mask = np.empty(size, bool)
    with np.errstate(all="ignore"):
        for start in range(0, flat.size, _CHUNK):
            n = min(_CHUNK, flat.size - start)
            function(flat[start : start + n], out[start : start + n], [b[:n] for b in scratch], mask[:n])
    return out.reshape(x.shape)


def _erf_into(x: np.ndarray, out: np.ndarray, scratch: list[np.ndarray], mask: np.ndarray) -> None:
    fits = _erf_fits(x.dtype)
    a, u, y, spare = scratch
    np.abs(x, out=a)
    np.minimum(a, fits.saturate, out=a)
    _exp_neg_square(a, 1.0, out, [u, y])
    fits.erfcx(a, fits.tails, y, [u, spare], mask)
    out *= y
    np.subtract(1, out, out=out)
    np.copysign(out, x, out=out)
    np.multiply(x, x, out=u)
    np.minimum(u, fits.SPLIT**2, out=u)
    u -= fits.small.mid
    u *= 1 / fits.small.half
    fits.small.horner(u, y)
    y *= x
    np.less(a, fits.SPLIT, out=mask)
    _select_into(mask, y, out, u.view(_BITS[u.itemsize]))


def erf(x: np.ndarray) -> np.ndarray:
    """erf(x) for float32 or float64 ``x``: 0.5 -> 0.5204999, -1 -> -0.8427008, 4 -> 1.0; x*P(x^2)
    below 0.9, sign(x)*(1 - erfc(|x|)) above."""
    return _chunked(_erf_into, x)


def _gelu_into(x: np.ndarray, out: np.ndarray, scratch: list[np.ndarray], mask: np.ndarray) -> None:
    fits = _erf_fits(x.dtype)
    a, u, y, spare = scratch
    np.abs(x, out=a)
    np.minimum(a, fits.underflow * math.sqrt(2), out=a)
    _exp_neg_square(a, 0.5, out, [u, y])
    a *= 1 / math.sqrt(2)
    fits.erfcx(a, fits.wide, y, [u, spare], mask)
    out *= y
    out *= 0.5
    np.greater_equal(x, 0, out=mask)
    np.subtract(mask, out, out=out)
    np.abs(out, out=out)
    out *= x


def gelu_exact(x: np.ndarray) -> np.ndarray:
    """0.5*x*(1 + erf(x/sqrt 2)) = x*Phi(x), Phi(x) = |[x >= 0] - h| with h = erfc(|x|/sqrt 2)/2
    (1 - h above 0, h below): 1 -> 0.8413447, -3 -> -0.0040497, -10 -> -7.6e-23 (not rounded to 0),
    inf -> inf, -inf -> NaN (as -inf*0)."""
    return _chunked(_gelu_into, x)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))): 1 -> 0.8411920."""
    with np.errstate(all="ignore"):
        y = x * x
        y *= 0.044715
        y += 1
        y *= x
        y *= math.sqrt(2 / math.pi)
        np.tanh(y, out=y)
        y += 1
        y *= x
        y *= 0.5
    return y


@register("Erf", 9)
def erf_op(node: OpNode) -> Kernel:
    """Erf-9/13: erf(0.5) = 0.5205, erf(-1) = -0.8427. Erf-9 allows integer types: computed in
    float64 and truncated, so erf(3) = 0.99998 -> 0 and only |x| >= 6 gives +-1."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        if x.dtype == np.float32 or x.dtype == np.float64:
            return outputs(erf(x))
        if _is_half(x.dtype):
            return outputs(erf(x.astype(np.float32)).astype(x.dtype))
        return outputs(erf(x.astype(np.float64)).astype(x.dtype))

    return kernel


@register("Gelu", 20)
def gelu(node: OpNode) -> Kernel:
    """Gelu-20: ``approximate="none"`` 0.5*x*(1 + erf(x/sqrt 2)): 1 -> 0.8413; ``"tanh"``
    0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))): 1 -> 0.8412."""
    approximate = str_attr(node, "approximate", "none", ("none", "tanh"))
    return _elementwise(node, gelu_exact if approximate == "none" else gelu_tanh)

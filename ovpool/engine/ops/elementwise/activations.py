"""The activations: Relu, LeakyRelu, PRelu, Elu, Selu, Celu, ThresholdedRelu, Shrink, Sigmoid,
HardSigmoid, HardSwish, Swish, SwiGLU, Softplus, Softsign, Mish, and IsInf (the rules, with a
worked number each, are in ``ovpool.engine.ops.elementwise``).
"""

from __future__ import annotations

import numpy as np

from ovpool.engine.memo import scalar
from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.checks import float_attr, int_attr, type_guard
from ovpool.engine.ops.elementwise.unary import _CLIP, _elementwise, _negative_part, _positive_part, keep
from ovpool.engine.ops.precision import _is_half, narrow, wide


@register("Relu", 6)
def relu(node: OpNode) -> Kernel:
    """Relu-6/13/14: max(x, 0); -2.5 -> 0, NaN stays NaN; Relu-14 adds int8..int64 (-3 -> 0)."""

    def tile(dst: np.ndarray, x: np.ndarray) -> None:
        _CLIP(x, scalar(0, x.dtype), scalar(np.inf, x.dtype), out=dst)

    return _elementwise(node, _positive_part, tile, (("clip", 0, 0.0, np.inf),))


@register("LeakyRelu", 6)
def leaky_relu(node: OpNode) -> Kernel:
    """LeakyRelu-6/16: x for x >= 0, alpha*x below (alpha 0.01): -2 -> -0.02. For alpha <= 1 that is
    max(x, alpha*x), for alpha > 1 min(x, alpha*x), one pass each."""
    alpha = float_attr(node, "alpha", 0.01)
    pick = np.maximum if alpha <= 1 else np.minimum

    def formula(x: np.ndarray) -> np.ndarray:
        y = np.multiply(x, scalar(alpha, x.dtype))
        return pick(x, y, out=y)

    return _elementwise(node, formula)


@register("PRelu", 7)
def prelu(node: OpNode) -> Kernel:
    """PRelu-7/9/16: slope*x for x < 0, x otherwise, as max(x, 0) + slope*min(x, 0); ``slope``
    broadcasts to X one way (slope (3, 1, 1) on X (1, 3, 4, 4); slope (2, 1) on X (2,) is the node's
    error). PRelu-9 adds int32/int64/uint: x -3 with slope 2 gives -6."""
    check = type_guard(node)

    def kernel(x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x, slope)
        try:
            shape = np.broadcast_shapes(x.shape, slope.shape)
        except ValueError:
            shape = None
        if shape != x.shape:
            raise node.fail(f"slope of shape {slope.shape} does not broadcast to X of shape {x.shape}")
        xw, sw = wide(x).reshape(x.shape or (1,)), wide(slope)
        with np.errstate(all="ignore"):
            y = _negative_part(xw)
            y *= sw
            y += _positive_part(xw)
        return outputs(narrow(y, x.dtype).reshape(x.shape))

    return kernel


def _exp_linear(x: np.ndarray, alpha: float) -> np.ndarray:
    """x for x > 0, alpha*(e^x - 1) otherwise, as max(x, 0) + alpha*expm1(min(x, 0)) (NaN stays NaN)."""
    y = _negative_part(x)
    np.expm1(y, out=y)
    y *= alpha
    y += _positive_part(x)
    return y


@register("Elu", 6)
def elu(node: OpNode) -> Kernel:
    """Elu-6/22: x for x >= 0, alpha*(e^x - 1) below (alpha 1.0): -1 -> -0.6321, 2 -> 2."""
    alpha = float_attr(node, "alpha", 1.0)
    return _elementwise(node, lambda x: _exp_linear(x, alpha))


@register("Selu", 6)
def selu(node: OpNode) -> Kernel:
    """Selu-6/22: gamma*x for x > 0, gamma*alpha*(e^x - 1) otherwise (alpha 1.67326319, gamma
    1.05070102, the float32 values of the schema): 1 -> 1.0507, -1 -> -1.1113."""
    alpha = float_attr(node, "alpha", 1.67326319217681884765625)
    gamma = float_attr(node, "gamma", 1.05070102214813232421875)

    def formula(x: np.ndarray) -> np.ndarray:
        y = _exp_linear(x, alpha)
        y *= gamma
        return y

    return _elementwise(node, formula)


@register("Celu", 12)
def celu(node: OpNode) -> Kernel:
    """Celu-12/28: max(0, x) + min(0, alpha*(e^(x/alpha) - 1)) (alpha 1.0): -1 -> -0.6321; alpha 2:
    -2 -> -1.2642. alpha 0 divides by zero: the node's error. Celu-28 adds types, same rule."""
    alpha = float_attr(node, "alpha", 1.0)
    if alpha == 0:
        raise node.fail("0 divides x in e^(x/alpha)", "alpha")

    def formula(x: np.ndarray) -> np.ndarray:
        y = x / alpha
        np.expm1(y, out=y)
        y *= alpha
        np.clip(y, -np.inf, 0, out=y)
        y += _positive_part(x)
        return y

    return _elementwise(node, formula)


@register("ThresholdedRelu", 10)
def thresholded_relu(node: OpNode) -> Kernel:
    """ThresholdedRelu-10/22: x if x > alpha else 0 (alpha 1.0): 1 -> 0, 1.5 -> 1.5, NaN -> 0."""
    alpha = float_attr(node, "alpha", 1.0)
    return _elementwise(node, lambda x: keep(x, x > alpha))


@register("Shrink", 9)
def shrink(node: OpNode) -> Kernel:
    """Shrink-9: x - bias for x > lambd, x + bias for x < -lambd, else 0 (lambd 0.5, bias 0.0):
    lambd 1.5, bias 1.5: 5 -> 3.5, -1 -> 0. Integer types compute in float32, as onnxruntime does
    with the float32 attributes, and truncate: 5 -> 3; bias 1e-9 leaves 1 at 1 (1 - 1e-9 is 1.0
    in float32)."""
    lambd = float_attr(node, "lambd", 0.5)
    bias = float_attr(node, "bias", 0.0)
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        xw = (wide(x) if x.dtype.kind in "fV" else x.astype(np.float32)).reshape(x.shape or (1,))
        with np.errstate(all="ignore"):
            y = keep(xw - bias, xw > lambd)
            y += keep(xw + bias, xw < -lambd)
        return outputs(narrow(y, x.dtype).reshape(x.shape))

    return kernel


@register("Sigmoid", 6)
def sigmoid(node: OpNode) -> Kernel:
    """Sigmoid-6/13: 1/(1 + e^-x): 0 -> 0.5, -20 -> 2.06e-9 (not rounded to 0), 100 -> 1."""

    def formula(x: np.ndarray) -> np.ndarray:
        y = np.negative(x)
        _sigmoid_of_negated(y)
        return y

    def tile(dst: np.ndarray, x: np.ndarray) -> None:
        np.negative(x, out=dst)
        _sigmoid_of_negated(dst)

    return _elementwise(node, formula, tile)


def _sigmoid_of_negated(y: np.ndarray) -> None:
    """``y`` holding -x becomes 1/(1 + e^-x), the 1 a 0-d array of y's type (float32 or float64;
    numpy converts a Python 1 at each call: 0.5 us of a (1, 128, 3) Sigmoid's 1.9; same bits)."""
    one = _ONES[y.dtype]  # the kernels hand float32 or float64 (narrow floats are computed in float32)
    np.exp(y, out=y)
    np.add(y, one, out=y)
    np.divide(one, y, out=y)


_ONES: dict[np.dtype, np.ndarray] = {np.dtype(t): np.ones((), t) for t in (np.float32, np.float64)}


@register("HardSigmoid", 6)
def hard_sigmoid(node: OpNode) -> Kernel:
    """HardSigmoid-6/22: max(0, min(1, alpha*x + beta)) (alpha 0.2, beta 0.5): 1 -> 0.7, 3 -> 1."""
    alpha = float_attr(node, "alpha", 0.2)
    beta = float_attr(node, "beta", 0.5)

    def shift_and_clip(y: np.ndarray) -> np.ndarray:
        np.add(y, scalar(beta, y.dtype), out=y)
        return _CLIP(y, scalar(0, y.dtype), scalar(1, y.dtype), out=y)

    def tile(dst: np.ndarray, x: np.ndarray) -> None:
        shift_and_clip(np.multiply(x, scalar(alpha, x.dtype), out=dst))

    code = (("mul", 0, alpha), ("add", "prev", beta), ("clip", "prev", 0.0, 1.0))
    return _elementwise(node, lambda x: shift_and_clip(np.multiply(x, scalar(alpha, x.dtype))), tile, code)


# HardSwish's alpha: the schema's 1/6, a float attribute of its HardSigmoid, so float32's
# 0.16666667 (float64 inputs multiply by that value widened, as a float attribute is).
HARD_SWISH_ALPHA = float(np.float32(1 / 6))


@register("HardSwish", 14)
def hard_swish(node: OpNode) -> Kernel:
    """HardSwish-14/22 as its schema writes it, x * HardSigmoid(x) with alpha = 1/6 and beta = 0.5:
    x*max(0, min(1, alpha*x + 0.5)): 1 -> 0.6667, -4 -> 0, 4 -> 4 (a multiplication by alpha, not
    a division by 6, whose rounding differs by a unit in the last place now and then)."""

    def formula(x: np.ndarray) -> np.ndarray:
        if _chunked_hard_swish(x, x):
            y = np.empty_like(x)
            _hard_swish_into(y, x)
            return y
        y = x * HARD_SWISH_ALPHA
        _hard_swish_tail(y, x, y)
        return y

    code = (("mul", 0, HARD_SWISH_ALPHA), ("add", "prev", 0.5), ("clip", "prev", 0.0, 1.0), ("mul", "prev", 0))
    return _elementwise(node, formula, _hard_swish_into, code)


_HARD_SWISH_CHUNK = 1 << 16


def _chunked_hard_swish(dst: np.ndarray, x: np.ndarray) -> bool:
    """From four chunks of 65536 elements on, contiguous: a chunk at a time (smaller tensors stay
    in the cache through four whole passes anyway)."""
    return x.size >= 4 * _HARD_SWISH_CHUNK and x.flags.c_contiguous and dst.flags.c_contiguous


def _hard_swish_into(dst: np.ndarray, x: np.ndarray) -> None:
    """``dst`` = (clip(alpha*x + 0.5, 0, 1)) * x, ``dst`` may be ``x``; a large tensor a chunk at a
    time through one scratch buffer, so the four passes stay in the cache: (1, 96, 200, 152)
    float32 in place in a third of the time of four whole-tensor passes and a new array."""
    if not _chunked_hard_swish(dst, x):
        _hard_swish_tail(x * HARD_SWISH_ALPHA, x, dst)
        return
    flat, out = x.reshape(-1), dst.reshape(-1)
    scratch = np.empty(_HARD_SWISH_CHUNK, x.dtype)
    for start in range(0, flat.size, _HARD_SWISH_CHUNK):
        part = flat[start : start + _HARD_SWISH_CHUNK]
        y = np.multiply(part, HARD_SWISH_ALPHA, out=scratch[: part.size])
        _hard_swish_tail(y, part, out[start : start + _HARD_SWISH_CHUNK])


def _hard_swish_tail(y: np.ndarray, x: np.ndarray, dst: np.ndarray) -> None:
    """``y`` holding alpha*x becomes clip(alpha*x + 0.5, 0, 1), then ``dst`` = y * x."""
    y += 0.5
    _CLIP(y, 0, 1, out=y)
    np.multiply(y, x, out=dst)


def _swish_alpha(node: OpNode, dtype: np.dtype) -> np.ndarray:
    """Swish's ``alpha`` as its function body has it, CastLike X: 0.1 is 0.0999755859375 for a
    float16 X; widened to float32 for the narrow types the kernels compute in float32."""
    alpha = np.asarray(float_attr(node, "alpha", 1.0), dtype=dtype)
    return alpha.astype(np.float32) if _is_half(dtype) else alpha


def _swish(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``x * sigmoid(alpha * x)`` of a float32 or float64 ``x`` (0-d too)."""
    vector = x.reshape(1) if x.ndim == 0 else x
    y = np.multiply(vector, alpha.astype(x.dtype))
    np.negative(y, out=y)
    _sigmoid_of_negated(y)
    y *= vector
    return y.reshape(x.shape)


@register("Swish", 24)
def swish(node: OpNode) -> Kernel:
    """Swish-24: ``x * sigmoid(alpha * x)`` (alpha 1.0 by default): 1 -> 0.7311, -2 -> -0.2384;
    float16 and bfloat16 computed in float32 and rounded once."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        alpha = _swish_alpha(node, x.dtype)
        with np.errstate(over="ignore"):
            return outputs(narrow(_swish(wide(x), alpha), x.dtype))

    return kernel


@register("SwiGLU", 28)
def swiglu(node: OpNode) -> Kernel:
    """SwiGLU-28: ``Swish_alpha(A) * B`` for A and B of one shape (no broadcasting): A = 1, B = 2
    gives 1.4621; the Swish is rounded to the type before the product, as the function body's two
    nodes are."""
    check = type_guard(node)

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        check(a, b)
        if a.shape != b.shape:
            raise node.fail(f"A {a.shape} and B {b.shape} differ in shape: SwiGLU does not broadcast")
        alpha = _swish_alpha(node, a.dtype)
        with np.errstate(over="ignore"):
            gate = narrow(_swish(wide(a), alpha), a.dtype)
        return outputs(narrow(wide(gate) * wide(b), a.dtype))

    return kernel


def _softplus(x: np.ndarray) -> np.ndarray:
    """ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|), without overflow."""
    y = np.abs(x)
    np.negative(y, out=y)
    np.exp(y, out=y)
    np.log1p(y, out=y)
    y += _positive_part(x)
    return y


@register("Softplus", 1)
def softplus(node: OpNode) -> Kernel:
    """Softplus-1/22: ln(1 + e^x), without overflow: 0 -> 0.6931, 100 -> 100, -100 -> 3.7e-44."""
    return _elementwise(node, _softplus)


@register("Softsign", 1)
def softsign(node: OpNode) -> Kernel:
    """Softsign-1/22: x/(1 + |x|): 1 -> 0.5, -3 -> -0.75."""

    def formula(x: np.ndarray) -> np.ndarray:
        y = np.abs(x)
        y += 1
        return np.divide(x, y, out=y)

    return _elementwise(node, formula)


@register("Mish", 18)
def mish(node: OpNode) -> Kernel:
    """Mish-18/22: x*tanh(ln(1 + e^x)): 1 -> 0.8651, -1 -> -0.3034."""

    def formula(x: np.ndarray) -> np.ndarray:
        y = _softplus(x)
        np.tanh(y, out=y)
        y *= x
        return y

    return _elementwise(node, formula)


@register("IsInf", 10)
def is_inf(node: OpNode) -> Kernel:
    """IsInf-10/20: true for +inf when ``detect_positive`` (1), for -inf when ``detect_negative`` (1):
    [-inf, 0, inf] -> [True, False, True]; detect_negative=0 -> [False, False, True]."""
    positive = int_attr(node, "detect_positive", 1) != 0
    negative = int_attr(node, "detect_negative", 1) != 0
    if positive and negative:
        return _elementwise(node, np.isinf)
    if positive or negative:
        infinity = np.inf if positive else -np.inf
        return _elementwise(node, lambda x: x == infinity)
    return _elementwise(node, lambda x: np.zeros(x.shape, dtype=bool))

"""Unary math and activations, one kernel per ONNX version range, on numpy.

Every op keeps its input's type (float16 in, float16 out; formulas of several steps are computed in
float32 for float16 and bfloat16 and rounded once at the end) and refuses a type its version does
not allow (Relu-6 has no int32, Relu-14 has). Element-wise rules, with a worked number each:

- Relu max(x, 0): -2 -> 0; LeakyRelu x or alpha*x (alpha 0.01): -2 -> -0.02; PRelu the same with a
  ``slope`` tensor that broadcasts to X one way (slope (3, 1, 1) on X (1, 3, 8, 8)).
- Elu x or alpha*(e^x - 1): -1 -> -0.632; Selu gamma*(x or alpha*(e^x - 1)): 1 -> 1.0507;
  Celu max(0, x) + min(0, alpha*(e^(x/alpha) - 1)): -1 -> -0.632 (alpha 1).
- Sigmoid 1/(1 + e^-x): 0 -> 0.5; HardSigmoid clip(alpha*x + beta, 0, 1): 1 -> 0.7;
  HardSwish x*clip(alpha*x + 1/2, 0, 1), alpha the float 1/6: 1 -> 0.667; Softplus ln(1 + e^x):
  0 -> 0.693; Softsign x/(1 + |x|): 1 -> 0.5; Mish x*tanh(softplus(x)): 1 -> 0.865;
  ThresholdedRelu x if x > alpha else 0: 1 -> 0 (alpha 1); Shrink x -/+ bias outside [-lambd, lambd]
  else 0: 2 -> 1.5 (lambd 0.5, bias 0.5; integer types truncate the float32 result: 5 - 1.5 -> 3).
- Gelu 0.5*x*(1 + erf(x/sqrt 2)): 1 -> 0.8413; ``approximate="tanh"`` uses
  0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))): 1 -> 0.8412.
- Erf: 0.5 -> 0.5205; integer types (Erf-9) truncate: erf(3) = 0.99998 -> 0, erf(6) -> 1.
- Clip: Clip-6 ``min``/``max`` attributes, Clip-11+ optional scalar inputs; an absent bound is the
  type's limit (float32 -inf clips to -3.4028235e38); min > max gives max everywhere.
- Round halves to even: 2.5 -> 2, -1.5 -> -2. Sign: -3 -> -1, NaN stays NaN.
- IsNaN, IsInf (``detect_positive``/``detect_negative``) give bool.
- One numpy function each: Exp, Log, Sqrt, Reciprocal, Abs, Neg, Floor, Ceil, Tanh, Sin, Cos, Tan,
  Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh (Log(-1) is NaN, Log(0) is -inf, as IEEE says).

numpy has no erf: :func:`erf` and Gelu use polynomial fits made once from ``math.erf``/``math.erfc``
(``erf(x) = x*P(x^2)`` below 0.9; above, ``erfc(a) = e^(-a^2)*R(1/(1 + p*a))``), accurate to a few
units in the last place of float32 and float64.

The package's modules, by concept: ``unary`` (one numpy function per op, and the element-wise
kernel the others share), ``activations``, ``clip`` and ``erf`` (Erf and Gelu). The type checks
every family uses are in ``ovpool.engine.ops.checks``, the computing precision in
``ovpool.engine.ops.precision``, the in-place kernel protocol (``InPlace``) in
``ovpool.engine.inplace``. Every name stays importable from ``ovpool.engine.ops.elementwise``.
"""

from __future__ import annotations

from ovpool.engine.ops.checks import (
    _OBJECT,
    _formal_types,
    _refusal,
    check_type,
    first_allowing,
    float_attr,
    int_attr,
    str_attr,
    type_guard,
)
from ovpool.engine.ops.donated import InPlace, Into, ignoring_fp, writable_float
from ovpool.engine.ops.elementwise.activations import (
    _HARD_SWISH_CHUNK,
    _ONES,
    HARD_SWISH_ALPHA,
    _chunked_hard_swish,
    _exp_linear,
    _hard_swish_into,
    _hard_swish_tail,
    _sigmoid_of_negated,
    _softplus,
    _swish,
    _swish_alpha,
    celu,
    elu,
    hard_sigmoid,
    hard_swish,
    is_inf,
    leaky_relu,
    mish,
    prelu,
    relu,
    selu,
    shrink,
    sigmoid,
    softplus,
    softsign,
    swiglu,
    swish,
    thresholded_relu,
)
from ovpool.engine.ops.elementwise.clip import _clip, clip_attributes, clip_inputs, type_limits
from ovpool.engine.ops.elementwise.erf import (
    _CHUNK,
    _chunked,
    _erf_fits,
    _erf_into,
    _ErfcTail,
    _erfcx,
    _ErfFits,
    _exp_neg_square,
    _Fit,
    _gelu_into,
    _select_into,
    erf,
    erf_op,
    gelu,
    gelu_exact,
    gelu_tanh,
)
from ovpool.engine.ops.elementwise.unary import (
    _BITS,
    _CLIP,
    _SIMPLE,
    _SIMPLE_CODES,
    _UMATH,
    Unary,
    _elementwise,
    _function,
    _mask_bits,
    _negative_part,
    _op,
    _positive_part,
    _simple_factory,
    _since,
    _traits,
    _ufunc_into,
    bit_select,
    keep,
)
from ovpool.engine.ops.precision import _is_half, narrow, rounding, wide

__all__ = [
    "_OBJECT",
    "_formal_types",
    "_refusal",
    "check_type",
    "first_allowing",
    "float_attr",
    "int_attr",
    "str_attr",
    "type_guard",
    "_is_half",
    "narrow",
    "rounding",
    "wide",
    "InPlace",
    "Into",
    "ignoring_fp",
    "writable_float",
    "Unary",
    "_BITS",
    "_CLIP",
    "_SIMPLE",
    "_SIMPLE_CODES",
    "_UMATH",
    "_elementwise",
    "_function",
    "_mask_bits",
    "_negative_part",
    "_op",
    "_positive_part",
    "_simple_factory",
    "_since",
    "_traits",
    "_ufunc_into",
    "bit_select",
    "keep",
    "HARD_SWISH_ALPHA",
    "_HARD_SWISH_CHUNK",
    "_ONES",
    "_chunked_hard_swish",
    "_exp_linear",
    "_hard_swish_into",
    "_hard_swish_tail",
    "_sigmoid_of_negated",
    "_softplus",
    "_swish",
    "_swish_alpha",
    "celu",
    "elu",
    "hard_sigmoid",
    "hard_swish",
    "is_inf",
    "leaky_relu",
    "mish",
    "prelu",
    "relu",
    "selu",
    "shrink",
    "sigmoid",
    "softplus",
    "softsign",
    "swiglu",
    "swish",
    "thresholded_relu",
    "_clip",
    "clip_attributes",
    "clip_inputs",
    "type_limits",
    "_CHUNK",
    "_ErfFits",
    "_ErfcTail",
    "_Fit",
    "_chunked",
    "_erf_fits",
    "_erf_into",
    "_erfcx",
    "_exp_neg_square",
    "_gelu_into",
    "_select_into",
    "erf",
    "erf_op",
    "gelu",
    "gelu_exact",
    "gelu_tanh",
]

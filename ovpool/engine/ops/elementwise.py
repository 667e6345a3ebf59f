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
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ovpool.engine.memo import scalar
from ovpool.engine.native.chain_ops import ufunc_rows
from ovpool.engine.ops.base import PLAIN, SHAPE_VALUE, Kernel, OpNode, Traits, outputs, register

Unary = Callable[[np.ndarray], np.ndarray]


# ---------------------------------------------------------------- shared by the family modules


@functools.cache
def _formal_types(op_type: str, since: int, domain: str) -> tuple[tuple[str, ...], dict[str, frozenset[np.dtype]]]:
    """The schema's type parameter of each formal input and the numpy dtypes each parameter allows;
    an input of one fixed type (ReverseSequence's ``sequence_lens``: "tensor(int64)") is its own
    parameter, allowing that type."""
    import onnx
    from onnx import TensorProto, helper

    schema = onnx.defs.get_schema(op_type, since, domain)
    constraints = [(c.type_param_str, tuple(c.allowed_type_strs)) for c in schema.type_constraints]
    constraints += [(formal.type_str, (formal.type_str,)) for formal in schema.inputs if formal.type_str.startswith("tensor(")]
    allowed: dict[str, frozenset[np.dtype]] = {}
    for param, names in constraints:
        dtypes = set()
        for name in names:
            if name.startswith("tensor(") and hasattr(TensorProto, name[7:-1].upper()):
                dtypes.add(np.dtype(helper.tensor_dtype_to_np_dtype(getattr(TensorProto, name[7:-1].upper()))))
        allowed[param] = frozenset(dtypes)
    return tuple(formal.type_str for formal in schema.inputs), allowed


_OBJECT = np.dtype(object)


@functools.cache
def first_allowing(op_type: str, domain: str, param: str, dtype: np.dtype) -> int | None:
    """The first since-version of ``op_type`` whose schema allows ``dtype`` for the type parameter
    ``param`` (bfloat16 for Det's T: 22), or None when none does."""
    import onnx

    versions = sorted(
        {s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op_type and s.domain == domain}
    )
    for since in versions:
        if dtype in _formal_types(op_type, since, domain)[1].get(param, frozenset()):
            return since
    return None


def _refusal(node: OpNode, what: str, param: str, dtype: np.dtype, allowed: frozenset[np.dtype]) -> str:
    """``input 0 has type bfloat16; Det-11 allows float16, float32, float64 (bfloat16 from Det-22)``."""
    names = ", ".join(sorted(str(t) for t in allowed))
    later = first_allowing(node.op_type, node.domain, param, dtype)
    hint = f" ({dtype} from {node.op_type}-{later})" if later is not None else ""
    return f"{what} has type {dtype}; {node.op_type}-{node.since} allows {names}{hint}"


def check_type(node: OpNode, param: str, dtype: np.dtype, attribute: str) -> None:
    """An output type chosen by ``attribute`` (EyeLike's ``dtype``, BitCast's ``to``) checked
    against the type parameter ``param`` of the node's version: bfloat16 for EyeLike-9 is the
    node's error, naming EyeLike-22, which allows it."""
    allowed = _formal_types(node.op_type, node.since, node.domain)[1][param]
    if dtype not in allowed:
        raise node.fail(_refusal(node, "the output", param, dtype, allowed), attribute)


def type_guard(node: OpNode) -> Callable[..., None]:
    """A check of a kernel's inputs against the node's schema version: each input's dtype is one its
    type parameter allows, and inputs sharing a parameter share a dtype (Add-7 of float32 and int64
    is the node's error). Inputs past the formal list are the last (variadic) one's; None is skipped;
    numpy unicode arrays count as ONNX strings, like object arrays of ``str``. The dtypes of one
    to three inputs that passed are remembered: the next call with them costs a set lookup."""
    params, allowed = _formal_types(node.op_type, node.since, node.domain)
    last = len(params) - 1
    passed: set[tuple[np.dtype, ...]] = set()

    def check(*arrays: np.ndarray | None) -> None:
        if len(arrays) == 2:
            a, b = arrays
            if a is not None and b is not None and (a.dtype, b.dtype) in passed:
                return
        elif len(arrays) == 1:
            if arrays[0] is not None and (arrays[0].dtype,) in passed:
                return
        elif len(arrays) == 3:
            a, b, c = arrays
            if a is not None and b is not None and c is not None and (a.dtype, b.dtype, c.dtype) in passed:
                return
        full_check(arrays)
        if len(arrays) <= 3 and all(array is not None for array in arrays):
            passed.add(tuple(array.dtype for array in arrays if array is not None))

    def full_check(arrays: tuple[np.ndarray | None, ...]) -> None:
        seen: dict[str, np.dtype] = {}
        for i, array in enumerate(arrays):
            if array is None:
                continue
            param = params[min(i, last)]
            dtype = _OBJECT if array.dtype.kind == "U" else array.dtype
            if dtype not in allowed[param]:
                raise node.fail(_refusal(node, f"input {i}", param, dtype, allowed[param]))
            if seen.setdefault(param, dtype) != dtype:
                raise node.fail(f"input {i} has type {dtype}, another input of type {param} has {seen[param]}")

    return check


def float_attr(node: OpNode, name: str, default: float) -> float:
    """A float attribute or its schema default, as the float32 value ONNX stores (a default alpha of
    0.01 is 0.009999999776482582, what a float64 input is multiplied by); an int is taken as a float."""
    value = node.attr(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise node.fail(f"{value!r} is not a number", name)
    return float(np.float32(value))


def int_attr(node: OpNode, name: str, default: int, choices: tuple[int, ...] | None = None) -> int:
    """An int attribute or its schema default, one of ``choices`` when given."""
    value = node.attr(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise node.fail(f"{value!r} is not an integer", name)
    if choices is not None and value not in choices:
        raise node.fail(f"{value} is not one of {', '.join(map(str, choices))}", name)
    return value


def str_attr(node: OpNode, name: str, default: str | None, choices: tuple[str, ...]) -> str:
    """A string attribute, one of ``choices``; ``default`` None means the attribute is required."""
    value = node.attr(name, default)
    if value is None:
        raise node.fail("is required", name)
    if value not in choices:
        raise node.fail(f"{value!r} is not one of {', '.join(map(repr, choices))}", name)
    return str(value)


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


Into = Callable[..., tuple[np.ndarray, ...]]


class InPlace:
    """An element-wise kernel that can also write its result into an input's buffer: called as
    usual it allocates (``run``); ``donating(position)`` gives the kernel that computes into
    input ``position`` when that buffer can hold the result (same shape and dtype, writeable, a
    floating type), with the same operations in the same order as ``run`` (so the same bits:
    Add of x = [1, 2] and 3 leaves x holding [4, 5]) and falls back to ``run`` otherwise.
    ``donors`` are the positions it can write into. The plan decides when an input may be given
    up (``ovpool.engine.inplace``). ``tile(dst, *args)``, when given, computes the node into
    ``dst`` from float32/float64 arguments of ``dst``'s shape or of one element, skipping the type
    check (the caller has checked the dtypes): what a chain of nodes runs on each tile
    (``ovpool.engine.chains``); ``dst`` may be one of ``args``. ``quiet``, when given, is the same
    kernel without the ``np.errstate(all="ignore")`` it enters on each call (about 1.5 us): for a
    caller that runs it under one already, the plan's run loop (``ovpool.engine.graph``).
    ``code``, when given, spells what ``tile`` computes as rows for the compiled chain
    (``ovpool.engine.chains``, ``ovpool.engine.native.compiled``), ``(name, *operands)`` with name
    add, sub, mul, div (two operands), clip (value, low, high) or sqrt (one); an operand is an int (the
    node's input at that place; a clip bound past the inputs, or omitted, is the type's limit),
    ``"prev"`` (the row before's result), ``"low"``/``"high"`` (the type's limits) or a float (a
    constant). Add: ``(("add", 0, 1),)``; HardSwish: ``(("div", 0, 6.0), ("add", "prev", 0.5),
    ("clip", "prev", 0.0, 1.0), ("mul", "prev", 0))``, numpy's passes in numpy's order."""

    __slots__ = ("run", "_into", "donors", "tile", "quiet", "code")

    def __init__(
        self,
        run: Kernel,
        into: Into | None = None,
        donors: tuple[int, ...] = (),
        tile: Callable[..., object] | None = None,
        quiet: InPlace | None = None,
        code: tuple[Any, ...] | None = None,
    ) -> None:
        self.run = run
        self._into = into
        self.donors = donors if into is not None else ()
        self.tile = tile
        self.quiet = quiet
        self.code = code if tile is not None else None

    def __call__(self, *args: Any) -> tuple[np.ndarray, ...]:
        return self.run(*args)

    def donating(self, position: int) -> Kernel:
        """The kernel that hands ``args[position]`` to ``into(out, *args)``."""
        into = self._into
        assert into is not None and position in self.donors

        def kernel(*args: Any) -> tuple[np.ndarray, ...]:
            return into(args[position], *args)

        return kernel


def ignoring_fp(function: Callable[..., tuple[np.ndarray, ...]]) -> Callable[..., tuple[np.ndarray, ...]]:
    """``function`` run under ``np.errstate(all="ignore")``: the form of a quiet kernel (one that
    leaves the floating-point state to its caller, ``InPlace.quiet``) called on its own, where
    1e38 * 10 in float32 is inf without an overflow warning."""

    def ignoring(*args: Any) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            return function(*args)

    return ignoring


def writable_float(out: Any) -> bool:
    """Whether ``out`` can take a float result in place: a writeable float32/float64 array of rank >= 1."""
    return type(out) is np.ndarray and out.dtype.kind == "f" and out.dtype.itemsize >= 4 and out.ndim > 0 and out.flags.writeable


# ---------------------------------------------------------------- one numpy function per op

_SIMPLE: tuple[tuple[str, int, np.ufunc, Traits], ...] = (
    ("Exp", 6, np.exp, PLAIN),
    ("Log", 6, np.log, PLAIN),
    ("Sqrt", 6, np.sqrt, PLAIN),
    ("Reciprocal", 6, np.reciprocal, PLAIN),
    ("Abs", 6, np.abs, SHAPE_VALUE),
    ("Neg", 6, np.negative, SHAPE_VALUE),
    ("Floor", 6, np.floor, SHAPE_VALUE),
    ("Ceil", 6, np.ceil, SHAPE_VALUE),
    ("Tanh", 6, np.tanh, PLAIN),
    ("Sign", 9, np.sign, PLAIN),
    ("Round", 11, np.rint, PLAIN),
    ("IsNaN", 9, np.isnan, PLAIN),
    ("Sin", 7, np.sin, PLAIN),
    ("Cos", 7, np.cos, PLAIN),
    ("Tan", 7, np.tan, PLAIN),
    ("Asin", 7, np.arcsin, PLAIN),
    ("Acos", 7, np.arccos, PLAIN),
    ("Atan", 7, np.arctan, PLAIN),
    ("Sinh", 9, np.sinh, PLAIN),
    ("Cosh", 9, np.cosh, PLAIN),
    ("Asinh", 9, np.arcsinh, PLAIN),
    ("Acosh", 9, np.arccosh, PLAIN),
    ("Atanh", 9, np.arctanh, PLAIN),
)


def _elementwise(
    node: OpNode,
    formula: Unary,
    tile: Callable[[np.ndarray, np.ndarray], object] | None = None,
    code: tuple[Any, ...] | None = None,
) -> Kernel:
    """The kernel applying ``formula`` after the type check. float16 and bfloat16 are computed in
    float32 and rounded once (numpy's half-precision loops are slower than the two casts); a 0-d
    input is seen as shape (1,), so formulas can work in place (numpy gives scalars for 0-d).
    ``tile(dst, x)``, when given, writes ``formula(x)`` of a float32/float64 ``x`` into ``dst`` by
    the same steps (``dst`` may be ``x``): the in-place form (:class:`InPlace`)."""
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        vector = x.reshape(1) if x.ndim == 0 else x
        if _is_half(x.dtype):
            y = formula(vector.astype(np.float32))
            y = y.astype(x.dtype) if y.dtype == np.float32 else y
        else:
            y = formula(vector)
        return (y,) if x.ndim else outputs(y.reshape(()))

    def in_place(out: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
        if not writable_float(x):
            return kernel(x)
        check(x)
        assert tile is not None
        tile(x, x)
        return (x,)

    into = in_place if tile is not None else None
    quiet = InPlace(kernel, into, (0,), tile, code=code)
    return InPlace(ignoring_fp(kernel), None if into is None else ignoring_fp(into), (0,), tile, quiet, code)


# The compiled chain's rows of the simple ops it has (``ovpool.engine.native.chain_ops``): Sqrt, whose
# IEEE square root is correctly rounded in C as in numpy, so the same bits.
_SIMPLE_CODES = ufunc_rows(1)


def _simple_factory(function: np.ufunc) -> Callable[[OpNode], Kernel]:
    tile = None if function is np.isnan else functools.partial(_ufunc_into, function)
    code = _SIMPLE_CODES.get(function)
    return lambda node: _elementwise(node, function, tile, code)


def _ufunc_into(function: np.ufunc, dst: np.ndarray, x: np.ndarray) -> None:
    function(x, out=dst)


for _op, _since, _function, _traits in _SIMPLE:
    register(_op, _since, traits=_traits)(_simple_factory(_function))


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _mask_bits(mask: np.ndarray, itemsize: int) -> np.ndarray:
    """All ones where ``mask``, zeros elsewhere, as integers of ``itemsize`` bytes."""
    bits = mask.view(np.int8).astype(_BITS[itemsize])
    return np.negative(bits, out=bits)


def keep(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``x`` where ``mask``, +0 elsewhere (a float array and a bool array of one shape), without a
    branch per element: [-1.5, inf, 2] with [F, F, T] -> [0, 0, 2] (``np.where`` on a random mask
    costs ten times more)."""
    bits = _mask_bits(mask, x.itemsize)
    np.bitwise_and(x.view(bits.dtype), bits, out=bits)
    return bits.view(x.dtype)


def bit_select(condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where the bool ``condition`` holds, ``b`` elsewhere, broadcast three ways (``a`` and ``b``
    of one type, any item size of 1, 2, 4 or 8 bytes), by bit masks instead of a branch per element:
    [T, F] with [1.5, 2.5] and 0 -> [1.5, 0]."""
    bits = np.empty(np.broadcast_shapes(condition.shape, a.shape, b.shape), _BITS[a.itemsize])
    np.negative(condition.view(np.int8), out=bits)
    chosen = np.asarray(np.bitwise_and(a.view(bits.dtype), bits))
    np.invert(bits, out=bits)
    np.bitwise_and(b.view(bits.dtype), bits, out=bits)
    np.bitwise_or(chosen, bits, out=chosen)
    return chosen.view(a.dtype)


# numpy's clip ufunc, which np.clip calls after about 2 us of argument handling; called directly,
# the same loop gives the same bits (numpy 2 moved it from numpy.core to numpy._core).
_UMATH = "numpy._core.umath" if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else "numpy.core.umath"
_CLIP: np.ufunc = importlib.import_module(_UMATH).clip


def _positive_part(x: np.ndarray) -> np.ndarray:
    """max(x, 0), NaN kept: a clip to [0, inf] for floats (numpy's fastest form), max for integers;
    [-2.5, nan, 3] -> [0, nan, 3]."""
    if x.dtype.kind == "f":
        return _CLIP(x, scalar(0, x.dtype), scalar(np.inf, x.dtype))
    return np.maximum(x, 0)


def _negative_part(x: np.ndarray) -> np.ndarray:
    """min(x, 0), NaN kept."""
    if x.dtype.kind == "f":
        return _CLIP(x, scalar(-np.inf, x.dtype), scalar(0, x.dtype))
    return np.minimum(x, 0)


# ---------------------------------------------------------------- activations


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


# ---------------------------------------------------------------- Clip


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


# ---------------------------------------------------------------- erf and Gelu


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

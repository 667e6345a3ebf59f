"""The basic operators: Constant, Identity, Dropout (inference, and training with ratio 0), Cast, CastLike, BitCast, Shape, Size,
ConstantOfShape, and the optional-type ops (Optional, OptionalHasElement, OptionalGetElement).

Values here are exact: these ops move or re-type data, they do not compute. Cast follows the
schema's conversion rules: float to integer truncates toward zero (2.7 -> 2, -2.7 -> -2), integer
to a narrower integer keeps the low bits (200 int16 -> -56 int8), anything to bool is "nonzero";
float 8 targets (Cast-19) saturate or not per the schema's table (1e6 -> 448 in FLOAT8E4M3FN with
``saturate=1``, NaN with ``saturate=0``). Numbers cast to strings are written as onnxruntime
writes them (``%.8g``: 0.1 -> "0.1", 1.5e-7 -> "1.5000001e-07", inf -> "INF", NaN -> "NaN").
BitCast-26 keeps the bits instead: float32 1.0 is int32 1065353216.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from onnx import SparseTensorProto, TensorProto, helper, numpy_helper

from ovpool.engine.memo import dtype_name
from ovpool.engine.ops.base import NO_WORK, SHAPE_VALUE, Kernel, OpNode, Traits, outputs, register
from ovpool.engine.ops.checks import check_type, type_guard
from ovpool.memory import check_tensor, fits


def tensor_value(tensor: TensorProto) -> np.ndarray:
    """A TensorProto as numpy; string tensors hold ``str`` (onnx gives bytes), as onnxruntime returns them."""
    return _decoded(numpy_helper.to_array(tensor))


def dense_from_sparse(sparse: SparseTensorProto) -> np.ndarray:
    """A SparseTensorProto as a dense array: ``dims`` [2, 3], values [5, 7] at linear indices [1, 5]
    (or index rows [[0, 1], [1, 2]]) give ``[[0, 5, 0], [0, 0, 7]]``."""
    values = tensor_value(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


def _decoded(array: np.ndarray) -> np.ndarray:
    if array.dtype == object:
        flat = [v.decode("utf-8") if isinstance(v, bytes) else v for v in array.ravel().tolist()]
        return np.array(flat, dtype=object).reshape(array.shape)
    return array


# ---------------------------------------------------------------- Constant

_CONSTANT_ATTRS = {1: ("value",), 11: ("value", "sparse_value")}
_CONSTANT_ATTRS_12 = (
    "value",
    "sparse_value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "value_string",
    "value_strings",
)


@register("Constant", 1)
def constant(node: OpNode) -> Kernel:
    """Constant: exactly one value attribute, of those the version has: ``value`` (1, 9), also
    ``sparse_value`` (11), also ``value_float(s)``/``value_int(s)``/``value_string(s)`` (12+).
    ``value_ints=[1, 2]`` is an int64 array ``[1, 2]``; ``value_float=0.5`` a float32 0-d array."""
    allowed = _CONSTANT_ATTRS_12 if node.since >= 12 else _CONSTANT_ATTRS[11 if node.since >= 11 else 1]
    for name in node.attrs:
        if name not in allowed:
            raise node.fail(f"is not an attribute of Constant-{node.since} (it has {', '.join(allowed)})", name)
    given = [name for name in allowed if name in node.attrs]
    if len(given) != 1:
        raise node.fail(
            f"needs exactly one of {', '.join(allowed)}; it has {len(given)}" + (f" ({', '.join(given)})" if given else "")
        )
    name = given[0]
    raw = node.attrs[name]
    if name == "value":
        if not isinstance(raw, np.ndarray):
            raise node.fail(f"must be a tensor, not {type(raw).__name__}", name)
        value = _decoded(raw)
    elif name == "sparse_value":
        value = dense_from_sparse(raw)
    elif name in ("value_float", "value_floats"):
        value = np.array(raw, dtype=np.float32)
    elif name in ("value_int", "value_ints"):
        value = np.array(raw, dtype=np.int64)
    else:
        value = np.array(raw, dtype=object)
    result = outputs(value)

    def kernel() -> tuple[np.ndarray, ...]:
        return result

    return kernel


# ---------------------------------------------------------------- Identity, optionals, Dropout


@register("Identity", 1, traits=Traits(work=NO_WORK, shape_value=True))
def identity(node: OpNode) -> Kernel:
    """Identity: the input itself (a tensor, or from Identity-14 a sequence or optional)."""

    def kernel(x: Any) -> tuple[Any, ...]:
        return (x,)

    return kernel


# An optional value is its element, or None when empty (onnx.reference wraps elements in a list;
# the session never sees that form: these ops are ovpool's own).


@register("Optional", 15)
def optional(node: OpNode) -> Kernel:
    """Optional: the input as an optional value (the input itself), or the empty optional (None)
    of the ``type`` attribute when there is no input."""

    def kernel(x: Any = None) -> tuple[Any, ...]:
        return (x,)

    return kernel


@register("OptionalHasElement", 15)
def optional_has_element(node: OpNode) -> Kernel:
    """OptionalHasElement: bool scalar, true unless the input is empty or (from 18) omitted."""

    def kernel(x: Any = None) -> tuple[np.ndarray, ...]:
        return (np.array(x is not None),)

    return kernel


@register("OptionalGetElement", 15)
def optional_get_element(node: OpNode) -> Kernel:
    """OptionalGetElement: the element of a non-empty optional (from 18 a tensor or sequence passes
    through); an empty optional is the model's error."""

    def kernel(x: Any) -> tuple[Any, ...]:
        if x is None:
            raise node.fail("the optional input is empty")
        return (x,)

    return kernel


def _dropout_kernel(node: OpNode, mask_dtype: np.dtype | None, run_check: bool = False, ratio: float = 0.0) -> Kernel:
    """Output = data; mask (when asked for) all ones in ``mask_dtype``. ``run_check``: Dropout-12's
    ``ratio`` / ``training_mode`` are not both constants, so each run reads the ratio they set;
    ``ratio`` (training mode, known now) drops as :func:`_dropped`."""
    want_mask = node.n_outputs > 1

    def kernel(x: np.ndarray, *rest: np.ndarray | None) -> tuple[np.ndarray, ...]:
        drop = _dropout_ratio(node, rest[0] if rest else None, rest[1] if len(rest) > 1 else None) if run_check else ratio
        if drop:
            y, mask = _dropped(node, x, drop)
            return (y, mask) if want_mask else (y,)
        if want_mask:
            return x, np.ones(x.shape, dtype=x.dtype if mask_dtype is None else mask_dtype)
        return (x,)

    return kernel


def _dropout_ratio(node: OpNode, ratio: np.ndarray | None, training: np.ndarray | None) -> float:
    """The ratio Dropout-12+ drops at: 0 in inference mode (``training_mode`` omitted or false), else
    ``ratio`` (0.5 when omitted), which must be a scalar in [0, 1)."""
    if training is None or not bool(np.any(training)):
        return 0.0
    if ratio is not None and np.size(ratio) != 1:
        raise node.fail(f"ratio has shape {list(np.shape(ratio))}; it is a scalar")
    value = 0.5 if ratio is None else float(np.asarray(ratio, dtype=np.float64).reshape(()))
    if not 0 <= value < 1:
        raise node.fail(f"training_mode is true with ratio {value:g}: the ratio must lie in [0, 1)")
    return value


def _dropped(node: OpNode, x: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Training-mode Dropout: each value is kept where a uniform draw in [0, 1) is at least ``ratio``
    and scaled by 1 / (1 - ratio) (ratio 0.5: kept values doubled); the bool mask says which. The
    schema leaves the generator open: with ``seed`` it is numpy's ``RandomState(seed)``, afresh on
    every run (the draws ONNX's own test data were made with: seed 0 on [3, 4, 5] keeps 33 values),
    without it a generator numpy seeds."""
    seed = node.attr("seed")
    draws = (
        np.random.RandomState(int(seed)).uniform(0, 1.0, x.shape) if seed is not None else np.random.default_rng().random(x.shape)
    )
    mask = draws >= ratio
    return (x * mask * x.dtype.type(1 / (1 - ratio))).astype(x.dtype, copy=False), mask


@register("Dropout", 1, 6)
def dropout_is_test(node: OpNode) -> Kernel:
    """Dropout-1/6: ``is_test`` (default 0) selects test mode, where the output is the input; the
    default, training mode, drops at random and is refused. The mask has the data type."""
    if int(node.attr("is_test", 0)) == 0:
        raise node.fail("is 0 (the default): training-mode dropout (random) is not run by ovpool's inference executor", "is_test")
    return _dropout_kernel(node, None)


@register("Dropout", 7, 9)
def dropout_7(node: OpNode) -> Kernel:
    """Dropout-7: inference only (no is_test): output = input; the mask, of the data's type, is all ones."""
    return _dropout_kernel(node, None)


@register("Dropout", 10, 11)
def dropout_10(node: OpNode) -> Kernel:
    """Dropout-10: as Dropout-7 with a bool mask (all True)."""
    return _dropout_kernel(node, np.dtype(bool))


@register("Dropout", 12)
def dropout_12(node: OpNode) -> Kernel:
    """Dropout-12+: optional inputs ``ratio`` (default 0.5) and ``training_mode`` (default false).
    Inference (training_mode false) and training with ratio 0 are the identity: output = input,
    bool mask all True (x [1, 2] with ratio 0 and training_mode true is [1, 2], mask [True, True]).
    Training mode with another ratio drops at random (:func:`_dropped`), decided when prepared if
    both inputs are constants (or omitted), else on each run."""
    count = len(node.constants)
    if all(count <= i or node.constants[i] is not None for i in (1, 2)):  # omitted or constant: decided now
        ratio = _dropout_ratio(node, node.constants[1] if count > 1 else None, node.constants[2] if count > 2 else None)
        return _dropout_kernel(node, np.dtype(bool), ratio=ratio)
    return _dropout_kernel(node, np.dtype(bool), run_check=True)


# ---------------------------------------------------------------- Cast, CastLike

_FLOAT8: dict[int, tuple[float, bool]] = {
    TensorProto.FLOAT8E4M3FN: (448.0, True),  # (largest finite, infinity saturates to it before Cast-24)
    TensorProto.FLOAT8E4M3FNUZ: (240.0, False),
    TensorProto.FLOAT8E5M2: (57344.0, True),
    TensorProto.FLOAT8E5M2FNUZ: (57344.0, False),
}
# the narrow integers: (bits, signed)
_NARROW_INT: dict[int, tuple[int, bool]] = {
    TensorProto.INT4: (4, True),
    TensorProto.UINT4: (4, False),
    TensorProto.INT2: (2, True),
    TensorProto.UINT2: (2, False),
}
_REFUSED: dict[int, str] = {
    TensorProto.COMPLEX64: "COMPLEX64",
    TensorProto.COMPLEX128: "COMPLEX128",
}
_ROUND_MODES = ("up", "down", "nearest")


def _target(node: OpNode, elem: int, attribute: str) -> np.dtype:
    if elem in _REFUSED:
        raise node.fail(f"{_REFUSED[elem]}: ovpool does not cast to this type", attribute)
    if elem == TensorProto.STRING:
        return np.dtype(object)
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError, ValueError):
        raise node.fail(f"{elem} is not an ONNX tensor element type", attribute) from None


def _cast_to(node: OpNode, elem: int, saturate: bool) -> Any:
    """The conversion ``x -> elem`` as a function of one array."""
    dtype = _target(node, elem, "to")
    if elem == TensorProto.STRING:
        return _to_string
    if elem in _FLOAT8 or elem == TensorProto.FLOAT4E2M1:
        return lambda x: to_narrow_float(_numeric(node, x, np.dtype(np.float64)), elem, saturate, node.since)
    if elem in _NARROW_INT:
        bits, signed = _NARROW_INT[elem]
        return lambda x: _to_narrow_int(_numeric(node, x, np.dtype(np.float64)), dtype, bits, signed)
    if elem == TensorProto.FLOAT8E8M0:
        round_mode = _round_mode(node)
        return lambda x: _to_float8e8m0(_numeric(node, x, np.dtype(np.float64)), dtype, saturate, round_mode)

    def plain(x: np.ndarray) -> np.ndarray:
        if x.dtype == object:
            return _plain(_numeric(node, x, dtype), dtype)
        if x.dtype == dtype:
            return x
        if _exact(x.dtype, dtype):
            return x.astype(dtype)
        return _plain(x, dtype)

    return plain


NARROW_FLOATS = frozenset((*_FLOAT8, TensorProto.FLOAT4E2M1))


def to_narrow_float(x: np.ndarray, elem: int, saturate: bool, table: int) -> np.ndarray:
    """Numbers ``x`` (any real dtype) as the float 8 type or FLOAT4E2M1 ``elem`` by the Cast schema's
    tables of Cast-``table`` (19: infinities of the FNUZ types saturate to NaN; 24: to their
    largest value): FLOAT8E4M3FN 1e6 is 448 with ``saturate`` and NaN without, 0.3 is 0.3125
    (nearest even); FLOAT4E2M1 2.5 is 2 (``saturate`` does not apply: it has no infinity). The
    one conversion of QuantizeLinear's float 8 and float 4 results too."""
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    if elem == TensorProto.FLOAT4E2M1:
        return _to_float4e2m1(x, dtype)
    largest, infinite_saturates = _FLOAT8[elem]
    return _to_float8(x, dtype, largest, infinite_saturates or table >= 24, saturate)


def _exact(source: np.dtype, target: np.dtype) -> bool:
    """Whether every ``source`` value has a ``target`` value numpy casts it to without a warning
    (no NaN, infinity or overflow to report): from bool or an integer to bool, an integer (which
    wraps) or a float of 4 bytes or more, or from a float to a float at least as wide (int64 ->
    float32, float32 -> float64; not float32 -> int64, nor int64 70000 -> float16's infinity)."""
    if source.kind in "biu":
        return target.kind in "biu" or (target.kind == "f" and target.itemsize >= 4)
    return source.kind == "f" and target.kind == "f" and target.itemsize >= source.itemsize


def _plain(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """numpy's cast, quiet on NaN, infinities and values out of the target's range. One float
    inside an integer type's range (a Loop's counter: 3.0 -> int64 3) is cast without entering
    ``np.errstate`` (1.4 us; nothing to quiet there)."""
    if x.dtype == dtype:
        return x
    if x.size == 1 and x.dtype.kind == "f":
        bounds = _INTEGER_RANGES.get(dtype)
        if bounds is not None and bounds[0] <= x.item() < bounds[1]:  # NaN compares false
            return x.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(dtype)


# integer types as [lowest, highest + 1) floats (2**63 for int64): what a float casts to without a warning
_INTEGER_RANGES = {
    np.dtype(t): (float(np.iinfo(t).min), float(np.iinfo(t).max) + 1)
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
}


def _numeric(node: OpNode, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x`` itself, or parsed from strings: "3.14", " 2", "1e-5", "INF"/"-inf"/"NaN" (any case);
    to an integer type "100.5" gives 100 (truncation, as onnxruntime)."""
    if x.dtype != object:
        return x
    if dtype.kind in "iub":
        try:
            return x.astype(np.int64)
        except (TypeError, ValueError, OverflowError):
            pass
    try:
        numbers = x.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise node.fail(f"cannot cast the string input to a number ({exc})") from None
    if dtype.kind in "iub":
        with np.errstate(invalid="ignore"):
            return np.trunc(numbers).astype(np.int64)
    return numbers


def _to_string(x: np.ndarray) -> np.ndarray:
    if x.dtype == object:
        return x
    if x.dtype.kind == "b":
        flat = ["1" if v else "0" for v in x.ravel().tolist()]
    elif x.dtype.kind in "iu":
        flat = [str(v) for v in x.ravel().tolist()]
    else:
        flat = [_float_text(v) for v in x.astype(np.float64).ravel().tolist()]
    return np.array(flat, dtype=object).reshape(x.shape)


def _float_text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "INF" if v > 0 else "-INF"
    return f"{v:.8g}"


def _to_float8(x: np.ndarray, dtype: np.dtype, largest: float, infinite_saturates: bool, saturate: bool) -> np.ndarray:
    """The schema's float 8 table: with ``saturate`` values beyond the largest finite one become it
    (E4M3FN 1e6 -> 448), infinities too, except in the FNUZ types before Cast-24 (no infinity: NaN;
    Cast-24's table saturates them as well, E4M3FNUZ inf -> 240); without it they overflow to NaN,
    or to infinity in E5M2. NaN stays NaN; rounding is to nearest even."""
    if saturate:
        wide = x.astype(np.float32, copy=True)
        infinite = np.isinf(wide)
        np.clip(wide, -largest, largest, out=wide)
        if not infinite_saturates:
            wide[infinite] = np.nan
        x = wide
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(np.float32, copy=False).astype(dtype)


def _to_narrow_int(x: np.ndarray, dtype: np.dtype, bits: int, signed: bool) -> np.ndarray:
    """INT4/UINT4/INT2/UINT2. The schema defines a float in the type's range and any integer
    (whose high bits are discarded, two's complement: 200 -> -56 in int8); a float out of the
    range is undefined. ovpool casts as onnxruntime does: floats round half away from zero
    (2.5 -> 3, -0.5 -> -1; NaN and infinities give 0), then the low ``bits`` are kept like an
    integer's (INT4: 7.6 -> 8 -> -8, -9.7 -> -10 -> 6; UINT2: 5 -> 1). The values are worked out
    here, so what ml_dtypes does with an out-of-range value (0.5 wraps, 0.7 gives 0) plays no part."""
    span = 1 << bits
    if x.dtype.kind == "f":
        wide = x.astype(np.float64)
        wide = np.where(np.isfinite(wide), wide, 0.0)
        wide = np.where(wide >= 0, np.floor(wide + 0.5), np.ceil(wide - 0.5))
        values = np.fmod(wide, span).astype(np.int64)  # exact: integer-valued floats
    else:
        values = x.astype(np.int64)
    values &= span - 1
    if signed:
        values = np.where(values >= span // 2, values - span, values)
    return values.astype(dtype)


_FLOAT4_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _to_float4e2m1(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """FLOAT4E2M1 by ONNX's float 4 table (it has no infinity or NaN): within [-6, 6] to the nearest
    of +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, ties to the even mantissa (1.25 -> 1, 1.75 -> 2, 2.5 -> 2,
    5 -> 4); beyond and +-inf saturate to +-6; NaN gives 6. The sign of zero is kept (-0.1 -> -0)."""
    wide = x.astype(np.float64)
    nan = np.isnan(wide)
    magnitude = np.minimum(np.abs(np.where(nan, 6.0, wide)), 6.0)
    above = np.minimum(np.searchsorted(_FLOAT4_MAGNITUDES, magnitude), len(_FLOAT4_MAGNITUDES) - 1)
    below = np.maximum(above - 1, 0)
    low, high = _FLOAT4_MAGNITUDES[below], _FLOAT4_MAGNITUDES[above]
    take_high = (high - magnitude < magnitude - low) | ((high - magnitude == magnitude - low) & (above % 2 == 0))
    chosen = np.where(take_high, high, low)
    return np.copysign(chosen, np.where(nan, 1.0, wide)).astype(dtype)


def _to_float8e8m0(x: np.ndarray, dtype: np.dtype, saturate: bool, round_mode: str) -> np.ndarray:
    """FLOAT8E8M0 (powers of two 2^-127..2^127, and NaN) by Cast-24's rules: a value becomes the power
    of two ``round_mode`` gives: ``up`` the next one away from zero (1.1 -> 2, 0.124 -> 0.125),
    ``down`` the next toward zero (1.9 -> 1), ``nearest`` the nearer one, ties up (1.5 -> 2, 1.4 -> 1).
    Beyond 2^127 (and inf) it saturates to 2^127 with ``saturate`` (default) and is NaN without;
    below 2^-127 (0 too) 2^-127 with ``saturate``, NaN without. NaN stays NaN. The schema leaves
    negative values unspecified: ovpool takes their magnitude, as onnx's own helper does."""
    wide = np.abs(x.astype(np.float64))
    finite = np.isfinite(wide)
    positive = finite & (wide > 0)
    mantissa, exponent = np.frexp(np.where(positive, wide, 1.0))  # wide = mantissa * 2**exponent, mantissa in [0.5, 1)
    power = exponent - 1
    if round_mode == "up":
        power = np.where(mantissa > 0.5, exponent, power)
    elif round_mode == "nearest":
        power = np.where(mantissa >= 0.75, exponent, power)
    high = (power > 127) | (np.isinf(wide))
    low = (power < -127) | (finite & (wide == 0))
    values = np.ldexp(1.0, np.clip(power, -127, 127))
    values = np.where(high, 2.0**127 if saturate else np.nan, values)
    values = np.where(low, 2.0**-127 if saturate else np.nan, values)
    values = np.where(np.isnan(wide), np.nan, values)
    return values.astype(dtype)


def _round_mode(node: OpNode) -> str:
    """Cast-24+ ``round_mode`` (default "up"), for FLOAT8E8M0 targets."""
    mode = str(node.attr("round_mode", "up")) if node.since >= 24 else "up"
    if mode not in _ROUND_MODES:
        raise node.fail(f"'{mode}' must be one of {', '.join(_ROUND_MODES)}", "round_mode")
    return mode


def _cast_name(node: OpNode) -> int:
    """Cast's ``to``: an int (Cast-6+) or a type name such as "FLOAT" (Cast-1)."""
    if "to" not in node.attrs:
        raise node.fail("is required", "to")
    to = node.attrs["to"]
    if isinstance(to, str):
        try:
            return int(TensorProto.DataType.Value(to.upper()))
        except ValueError:
            raise node.fail(f"'{to}' is not an ONNX data type name", "to") from None
    return int(to)


def _saturate(node: OpNode) -> bool:
    value = int(node.attr("saturate", 1)) if node.since >= 19 else 1
    if value not in (0, 1):
        raise node.fail(f"{value} must be 0 or 1", "saturate")
    return bool(value)


@register("Cast", 1, traits=SHAPE_VALUE)
def cast(node: OpNode) -> Kernel:
    """Cast to ``to`` (a name in Cast-1, an enum value from 6). Cast-19+ ``saturate`` (default 1)
    applies to float 8 targets only; Cast-24's ``round_mode`` (default "up") to FLOAT8E8M0 ones."""
    convert = _cast_to(node, _cast_name(node), _saturate(node))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(convert(x)),)

    return kernel


@register("CastLike", 15)
def cast_like(node: OpNode) -> Kernel:
    """CastLike: ``input`` cast to the element type of ``target_type`` (its values unused), with
    Cast's rules; ``saturate`` from 19. A float64 target makes float32 [0.1] float64 0.100000001."""
    saturate = _saturate(node)
    converters: dict[np.dtype, Any] = {}

    def kernel(x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
        convert = converters.get(target.dtype)
        if convert is None:
            elem = TensorProto.STRING if target.dtype == object else helper.np_dtype_to_tensor_dtype(target.dtype)
            convert = converters[target.dtype] = _cast_to(node, elem, saturate)
        return outputs(convert(x))

    return kernel


@functools.cache
def _bits(dtype: np.dtype) -> int:
    """The bit width of an element type as ONNX counts it, asked of the type itself (ml_dtypes'
    ``iinfo``/``finfo`` know numpy's types and its own): 4 for INT4 (held one to a byte here), 16
    for bfloat16; bool and the complex types by their bytes."""
    import ml_dtypes

    if dtype.kind in "bc":
        return dtype.itemsize * 8
    try:
        return int(ml_dtypes.iinfo(dtype).bits)
    except ValueError:
        return int(ml_dtypes.finfo(dtype).bits)


@register("BitCast", 26)
def bit_cast(node: OpNode) -> Kernel:
    """BitCast-26: the input's bits read as ``to`` (same bit width, same shape, little endian):
    float32 1.0 is int32 1065353216, int8 -1 is uint8 255, INT4 -1 is UINT4 15. A bool target
    holds true for every non-zero byte (uint8 2 -> true), as a byte copy makes it in C."""
    if "to" not in node.attrs:
        raise node.fail("is required", "to")
    target = _target_of_bits(node, int(node.attrs["to"]))
    check_type(node, "T2", target, "to")
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        if _bits(x.dtype) != _bits(target):
            raise node.fail(f"{target.name} has {_bits(target)} bits, the input's {x.dtype} {_bits(x.dtype)}", "to")
        source = x if x.flags.c_contiguous else x.copy()  # ascontiguousarray makes 0-d 1-d
        if target == np.bool_:
            return (source.view(np.uint8) != 0,)
        if _bits(x.dtype) < 8:  # held one to a byte: the low bits are the value's
            source = source.view(np.uint8) & np.uint8((1 << _bits(x.dtype)) - 1)
        return (source.view(target),)

    return kernel


def _target_of_bits(node: OpNode, elem: int) -> np.dtype:
    """BitCast's ``to`` as a numpy dtype: every ONNX type numpy or ml_dtypes holds (all but STRING)."""
    if elem == TensorProto.STRING:
        raise node.fail("STRING has no bit pattern to reinterpret", "to")
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError, ValueError):
        raise node.fail(f"{elem} is not an ONNX tensor element type", "to") from None


# ---------------------------------------------------------------- Shape, Size, ConstantOfShape


@register("Shape", 1, 14, traits=Traits(work=NO_WORK))
def shape(node: OpNode) -> Kernel:
    """Shape: the input's dims as int64, ``(2, 3, 4)`` -> ``[2, 3, 4]``."""

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.array(np.shape(x), dtype=np.int64),)

    return kernel


@register("Shape", 15, traits=Traits(work=NO_WORK))
def shape_slice(node: OpNode) -> Kernel:
    """Shape-15+: dims ``start`` (default 0) to ``end`` (default the rank), negative counting from the
    end, both clamped to ``[0, rank]``: shape ``(2, 3, 4, 5)`` with start=-3, end=-1 gives ``[3, 4]``;
    start=10 gives ``[]``."""
    start = int(node.attr("start", 0))
    end = node.attr("end")

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        dims = np.shape(x)
        rank = len(dims)
        first = min(max(start + rank if start < 0 else start, 0), rank)
        last = rank if end is None else min(max(int(end) + rank if int(end) < 0 else int(end), 0), rank)
        return (np.array(dims[first:last], dtype=np.int64),)

    return kernel


@register("Size", 1, traits=Traits(work=NO_WORK))
def size(node: OpNode) -> Kernel:
    """Size: the number of elements as an int64 scalar, ``(2, 3, 4)`` -> ``24``."""

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.array(np.size(x), dtype=np.int64),)

    return kernel


@register("ConstantOfShape", 9, traits=SHAPE_VALUE)
def constant_of_shape(node: OpNode) -> Kernel:
    """ConstantOfShape: a tensor of the dims given by the int64 input, filled with ``value`` (a
    one-element tensor, default float32 0; its type is the output's). ``[2, 3]`` with value
    int32 [7] gives a 2x3 int32 tensor of 7s; ``[]`` gives a 0-d tensor; a 0 dim an empty one. The
    output is held to the memory budget before it is allocated: [1, 40000, 40000] of the default
    float32 would need 6.0 GiB."""
    value = node.attr("value")
    if value is None:
        fill = np.zeros((), dtype=np.float32)
    else:
        if not isinstance(value, np.ndarray) or value.size != 1:
            raise node.fail("must be a one-element tensor", "value")
        fill = _decoded(value).reshape(())

    def kernel(dims: np.ndarray) -> tuple[np.ndarray, ...]:
        if dims.ndim != 1 or dims.dtype != np.int64:
            raise node.fail(f"input must be a 1-D int64 tensor, got {dims.dtype} of shape {list(dims.shape)}")
        shape = tuple(dims.tolist())
        if shape and min(shape) < 0:
            raise node.fail(f"input {list(shape)} has a negative dim")
        if not fits(math.prod(shape) * fill.dtype.itemsize):  # the message is made only for a refusal
            check_tensor(f"{node.label}: output", shape, dtype_name(fill.dtype), fill.dtype.itemsize)
        return (np.full(shape, fill, dtype=fill.dtype),)

    return kernel

"""Quantized operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
QLinearMatMul, ConvInteger, MatMulInteger, and onnxruntime's com.microsoft QOperator ops.

Every quantize step of a float tensor is ``ovpool.quant.quantize``: ``saturate(round_half_even(x /
scale) + zero_point)`` with ``x / scale`` the float32 quotient, as ONNX's reference and onnxruntime
divide (float16 and bfloat16 widened to float32 first): QuantizeLinear-13 of float32 0.175 at scale
0.05 is 4, the float32 quotient being 3.5 (the exact one is 3.4999999...). Every dequantize is
``(q - zero_point) * scale`` exact before its one rounding to the output type. Integer arithmetic
(QLinearConv, QLinearMatMul) is exact and requantized exactly (``ovpool.quant.rescale``).

**QuantizeLinear / DequantizeLinear** (10, 13, 19, 21, 23, 24, 25 and later): the granularity is
the scale's shape. A scalar, or a 1-element vector (onnxruntime reads ``[0.05]`` as ``0.05``), is
per tensor; a 1-D scale (from 13) is per axis ``axis`` (default 1, negative from the end) and needs
one value per index of that axis; a scale of the input's rank with ``block_size`` B (from 21) is
blocked: along ``axis`` scale index ``i // B`` serves index ``i``, the scale's length there being
``ceil(D / B)`` (D=5, B=3: 2 blocks, [0, 1, 2] and [3, 4]); on every other axis the scale has the
input's length. The zero point has the scale's shape (a scalar or 1-element zero point beside a
per-tensor scale too), and the quantized type: uint8/int8, from 21 uint16/int16/uint4/int4, from 25
uint2/int2 ([0, 3] / [-2, 1]); the output type of QuantizeLinear is the zero point's, else
``output_dtype`` (21+), else uint8. DequantizeLinear's output is float32 up to 13, the scale's type
from 19 (float32, float16, bfloat16), ``output_dtype`` if given from 23; int32 inputs are
dequantized too (their zero point subtracted if given, as onnxruntime does). ``precision`` (23)
changes nothing: the division is float32's whatever it says, as onnxruntime's. A NaN quantizes to
the zero point (ONNX leaves it undefined; onnxruntime 1.31 gives the type's lowest value).

**Float 8 (19+) and FLOAT4E2M1 (23+).** QuantizeLinear converts the float32 quotient ``x / scale``
once by the Cast rules (``basic.to_narrow_float``; ``saturate``, default 1, for float 8, the FNUZ
infinities saturating at every version as onnxruntime does): E4M3FN 1.1 at scale 0.5 is 2.25,
ties to the even mantissa. DequantizeLinear is ``x * scale``, exact in float64, rounded once to the
output type. The zero point must be 0 (or -0): the schema's formula adds it, onnxruntime and ONNX's
reference ignore it, so a non-zero one is refused by name; FLOAT8E8M0 scales (24+) are refused by
name too (no arithmetic is stated for them).

**DynamicQuantizeLinear-11** computes its scale and zero point as its function body does, in
float32: ``scale = (max(0, max x) - min(0, min x)) / 255``, ``zero_point = round_half_even(clip(0 -
min(0, min x) / scale, 0, 255))``, then quantizes x like QuantizeLinear. All-zero (or empty) x has
no scale by that rule (0 / 0); it gets scale 1 and zero point 0, onnxruntime's choice.

**QLinearConv-10, QLinearMatMul-10/21** are integer arithmetic and one exact rescale: the integer
convolution or product of ``x - x_zero_point`` and ``w - w_zero_point`` (exact in float64 up to
2**53), plus the int32 bias, is ``total``; the output is ``saturate(round_half_even(total *
x_scale * w_scale / y_scale) + y_zero_point)`` with the rational computed exactly
(``ovpool.quant.rescale``). The padding of QLinearConv is the real 0, i.e. the input's zero point.
w_scale/w_zero_point are per tensor or per output channel; QLinearMatMul's a-scale and zero point
per tensor or per row ((M,) for a 2-D a, (..., M, 1) beyond), b's per tensor or per column ((N,)
or (..., 1, N)). **ConvInteger-10 / MatMulInteger-10**: the same integer result as int32 (wrapping
past 32 bits, as the schema allows), zero points per tensor, per output channel (w) or per row /
column (A / B).

**com.microsoft** (version 1): QLinearAveragePool and QLinearGlobalAveragePool are
``ovpool.quant.QuantizedPool`` (``ovpool.onnx.qdq.qlinear_pool``), exact; ``channels_last`` inputs
are transposed to (N, C, *spatial) and back. The other ops of ``ovpool.onnx.qoperator.QOPERATORS``
run their expansion (DequantizeLinear -> float op -> QuantizeLinear, ai.onnx opset
``NUMPY_OPSET``) on this library: QLinearAdd of uint8 10 and 20 at scale 0.1 and zero point 0 into
scale 0.2 is quantize(1.0 + 2.0) = 15. com.microsoft QuantizeLinear/DequantizeLinear are
QuantizeLinear-21/DequantizeLinear-21 without ``block_size``, of the integer types only.

A zero or non-finite scale, a zero point of another type than its tensor, or granularities that do
not fit the input are the node's ``ModelError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import NodeProto, TensorProto, helper

from ovpool.engine.ops.base import PLAIN, Kernel, OpNode, Rule, Traits, normalize_axis, outputs, register
from ovpool.engine.ops.casts import to_narrow_float
from ovpool.engine.ops.conv import CONV_WORK, conv
from ovpool.errors import UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx.qdq import is_channels_last, qlinear_pool
from ovpool.onnx.qoperator import NUMPY_OPSET, QOPERATORS, expand_node
from ovpool.quant import dequantize, quantize, quotient, rescale

MS = "com.microsoft"

# Quantizing computes in float64 (blocked scales: 17 x a float32 input), dequantizing too.
QUANTIZING = Traits(work=Rule(18.0, 2.0))
DEQUANTIZING = Traits(work=Rule(6.0, 1.0))
CONVOLVING = Traits(work=CONV_WORK)  # on Conv's kernels

# numpy dtype names of the quantized integer types by first version (onnx's int4/int2 are ml_dtypes types)
_BY_VERSION: tuple[tuple[int, frozenset[str]], ...] = (
    (25, frozenset({"uint8", "int8", "uint16", "int16", "uint4", "int4", "uint2", "int2"})),
    (21, frozenset({"uint8", "int8", "uint16", "int16", "uint4", "int4"})),
    (10, frozenset({"uint8", "int8"})),
)
# QuantizeLinear/DequantizeLinear's float quantized types: numpy dtype name -> (ONNX type, first version)
_FLOAT_QUANT: dict[str, tuple[int, int]] = {
    np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name: (elem, since)
    for elem, since in (
        (TensorProto.FLOAT8E4M3FN, 19),
        (TensorProto.FLOAT8E4M3FNUZ, 19),
        (TensorProto.FLOAT8E5M2, 19),
        (TensorProto.FLOAT8E5M2FNUZ, 19),
        (TensorProto.FLOAT4E2M1, 23),
    )
}
# element types with no integer quantization rule (the integer-only ops refuse them by name)
_REFUSED_ONNX: dict[int, str] = {
    TensorProto.FLOAT8E4M3FN: "float8e4m3fn",
    TensorProto.FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    TensorProto.FLOAT8E5M2: "float8e5m2",
    TensorProto.FLOAT8E5M2FNUZ: "float8e5m2fnuz",
    TensorProto.FLOAT4E2M1: "float4e2m1",
    TensorProto.FLOAT8E8M0: "float8e8m0",
    TensorProto.INT2: "int2",
    TensorProto.UINT2: "uint2",
}
_REFUSED_NAMES = {np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name: name for elem, name in _REFUSED_ONNX.items()}
_E8M0 = np.dtype(helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT8E8M0)).name
_FLOATS = ("float32", "float16", "bfloat16")


def _quant_types(node: OpNode, floats: bool = False) -> frozenset[str]:
    """The quantized types of the node's version: integers, and with ``floats`` (QuantizeLinear and
    DequantizeLinear of ai.onnx; com.microsoft's take integers only) the float 8 types from 19 and
    FLOAT4E2M1 from 23."""
    since = 21 if node.domain == MS else node.since
    integers = next(types for first, types in _BY_VERSION if since >= first)
    if not floats or node.domain == MS:
        return integers
    return integers | {name for name, (_, first) in _FLOAT_QUANT.items() if since >= first}


def _refuse_type(node: OpNode, name: str, what: str) -> None:
    if name in _REFUSED_NAMES:
        raise UnsupportedError(
            f"{node.label}: {what} is {_REFUSED_NAMES[name]}; ovpool runs integer quantization only in {node.op_type}"
        )


def _refuse_e8m0_scale(node: OpNode, scale: np.ndarray) -> None:
    if scale.dtype.name == _E8M0:
        raise UnsupportedError(
            f"{node.label}: the scale is float8e8m0; the schema states no precision for a division or product "
            "in that type, and ovpool runs no float8e8m0 scales"
        )


def _quant_type(node: OpNode, dtype: np.dtype, what: str, floats: bool = False) -> str:
    """ovpool.quant's name of an integer quantized type the node's version allows (with ``floats``
    also a float 8 / float 4 type, by its numpy name)."""
    name = dtype.name
    allowed = _quant_types(node, floats)
    if name in allowed:
        return name
    if not floats:
        _refuse_type(node, name, what)
    raise node.fail(f"{what} is {name}; {node.op_type}-{node.since} quantizes to {', '.join(sorted(allowed))}")


def _onnx_quant_type(node: OpNode, elem: int, attribute: str) -> str:
    try:
        name = np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name
    except (KeyError, TypeError, ValueError):
        raise node.fail(f"{elem} is not an ONNX element type", attribute) from None
    if name not in _quant_types(node, floats=True):
        raise node.fail(f"{name} is not a type {node.op_type}-{node.since} quantizes to", attribute)
    return name


_NARROW_STORAGE = {"int4": TensorProto.INT4, "uint4": TensorProto.UINT4, "int2": TensorProto.INT2, "uint2": TensorProto.UINT2}


def _as_storage(q: np.ndarray, name: str) -> np.ndarray:
    """Integers held as ovpool.quant's storage type, as the node's output type (int4, int2:
    ml_dtypes)."""
    if name in _NARROW_STORAGE:
        return q.astype(helper.tensor_dtype_to_np_dtype(_NARROW_STORAGE[name]))
    return q


def _float_zero(node: OpNode, zero: np.ndarray | None, dtype: np.dtype) -> np.ndarray | None:
    """A float 8 / float 4 zero point: of the quantized type, and 0 (or -0) everywhere; returned as
    int64 zeros of its shape (for the granularity checks). The schema's formula adds it, but
    onnxruntime and ONNX's reference ignore it for float 8: a non-zero one has no single meaning
    and is refused by name."""
    if zero is None:
        return None
    if zero.dtype != dtype:
        raise node.fail(f"the zero point is {zero.dtype.name} but the quantized tensor is {dtype.name}; they must be one type")
    values = zero.astype(np.float64)
    if np.any(values != 0):  # NaN too
        bad = float(values[values != 0].reshape(-1)[0])
        raise UnsupportedError(
            f"{node.label}: the {dtype.name} zero point is {bad:g}; the schema adds a float zero point, onnxruntime and "
            "ONNX's reference ignore it: ovpool runs float 8 and float 4 quantization with zero points 0 only"
        )
    return np.zeros(zero.shape, dtype=np.int64)


def _integers(q: np.ndarray) -> np.ndarray:
    """Quantized integers (int4 included) as int64."""
    return q.astype(np.int64)


def _checked_scale(node: OpNode, scale: np.ndarray, what: str = "the scale") -> np.ndarray:
    """The scale as float64 (bfloat16 and float16 exactly); zero, infinite or NaN values refused."""
    _refuse_type(node, scale.dtype.name, what)
    if scale.dtype.kind not in "fiu" and scale.dtype.name != "bfloat16":
        raise node.fail(f"{what} is {scale.dtype.name}, not a number type")
    values = scale.astype(np.float32).astype(np.float64) if scale.dtype.name == "bfloat16" else scale.astype(np.float64)
    bad = values[~np.isfinite(values) | (values == 0)]
    if bad.size:
        raise node.fail(f"{what} {float(bad.reshape(-1)[0]):g} must be finite and non-zero")
    return values


def _zero_of(node: OpNode, zero: np.ndarray | None, dtype: np.dtype, what: str) -> np.ndarray:
    if zero is None:
        return np.zeros((), dtype=np.int64)
    if zero.dtype != dtype:
        raise node.fail(f"{what} is {zero.dtype.name} but the quantized tensor is {dtype.name}; they must be one type")
    return _integers(zero)


# ------------------------------------------------------------------------------- granularity


def broadcast_quantization(
    node: OpNode, shape: tuple[int, ...], scale: np.ndarray, zero: np.ndarray | None, axis: int, block_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """``scale`` (float64) and ``zero`` (int64; None: omitted, 0) shaped to broadcast over a tensor
    of ``shape``, by the granularity rules of the module text: per tensor, per axis (1-D), or
    blocked."""
    if zero is None:
        zero = np.zeros(scale.shape, dtype=np.int64)
    if block_size < 0:
        raise node.fail(f"{block_size} is negative", "block_size")
    if block_size:
        return _blocked(node, shape, scale, zero, axis, block_size)
    if scale.size == 1 and scale.ndim <= 1:
        if zero.size != 1 or zero.ndim > 1:
            raise node.fail(f"a per-tensor scale with a zero point of shape {list(zero.shape)}")
        return scale.reshape(()), zero.reshape(())
    if scale.ndim != 1:
        raise node.fail(
            f"the scale has shape {list(scale.shape)}; per-axis scales are 1-D (a scale of the input's rank needs block_size)"
        )
    if node.domain != MS and node.since < 13:
        raise node.fail(
            f"the scale has {scale.size} values; {node.op_type}-{node.since} takes one (per-axis scales are from version 13)"
        )
    if zero.shape != scale.shape:
        if zero.ndim == 0:
            raise node.fail(f"{scale.size} per-axis scales with a scalar zero point; the zero point has the scale's shape")
        raise node.fail(f"{scale.size} scale(s) but {zero.size} zero point(s)")
    rank = len(shape)
    if rank == 0:
        raise node.fail(f"{scale.size} per-axis scales for a 0-d input")
    where = normalize_axis(node, axis, rank)
    if shape[where] != scale.size:
        raise node.fail(f"{scale.size} per-axis scales for axis {axis} of length {shape[where]}")
    dims = [1] * rank
    dims[where] = scale.size
    return scale.reshape(dims), np.broadcast_to(zero, scale.shape).reshape(dims)


def _blocked(
    node: OpNode, shape: tuple[int, ...], scale: np.ndarray, zero: np.ndarray, axis: int, block: int
) -> tuple[np.ndarray, np.ndarray]:
    rank = len(shape)
    if scale.ndim != rank:
        raise node.fail(f"blocked quantization needs a scale of the input's rank {rank}; it has shape {list(scale.shape)}")
    if zero.ndim and zero.shape != scale.shape:
        raise node.fail(f"the zero point has shape {list(zero.shape)}, the scale {list(scale.shape)}; they must be one shape")
    where = normalize_axis(node, axis, rank)
    for d, (size, length) in enumerate(zip(shape, scale.shape)):
        want = -(-size // block) if d == where else size
        if length != want:
            if d == where:
                raise node.fail(
                    f"the scale has {length} blocks along axis {axis}; {size} values in blocks of {block} make {want}",
                    "block_size",
                )
            raise node.fail(f"the scale has length {length} on axis {d}, the input {size}; only axis {axis} is blocked")
    zero = np.broadcast_to(zero, scale.shape)
    cells = np.arange(shape[where]) // block
    return np.take(scale, cells, axis=where), np.take(zero, cells, axis=where)


# ---------------------------------------------------------------------------------- QuantizeLinear


def _quantize_linear(node: OpNode) -> Kernel:
    axis = int(node.attr("axis", 1))
    block_size = int(node.attr("block_size", 0)) if node.since >= 21 and node.domain != MS else 0
    output_dtype = int(node.attr("output_dtype", 0)) if node.since >= 21 and node.domain != MS else 0
    wanted = _onnx_quant_type(node, output_dtype, "output_dtype") if output_dtype else None
    saturate = int(node.attr("saturate", 1)) if node.since >= 19 and node.domain != MS else 1
    if saturate not in (0, 1):
        raise node.fail(f"{saturate} must be 0 or 1", "saturate")
    precision = int(node.attr("precision", 0)) if node.since >= 23 else 0
    if precision and precision not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT32):
        raise node.fail(f"{precision} is not a type the division can be done in", "precision")
    x_types = ("float32", "int32") if node.since < 19 and node.domain != MS else (*_FLOATS, "int32")

    def kernel(x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if x.dtype.name not in x_types:
            raise node.fail(f"x is {x.dtype.name}; {node.op_type}-{node.since} quantizes {', '.join(x_types)}")
        if zero is not None:
            name = _quant_type(node, zero.dtype, "the zero point", floats=True)
            if wanted is not None and wanted != name:
                raise node.fail(f"{wanted}, but the zero point is {name}", "output_dtype")
        else:
            name = wanted or "uint8"
        _refuse_e8m0_scale(node, scale)
        scales = _checked_scale(node, scale)
        values = (x.astype(np.float32) if x.dtype.name == "bfloat16" else x).astype(np.float64)
        if name in _FLOAT_QUANT:
            s, _ = broadcast_quantization(node, x.shape, scales, _float_zero(node, zero, np.dtype(name)), axis, block_size)
            return outputs(to_narrow_float(quotient(values, s), _FLOAT_QUANT[name][0], bool(saturate), 24))
        zeros = _integers(zero) if zero is not None else None
        s, z = broadcast_quantization(node, x.shape, scales, zeros, axis, block_size)
        return outputs(_as_storage(quantize(values, s, z, name), name))

    return kernel


@register("QuantizeLinear", 10, traits=QUANTIZING)
def quantize_linear(node: OpNode) -> Kernel:
    """QuantizeLinear-10..25: float32 2.0 at scale 0.5 (per tensor) and uint8 zero point 3 is
    2 / 0.5 + 3 = 7; 0.25 / 0.5 = 0.5 rounds to 0 (half to even), 300 / 0.5 saturates at 255."""
    return _quantize_linear(node)


@register("QuantizeLinear", 1, domain=MS, traits=QUANTIZING)
def quantize_linear_ms(node: OpNode) -> Kernel:
    """com.microsoft QuantizeLinear-1: QuantizeLinear-21's meaning without block_size."""
    return _quantize_linear(node)


# -------------------------------------------------------------------------------- DequantizeLinear


def _output_float(node: OpNode, scale: np.ndarray) -> np.dtype:
    output_dtype = int(node.attr("output_dtype", 0)) if node.since >= 23 and node.domain != MS else 0
    if output_dtype:
        if output_dtype not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16):
            raise node.fail(f"{output_dtype} is not float, float16 or bfloat16", "output_dtype")
        return np.dtype(helper.tensor_dtype_to_np_dtype(output_dtype))
    if node.since < 19 and node.domain != MS:
        if scale.dtype != np.float32:
            raise node.fail(f"the scale is {scale.dtype.name}; {node.op_type}-{node.since} takes float32")
        return np.dtype(np.float32)
    if scale.dtype.name not in _FLOATS:
        _refuse_type(node, scale.dtype.name, "the scale")
        raise node.fail(f"the scale is {scale.dtype.name}, not float32, float16 or bfloat16")
    return scale.dtype


def _dequantize_linear(node: OpNode) -> Kernel:
    axis = int(node.attr("axis", 1))
    block_size = int(node.attr("block_size", 0)) if node.since >= 21 and node.domain != MS else 0

    def kernel(x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        name = x.dtype.name if x.dtype == np.int32 else _quant_type(node, x.dtype, "x", floats=True)
        _refuse_e8m0_scale(node, scale)
        out = _output_float(node, scale)
        scales = _checked_scale(node, scale)
        if name in _FLOAT_QUANT:
            s, _ = broadcast_quantization(node, x.shape, scales, _float_zero(node, zero, x.dtype), axis, block_size)
            with np.errstate(over="ignore", invalid="ignore"):  # x * scale exact in float64, rounded once
                return outputs((x.astype(np.float64) * s).astype(out))
        zeros = None if zero is None else _zero_of(node, zero, x.dtype, "the zero point")
        s, z = broadcast_quantization(node, x.shape, scales, zeros, axis, block_size)
        with np.errstate(over="ignore"):  # beyond float16's range: inf, as the product rounds
            return outputs(dequantize(_integers(x), s, z).astype(out))

    return kernel


@register("DequantizeLinear", 10, traits=DEQUANTIZING)
def dequantize_linear(node: OpNode) -> Kernel:
    """DequantizeLinear-10..25: uint8 130 at zero point 128 and scale 0.05 is 2 * 0.05 = 0.1
    (float32 0.1000000015, the exact product rounded once)."""
    return _dequantize_linear(node)


@register("DequantizeLinear", 1, domain=MS, traits=DEQUANTIZING)
def dequantize_linear_ms(node: OpNode) -> Kernel:
    """com.microsoft DequantizeLinear-1: DequantizeLinear-21's meaning without block_size."""
    return _dequantize_linear(node)


# --------------------------------------------------------------------------- DynamicQuantizeLinear


@register("DynamicQuantizeLinear", 11, traits=QUANTIZING)
def dynamic_quantize_linear(node: OpNode) -> Kernel:
    """DynamicQuantizeLinear-11: x = [-1, 0.5, 2.5, 3] has scale float32(4 / 255) = 0.015686275,
    zero point round(1 / 0.015686275) = round(63.75) = 64, y = [0, 96, 223, 255]."""

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype != np.float32:
            raise node.fail(f"x is {x.dtype.name}; DynamicQuantizeLinear-11 takes float32")
        f32 = np.float32
        low = f32(np.minimum(f32(0), x.min())) if x.size else f32(0)  # np.minimum keeps a NaN
        high = f32(np.maximum(f32(0), x.max())) if x.size else f32(0)
        if np.isnan(low) or np.isnan(high):
            raise node.fail("x holds NaN; its scale and zero point are undefined")
        with np.errstate(over="ignore"):
            scale = f32(f32(high - low) / f32(255))
        if not np.isfinite(scale):
            raise node.fail(f"x spans [{low}, {high}], whose scale overflows float32")
        if scale == 0:
            scale, zero = f32(1), 0
        else:
            zero = int(np.rint(np.clip(f32(f32(0) - f32(low / scale)), f32(0), f32(255))))
        y = quantize(x.astype(np.float64), np.asarray(float(scale)), np.asarray(zero), "uint8")
        return outputs(y, np.asarray(scale, dtype=np.float32), np.asarray(zero, dtype=np.uint8))

    return kernel


# ----------------------------------------------------------------------------- integer arithmetic


def _conv_node(node: OpNode, weights: np.ndarray | None) -> Kernel:
    """ovpool's Conv kernel for the node's convolution attributes, on float64 arrays of integers
    (exact): errors name this node."""
    attrs = {k: node.attrs[k] for k in ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides") if k in node.attrs}
    inner = OpNode(node.name, node.op_type, node.since, node.opset, attrs, (None, weights), 1, node.domain)
    return conv(inner)


def _per_channel(node: OpNode, values: np.ndarray, channels: int, what: str) -> np.ndarray:
    """A per-tensor value (scalar or 1 element) or one per output channel, as a (M, 1, ...) column."""
    if values.size == 1 and values.ndim <= 1:
        return values.reshape(())
    if values.ndim != 1 or values.size != channels:
        raise node.fail(f"{what} has shape {list(values.shape)}; it is a scalar or one value per output channel ({channels})")
    return values


def _centred_weights(node: OpNode, w: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    """``w - w_zero_point`` (per tensor or per output channel) as float64 integers."""
    if w.ndim < 3:
        raise node.fail(f"w has shape {list(w.shape)}; it needs (M, C/group, *kernel)")
    _quant_type(node, w.dtype, "w")
    zeros = _per_channel(node, _zero_of(node, zero, w.dtype, "w_zero_point"), w.shape[0], "w_zero_point")
    return (_integers(w) - (zeros.reshape((-1,) + (1,) * (w.ndim - 1)) if zeros.ndim else zeros)).astype(np.float64)


def _spatial(column: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel (M,) vector shaped (M, 1, ...) against (N, M, *spatial) of ``rank``."""
    return column.reshape((-1,) + (1,) * (rank - 2)) if column.ndim else column


def _centred(node: OpNode, q: np.ndarray, zero: np.ndarray | None, what: str) -> np.ndarray:
    """``q - zero_point`` as float64 integers (exact)."""
    _quant_type(node, q.dtype, what)
    zeros = _zero_of(node, zero, q.dtype, f"{what}'s zero point")
    return (_integers(q) - zeros).astype(np.float64)


def _per_tensor(node: OpNode, values: np.ndarray, what: str) -> np.ndarray:
    if values.size != 1 or values.ndim > 1:
        raise node.fail(f"{what} has shape {list(values.shape)}; it is per tensor (a scalar)")
    return values.reshape(())


@register("QLinearConv", 10, traits=CONVOLVING)
def qlinear_conv(node: OpNode) -> Kernel:
    """QLinearConv-10: total = Conv(x - x_zp, w - w_zp) + B (integers), y = quantize(total *
    x_scale * w_scale / y_scale) exactly; x 10 at zero point 0, w 3, scales 0.5, 0.5, y_scale 1:
    30 * 0.25 = 7.5 rounds to 8."""
    weights = node.constants[3] if len(node.constants) > 3 else None
    w_zero = node.constants[5] if len(node.constants) > 5 else None
    centred_w = _centred_weights(node, weights, w_zero) if weights is not None and w_zero is not None else None
    convolve = _conv_node(node, centred_w)

    def kernel(
        x: np.ndarray,
        x_scale: np.ndarray,
        x_zero: np.ndarray,
        w: np.ndarray,
        w_scale: np.ndarray,
        w_zero: np.ndarray,
        y_scale: np.ndarray,
        y_zero: np.ndarray,
        bias: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        out_type = _quant_type(node, y_zero.dtype, "y_zero_point")
        if w.ndim < 3:
            raise node.fail(f"w has shape {list(w.shape)}; it needs (M, C/group, *kernel)")
        channels = w.shape[0]
        xs = _per_tensor(node, _checked_scale(node, x_scale, "x_scale"), "x_scale")
        ws = _per_channel(node, _checked_scale(node, w_scale, "w_scale"), channels, "w_scale")
        ys = _per_tensor(node, _checked_scale(node, y_scale, "y_scale"), "y_scale")
        yz = _per_tensor(node, _integers(y_zero), "y_zero_point")
        xc = _centred(node, x, _per_tensor(node, x_zero, "x_zero_point"), "x")
        wc = centred_w if centred_w is not None and w is weights else _centred_weights(node, w, w_zero)
        total = convolve(xc, wc)[0]
        if bias is not None:
            if bias.dtype != np.int32 or bias.shape != (channels,):
                raise node.fail(
                    f"B is {bias.dtype.name} of shape {list(bias.shape)}; it is int32 with one value per output channel ({channels})"
                )
            total = total + _spatial(bias.astype(np.float64), total.ndim)
        in_scale = xs * _spatial(ws, total.ndim)
        return outputs(rescale(total.astype(np.int64), 1, in_scale, ys, yz, out_type))

    return kernel


@register("ConvInteger", 10, traits=CONVOLVING)
def conv_integer(node: OpNode) -> Kernel:
    """ConvInteger-10: int32 Conv(x - x_zp, w - w_zp), padding being the zero point (0 after the
    subtraction): uint8 x [[5, 6]], zero point 5, w [[2, 1]] is 0*2 + 1*1 = 1."""
    convolve = _conv_node(node, None)

    def kernel(
        x: np.ndarray, w: np.ndarray, x_zero: np.ndarray | None = None, w_zero: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        if w.ndim < 3:
            raise node.fail(f"w has shape {list(w.shape)}; it needs (M, C/group, *kernel)")
        xc = _centred(node, x, None if x_zero is None else _per_tensor(node, x_zero, "x_zero_point"), "x")
        return outputs(_wrap32(convolve(xc, _centred_weights(node, w, w_zero))[0]))

    return kernel


def _wrap32(total: np.ndarray) -> np.ndarray:
    """Exact integers (float64) as int32, wrapping past 32 bits."""
    return total.astype(np.int64).astype(np.int32)


def _row_or_column(node: OpNode, values: np.ndarray, operand: np.ndarray, row: bool, what: str) -> np.ndarray:
    """A QLinearMatMul / MatMulInteger scale or zero point: per tensor, or per row of a (M,) /
    (..., M, 1), or per column of b (N,) / (..., 1, N); shaped to broadcast against ``operand``."""
    if values.size == 1 and values.ndim <= 1:
        return values.reshape(())
    if operand.ndim < 2:
        raise node.fail(f"{what} has {values.size} values for a 1-D input; it is per tensor there")
    rows, cols = operand.shape[-2:]
    if values.ndim == 1:
        if row and values.size == rows:
            return values.reshape(rows, 1)
        if not row and values.size == cols:
            return values
    elif values.ndim == operand.ndim:
        want = operand.shape[:-2] + ((rows, 1) if row else (1, cols))
        if values.shape == want:
            return values
    kind = (
        f"per row ({rows},) or {list(operand.shape[:-2] + (rows, 1))}"
        if row
        else f"per column ({cols},) or {list(operand.shape[:-2] + (1, cols))}"
    )
    raise node.fail(f"{what} has shape {list(values.shape)}; it is a scalar or {kind}")


def _matmul(node: OpNode, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim == 0 or b.ndim == 0:
        raise node.fail(f"inputs of shapes {list(a.shape)} and {list(b.shape)}: MatMul needs at least 1-D inputs")
    try:
        return np.asarray(np.matmul(a, b))
    except ValueError:
        raise node.fail(f"inputs of shapes {list(a.shape)} and {list(b.shape)} do not multiply") from None


def _matmul_operand(node: OpNode, q: np.ndarray, zero: np.ndarray | None, row: bool, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``q - zero_point`` (float64 integers) and the zero point's broadcast shape."""
    _quant_type(node, q.dtype, what)
    zeros = _row_or_column(node, _zero_of(node, zero, q.dtype, f"{what}'s zero point"), q, row, f"{what}'s zero point")
    return (_integers(q) - zeros).astype(np.float64), zeros


@register("QLinearMatMul", 10)
def qlinear_matmul(node: OpNode) -> Kernel:
    """QLinearMatMul-10/21: total = (a - a_zp) @ (b - b_zp) (integers), y = quantize(total *
    a_scale * b_scale / y_scale) exactly: a [[2, 3]], b [[4], [5]] (zero points 0), scales 0.5,
    0.5, 1: 23 * 0.25 = 5.75 gives 6."""
    scale_types = ("float32",) if node.since < 21 else _FLOATS

    def kernel(
        a: np.ndarray,
        a_scale: np.ndarray,
        a_zero: np.ndarray,
        b: np.ndarray,
        b_scale: np.ndarray,
        b_zero: np.ndarray,
        y_scale: np.ndarray,
        y_zero: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        for scale, what in ((a_scale, "a_scale"), (b_scale, "b_scale"), (y_scale, "y_scale")):
            if scale.dtype.name not in scale_types:
                _refuse_type(node, scale.dtype.name, what)
                raise node.fail(f"{what} is {scale.dtype.name}; {node.op_type}-{node.since} takes {', '.join(scale_types)}")
        for q, what in ((a, "a"), (b, "b"), (y_zero, "y_zero_point")):
            _refuse_type(node, q.dtype.name, what)
        out_type = _quant_type(node, y_zero.dtype, "y_zero_point")
        ac, _ = _matmul_operand(node, a, a_zero, True, "a")
        bc, _ = _matmul_operand(node, b, b_zero, False, "b")
        a_s = _row_or_column(node, _checked_scale(node, a_scale, "a_scale"), a, True, "a_scale")
        b_s = _row_or_column(node, _checked_scale(node, b_scale, "b_scale"), b, False, "b_scale")
        ys = _per_tensor(node, _checked_scale(node, y_scale, "y_scale"), "y_scale")
        yz = _per_tensor(node, _integers(y_zero), "y_zero_point")
        total = _matmul(node, ac, bc)
        in_scale = a_s * b_s
        if b.ndim == 1 and in_scale.ndim >= 2:
            in_scale = in_scale[..., 0]  # per-row scales of a matrix times a vector: (M, 1) -> (M,)
        elif a.ndim == 1 and in_scale.ndim >= 2:
            in_scale = in_scale[..., 0, :]  # a vector times per-column scales (..., 1, N): (..., N)
        return outputs(rescale(total.astype(np.int64), 1, np.broadcast_to(in_scale, total.shape), ys, yz, out_type))

    return kernel


@register("MatMulInteger", 10)
def matmul_integer(node: OpNode) -> Kernel:
    """MatMulInteger-10: int32 (A - a_zp) @ (B - b_zp): uint8 [[5, 6]], zero point 5, and [[2], [1]]
    is 0*2 + 1*1 = 1."""

    def kernel(
        a: np.ndarray, b: np.ndarray, a_zero: np.ndarray | None = None, b_zero: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        ac, _ = _matmul_operand(node, a, a_zero, True, "A")
        bc, _ = _matmul_operand(node, b, b_zero, False, "B")
        return outputs(_wrap32(_matmul(node, ac, bc)))

    return kernel


# ------------------------------------------------------------------------------- com.microsoft


def _qlinear_pool(node: OpNode) -> Kernel:
    proto = _node_proto(node, 5)
    channels_last = is_channels_last(proto)
    meanings: dict[tuple[Any, ...], Any] = {}

    def kernel(x: np.ndarray, *quantization: np.ndarray | None) -> tuple[np.ndarray, ...]:
        name = _quant_type(node, x.dtype, "X")
        if len(quantization) < 3 or quantization[0] is None or quantization[2] is None:
            raise node.fail("x_scale and y_scale are required inputs")
        known = {f"i{i + 1}": q for i, q in enumerate(quantization) if q is not None}
        key = (name, *((k, v.dtype.str, v.shape, v.tobytes()) for k, v in known.items()))
        meaning = meanings.get(key)
        if meaning is None:
            if len(meanings) > 16:
                meanings.clear()
            meaning = meanings[key] = qlinear_pool(proto, known, name)
        if channels_last:
            if x.ndim < 3:
                raise node.fail(f"channels_last input of shape {list(x.shape)}; it needs (N, *spatial, C)")
            first = np.moveaxis(x, -1, 1)
            return outputs(_as_storage(np.moveaxis(meaning.run(_integers(first)), 1, -1), name).astype(x.dtype))
        return outputs(meaning.run(_integers(x)).astype(x.dtype))

    return kernel


@register("QLinearAveragePool", 1, domain=MS)
def qlinear_average_pool(node: OpNode) -> Kernel:
    """com.microsoft QLinearAveragePool-1: ``ovpool.quant.QuantizedPool`` with AveragePool-11's
    attributes: uint8 cells 3 and 4 (zero point 0) averaged at one scale are 3.5, which gives 4."""
    return _qlinear_pool(node)


@register("QLinearGlobalAveragePool", 1, domain=MS)
def qlinear_global_average_pool(node: OpNode) -> Kernel:
    """com.microsoft QLinearGlobalAveragePool-1: the QuantizedPool of a global average."""
    return _qlinear_pool(node)


def _node_proto(node: OpNode, n_inputs: int) -> NodeProto:
    """The node again as a NodeProto (inputs ``i0``, ``i1``..., output ``y``), for the readers of
    ONNX nodes (``ovpool.onnx.qdq``, ``ovpool.onnx.qoperator``)."""
    names = [f"i{i}" for i in range(n_inputs)]
    return helper.make_node(node.op_type, names, ["y"], name=node.name, domain=node.domain, **node.attrs)


def _expanded(node: OpNode) -> Kernel:
    """A QOperator node run as its expansion (``ovpool.onnx.qoperator``), compiled once per
    combination of input types and ranks."""
    compile_graph = node.compile_graph
    if compile_graph is None:
        raise node.fail("runs as its expansion, which only a session compiles (ovpool.engine.graph)")
    compiled: dict[tuple[Any, ...], Callable[[Sequence[Any]], list[Any]]] = {}

    def build(arrays: Sequence[np.ndarray | None]) -> Callable[[Sequence[Any]], list[Any]]:
        names = [f"i{i}" if a is not None else "" for i, a in enumerate(arrays)]
        proto = helper.make_node(node.op_type, names, ["y"], name=node.name, domain=MS, **node.attrs)
        known = {n: c for n, c in zip(names, node.constants) if n and c is not None}
        types = {n: helper.np_dtype_to_tensor_dtype(a.dtype) for n, a in zip(names, arrays) if a is not None}
        ranks = {n: a.ndim for n, a in zip(names, arrays) if a is not None}
        taken = FreshNames([*names, "y", node.name])
        expansion = expand_node(proto, NUMPY_OPSET, known, taken, types, ranks)
        inputs = [n for n in names if n and n not in known]
        graph = helper.make_graph(
            expansion.nodes,
            node.name,
            [helper.make_tensor_value_info(n, types[n], None) for n in inputs],
            [helper.make_empty_tensor_value_info("y")],
            initializer=[*(_tensor(n, known[n]) for n in known), *expansion.initializers],
        )
        session = compile_graph(graph, {"": NUMPY_OPSET}, node.label)
        positions = [names.index(n) for n in session.input_names]
        return lambda values: session([values[i] for i in positions])

    def kernel(*arrays: np.ndarray | None) -> tuple[np.ndarray, ...]:
        key = tuple(None if a is None else (a.dtype.str, a.ndim) for a in arrays)
        run = compiled.get(key)
        if run is None:
            if len(compiled) > 16:
                compiled.clear()
            run = compiled[key] = build(arrays)
        return outputs(*run(arrays))

    return kernel


def _tensor(name: str, value: np.ndarray) -> TensorProto:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(value), name)


def _register_expanded() -> None:
    for op_type in QOPERATORS:
        if op_type not in ("QLinearAveragePool", "QLinearGlobalAveragePool"):
            register(op_type, 1, domain=MS, traits=CONVOLVING if op_type == "QLinearConv" else PLAIN)(_expanded)


_register_expanded()

"""Quantized tensors and quantized pooling: the one meaning every world is held to.

A quantized tensor holds integers ``q`` that stand for the reals ``(q - zero_point) * scale``
(ONNX DequantizeLinear). Quantizing a real ``x`` is ``saturate(round_half_even(x / scale) +
zero_point)`` (QuantizeLinear). A quantized pool is the float pool between the two:

    dequantize the input -> pool by the ONNX rules (ovpool's PoolSpec) -> quantize the result

with the padding of an include-pad average being the real 0 (the zero point in the integer domain).
This is ONNX's QDQ pattern (DequantizeLinear -> AveragePool -> QuantizeLinear), onnxruntime's
com.microsoft QLinearAveragePool, OpenVINO's FakeQuantize -> AvgPool and DirectML's
DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC alike; every converter, executor and validator
reads it from here.

**A quantized pool is exact, not float32.** Its steps are computed exactly on the stored scales and
zero points (float32 values, i.e. rationals): the only rounding is the final round-half-to-even.
A uint8 average of the cells 3 and 4 at zero point 0 and one shared scale is 3.5 exactly, which
rounds to 4 (even); a float32 pipeline computing ``(3*s + 4*s)/2/s`` may land on 3.4999998 or
3.5000002 and round either way. Where float32 arithmetic lands within its rounding error of a tie,
runtimes (onnxruntime included) may differ from this meaning by one step; nowhere else. A lone
QuantizeLinear of a float tensor (``quantize``) is ONNX's float32 division, then the rounding.

Scales are per tensor, or per channel along one axis; zero points too. Element types: uint8, int8,
uint16, int16, uint4, int4, uint2, int2 (held in numpy as uint8/int8/uint16/int16 arrays).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ovpool import kernels, shape
from ovpool.errors import ModelError, UnsupportedError
from ovpool.spec import PoolKind

if TYPE_CHECKING:
    from ovpool.spec import PoolSpec


@dataclass(frozen=True)
class QuantType:
    """An integer element type a quantized tensor may have: its range and numpy storage type."""

    name: str
    low: int
    high: int
    storage: str  # the numpy dtype the integers are held in

    @property
    def levels(self) -> int:
        """Number of integer values: 256 for uint8 and int8, 16 for int4, 4 for int2."""
        return self.high - self.low + 1


QUANT_TYPES: dict[str, QuantType] = {
    row.name: row
    for row in (
        QuantType("uint8", 0, 255, "uint8"),
        QuantType("int8", -128, 127, "int8"),
        QuantType("uint16", 0, 65535, "uint16"),
        QuantType("int16", -32768, 32767, "int16"),
        QuantType("uint4", 0, 15, "uint8"),
        QuantType("int4", -8, 7, "int8"),
        QuantType("uint2", 0, 3, "uint8"),
        QuantType("int2", -2, 1, "int8"),
    )
}


def quant_type(name: str, where: str = "") -> QuantType:
    """The row of a quantized element type; another type is an ``UnsupportedError`` naming ``where``."""
    found = QUANT_TYPES.get(name)
    if found is None:
        prefix = f"{where}: " if where else ""
        raise UnsupportedError(
            f"{prefix}element type {name} is not a quantized integer type ovpool handles ({', '.join(QUANT_TYPES)})"
        )
    return found


@dataclass(frozen=True)
class Quantization:
    """How one tensor is quantized: ``scale`` and ``zero_point`` per tensor (one value each) or per
    channel along ``axis`` (one value per index of that axis), and the integer ``dtype``.

    Checked when made: scales finite and not 0 (ONNX allows a negative one), zero points integers
    inside ``dtype``'s range, and
    per-axis lengths equal. ``where`` names the node or layer in every error
    (``node 'q1': zero point 300 is outside uint8 [0, 255]``).
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    dtype: str = "uint8"
    axis: int | None = None
    where: str = ""

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "scale", tuple(float(np.float32(s)) for s in self.scale))
        setattr_(self, "zero_point", tuple(int(z) for z in self.zero_point))
        kind = quant_type(self.dtype, self.where)
        prefix = f"{self.where}: " if self.where else ""
        if not self.scale:
            raise ModelError(f"{prefix}the scale has no value")
        if len(self.zero_point) == 1 and len(self.scale) > 1:
            setattr_(self, "zero_point", self.zero_point * len(self.scale))
        if len(self.zero_point) != len(self.scale):
            raise ModelError(f"{prefix}{len(self.scale)} scale(s) but {len(self.zero_point)} zero point(s)")
        if self.axis is None and len(self.scale) != 1:
            raise ModelError(f"{prefix}{len(self.scale)} scales need an axis (per-tensor quantization has one)")
        for scale in self.scale:
            if not math.isfinite(scale) or scale == 0:
                raise ModelError(f"{prefix}scale {scale:g} must be finite and non-zero")
        for zero in self.zero_point:
            if not kind.low <= zero <= kind.high:
                raise ModelError(f"{prefix}zero point {zero} is outside {kind.name} [{kind.low}, {kind.high}]")

    @property
    def type(self) -> QuantType:
        return QUANT_TYPES[self.dtype]

    @property
    def per_tensor(self) -> bool:
        return len(self.scale) == 1

    @property
    def increasing(self) -> bool:
        """Every scale positive: larger integers stand for larger reals."""
        return min(self.scale) > 0

    def arrays(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Scale (float64) and zero point (int64) shaped to broadcast over a tensor of ``rank``."""
        scale = np.asarray(self.scale, dtype=np.float64)
        zero = np.asarray(self.zero_point, dtype=np.int64)
        if self.per_tensor:
            return scale.reshape(()), zero.reshape(())
        axis = self.axis if self.axis is not None and self.axis >= 0 else rank + (self.axis or 0)
        shape = [1] * rank
        shape[axis] = len(self.scale)
        return scale.reshape(shape), zero.reshape(shape)

    def check_rank(self, shape: Sequence[int]) -> None:
        """A per-axis quantization fits a tensor of this shape (its axis exists and has one value
        per scale; -1 is a dim not known yet); else a ``ModelError`` naming ``where``."""
        if self.per_tensor:
            return
        prefix = f"{self.where}: " if self.where else ""
        axis = self.axis if self.axis is not None else 0
        if not -len(shape) <= axis < len(shape):
            raise ModelError(f"{prefix}axis {axis} is outside a tensor of rank {len(shape)}")
        if shape[axis] not in (len(self.scale), -1):
            raise ModelError(f"{prefix}{len(self.scale)} per-axis scales for axis {axis} of length {shape[axis]}")

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """The reals ``q`` stands for, exactly, as float64: uint8 130 at zero point 128 and scale
        0.05 (float32 0.0500000007...) is 2 * 0.0500000007... (products of a float32 and an integer
        of up to 17 bits are exact in float64)."""
        self.check_rank(q.shape)
        scale, zero = self.arrays(q.ndim)
        return dequantize(q, scale, zero)

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """``saturate(round_half_even(x / scale) + zero_point)`` of the reals ``x``, exactly."""
        self.check_rank(x.shape)
        scale, zero = self.arrays(x.ndim)
        return quantize(x, scale, zero, self.dtype)


def dequantize(q: np.ndarray, scale: ArrayLike, zero_point: ArrayLike) -> np.ndarray:
    """``(q - zero_point) * scale`` in float64, exact for float32 scales and integers of up to 29
    bits (``scale``, ``zero_point`` broadcast against ``q``)."""
    return (q.astype(np.int64) - np.asarray(zero_point, dtype=np.int64)) * np.asarray(scale, dtype=np.float64)


def quantize(x: ArrayLike, scale: ArrayLike, zero_point: ArrayLike, dtype: str) -> np.ndarray:
    """ONNX QuantizeLinear of a float tensor: ``saturate(round_half_even(x / scale) + zero_point)`` as
    ``dtype``'s integers, where ``x / scale`` is the float32 quotient of the float32 tensors (correctly
    rounded, as ONNX's reference and onnxruntime divide): float32 0.175 over 0.05 is 3.5 in float32
    (3.4999999... exactly) and rounds to 4. NaN quantizes to the zero point (onnxruntime's choice;
    ONNX leaves it undefined)."""
    divided = quotient(x, scale)
    return _finish(np.rint(divided.astype(np.float64)), zero_point, dtype, divided)


def quotient(x: ArrayLike, scale: ArrayLike) -> np.ndarray:
    """QuantizeLinear's ``x / scale``: the float32 quotient of the values as float32, correctly
    rounded (float32 0.175 / 0.05 is 3.5, the exact quotient being 3.4999999...); NaN and
    infinities as float32 gives them, quietly."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.asarray(x, dtype=np.float32) / np.asarray(scale, dtype=np.float32)


def rescale(
    total: ArrayLike, count: ArrayLike, in_scale: ArrayLike, out_scale: ArrayLike, zero_point: ArrayLike, dtype: str
) -> np.ndarray:
    """``saturate(round_half_even(total * in_scale / (count * out_scale)) + zero_point)`` exactly, for
    integer ``total`` (a window's sum of ``q - zero_point``, or one such value) and ``count`` (the
    divisor): the quantized average of a window. Cells 3 and 4 (zero point 0) over 2 at one
    shared scale: 7/2 = 3.5, which rounds to 4."""
    total64 = np.asarray(total, dtype=np.int64)
    count64 = np.broadcast_to(np.asarray(count, dtype=np.int64), total64.shape)
    ratio = np.asarray(in_scale, dtype=np.float64) / np.asarray(out_scale, dtype=np.float64)
    approx = total64 * np.broadcast_to(ratio, total64.shape) / count64
    rounded = np.array(np.rint(approx), dtype=np.float64)  # an array for 0-d inputs too (np.rint gives a scalar)
    near = _near_tie(approx)
    if near.any():
        ins = np.broadcast_to(np.asarray(in_scale, dtype=np.float64), total64.shape)
        outs = np.broadcast_to(np.asarray(out_scale, dtype=np.float64), total64.shape)
        for index in map(tuple, np.argwhere(near)):  # argwhere: 0-d arrays too
            exact = (
                Fraction(int(total64[index])) * Fraction(float(ins[index])) / (int(count64[index]) * Fraction(float(outs[index])))
            )
            rounded[index] = round(exact)
    return _finish(rounded, zero_point, dtype, approx)


@dataclass(frozen=True)
class QuantizedPool:
    """A pooling operation between quantized tensors: ``spec`` pools the dequantized ``input`` and
    the result is quantized as ``output`` says."""

    spec: PoolSpec
    input: Quantization
    output: Quantization

    def __post_init__(self) -> None:
        if self.spec.kind in (PoolKind.MAX, PoolKind.GLOBAL_MAX) and not self.input.increasing:
            raise UnsupportedError(
                f"node '{self.spec.name}': a max pool of a tensor quantized with a negative scale picks its "
                "smallest integer; ovpool has no rule for it"
            )

    @property
    def shares_scales(self) -> bool:
        """Output quantized as the input (a max pool then only picks integers: no rounding at all)."""
        return self.input.scale == self.output.scale and self.input.zero_point == self.output.zero_point

    def run(self, q: np.ndarray) -> np.ndarray:
        """The quantized pool of ``q`` (N, C, *spatial) by the meaning in this module's docstring.

        Averages are computed on integers: each window's sum of ``q - zero_point`` (pads add 0, the
        zero point) over ``shape.divisor_counts``, rescaled exactly by ``rescale``; a max pool picks
        the largest integer (dequantizing is increasing) and rescales it alone."""
        spec = self.spec
        shape.check_input_rank(spec, q.ndim)
        self.input.check_rank(q.shape)
        self.output.check_rank(q.shape[:2] + (1,) * (q.ndim - 2))
        in_scale, in_zero = self.input.arrays(q.ndim)
        out_scale, out_zero = self.output.arrays(q.ndim)
        centred = (q.astype(np.int64) - in_zero).astype(np.float64)  # exact integers
        if spec.kind in (PoolKind.MAX, PoolKind.GLOBAL_MAX):
            picked = kernels.pool(centred, spec.with_(indices=None))
            assert isinstance(picked, np.ndarray)
            return rescale(picked.astype(np.int64), 1, in_scale, out_scale, out_zero, self.output.dtype)
        window = spec.resolve_global(tuple(q.shape[2:]))
        mean = kernels.pool(centred, window)
        assert isinstance(mean, np.ndarray)
        counts = np.ones((), dtype=np.int64)
        for axis_counts in shape.divisor_counts(window, q.shape[2:]):
            counts = np.multiply.outer(counts, axis_counts)
        total = np.rint(mean * counts).astype(np.int64)  # mean = total / count, total < 2**53: exact
        return rescale(total, counts, in_scale, out_scale, out_zero, self.output.dtype)


def _near_tie(approx: np.ndarray) -> np.ndarray:
    """Where a float64 quotient lies within 1e-9 (relative) of a half: there its few ulps of error
    could decide the rounding, and the exact rationals must. Elsewhere ``rint`` is exact."""
    with np.errstate(invalid="ignore"):
        distance = np.abs(approx - np.floor(approx) - 0.5)
        return np.isfinite(approx) & (distance <= 1e-9 * np.maximum(1.0, np.abs(approx)))


def _finish(rounded: np.ndarray, zero_point: ArrayLike, dtype: str, source: np.ndarray) -> np.ndarray:
    kind = quant_type(dtype)
    with np.errstate(invalid="ignore"):
        shifted = rounded + np.asarray(zero_point, dtype=np.float64)
        shifted = np.where(np.isnan(source), np.asarray(zero_point, dtype=np.float64), shifted)
        return np.clip(shifted, kind.low, kind.high).astype(kind.storage)

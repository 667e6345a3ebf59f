"""Interpolate-4/11 and GridSample-9 on numpy.

Zero ``pads_begin``/``pads_end`` first; sizes from ``sizes`` or ``floor(L * (scale + 1e-6))`` in
float32 (``shape_calculation_mode``); each output coordinate maps back by
``coordinate_transformation_mode`` with the scale given (``scales``) or ``out / in`` (``sizes``),
and is the output coordinate itself on an axis whose scale is 1. ``nearest`` rounds it
(``round_prefer_floor`` 2.5 -> 2, ``round_prefer_ceil`` 2.5 -> 3, ``floor``, ``ceil``, ``simple``:
the ceiling on a shrinking axis, else truncation) and clips to the axis; ``linear_onnx`` clamps
it into the axis and weighs the two neighbours; ``cubic`` weighs four (Keys, ``cube_coeff``),
clipping their indices; ``linear`` is OpenVINO's triangle filter over the neighbours inside the
axis, normalised by their weights, widened by ``1/scale`` on every axis when ``antialias`` is set
and some axis shrinks; ``bilinear_pillow``/``bicubic_pillow`` are Pillow's resampling of the two
``axes`` (width first). 4 elements by ``scales`` 1.5, ``asymmetric``, ``nearest``/``floor`` give
6 outputs reading 0 0 1 2 2 3. Integer data is computed in floats and rounded half to even at
the end (as the CPU plugin does), by the Pillow modes half away from zero after each pass (as
Pillow).

GridSample-9 samples 4-D data at a normalized grid (``align_corners``, ``mode`` bilinear, bicubic
or nearest, ``padding_mode`` zeros, border or reflection) with OpenVINO's reference meaning, which
is ONNX GridSample-22's (ovpool's ``engine.ops.gridsample``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, ints_of, layer
from ovpool.engine.ops import gridsample
from ovpool.engine.ops.base import Kernel
from ovpool.engine.ops.gridsample import SAMPLING

_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
_F32 = np.float32


def _source_coordinates(transform: str, n_out: int, n_in: int, scale: np.float32) -> np.ndarray:
    """The input coordinate of each output position, in float32 as OpenVINO computes it: the
    position itself where the scale is 1 or the lengths agree."""
    x = np.arange(n_out, dtype=_F32)
    if scale == 1 or n_out == n_in:
        return x
    half = _F32(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if n_out > 1 else np.zeros(n_out, _F32)
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    return x * _F32(n_in - 1) / _F32(n_out - 1) if n_out > 1 else np.zeros(n_out, _F32)


def _nearest_index(mode: str, c: np.ndarray, shrinking: bool) -> np.ndarray:
    if mode == "round_prefer_floor":
        halfway = c == np.trunc(c) + _F32(0.5)
        return np.where(halfway, np.floor(c), np.sign(c) * np.floor(np.abs(c) + _F32(0.5)))
    if mode == "round_prefer_ceil":
        return np.sign(c) * np.floor(np.abs(c) + _F32(0.5))
    if mode == "floor":
        return np.floor(c)
    if mode == "ceil" or shrinking:
        return np.ceil(c)
    return np.trunc(c)


@dataclass(frozen=True)
class _Taps:
    """One resized axis: output = sum over t of weights[t] * input[indices[t]] along ``axis``
    (weights None: a plain gather of indices[0])."""

    axis: int
    indices: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...] | None


def _cubic_coefficients(s: np.ndarray, a: float) -> tuple[np.ndarray, ...]:
    """Keys' weights of the taps at -1, 0, 1, 2 for the fraction ``s``."""
    a32 = _F32(a)
    s = np.abs(s)
    p, q, r = s + 1, 1 - s, 2 - s
    return (
        ((a32 * p - 5 * a32) * p + 8 * a32) * p - 4 * a32,
        ((a32 + 2) * s - (a32 + 3)) * s * s + 1,
        ((a32 + 2) * q - (a32 + 3)) * q * q + 1,
        ((a32 * r - 5 * a32) * r + 8 * a32) * r - 4 * a32,
    )


def _axis_taps(rule: Mapping[str, Any], axis: int, n_in: int, n_out: int, scale: np.float32, antialias: bool) -> _Taps:
    c = _source_coordinates(rule["transform"], n_out, n_in, scale)
    mode = rule["mode"]
    if mode == "nearest":
        index = _nearest_index(rule["nearest"], c, bool(scale < 1))
        return _Taps(axis, (np.clip(index, 0, n_in - 1).astype(np.intp),), None)
    if mode == "linear_onnx":
        c = np.clip(c, 0, _F32(n_in - 1))
        low = np.minimum(c.astype(np.intp), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        d_low, d_high = np.abs(c - low), np.abs(c - high)
        same = low == high
        d_low, d_high = np.where(same, _F32(0.5), d_low), np.where(same, _F32(0.5), d_high)
        return _Taps(axis, (low, high), (d_high, d_low))
    if mode == "cubic":
        base = np.floor(c)
        weights = _cubic_coefficients(c - base, rule["cube_coeff"])
        indices = tuple(np.clip(base.astype(np.intp) + k - 1, 0, n_in - 1) for k in range(4))
        return _Taps(axis, indices, weights)
    a = scale if antialias else _F32(1)
    r = 2 if scale > 1 else math.ceil(2 / float(a))
    nearest = np.sign(c) * np.floor(np.abs(c) + _F32(0.5))
    offsets = [nearest.astype(np.intp) + k - r for k in range(2 * r + 1)]
    triangle = [np.where((o >= 0) & (o < n_in), np.maximum(_F32(0), 1 - np.abs(a * (c - o))), _F32(0)) for o in offsets]
    total = np.sum(triangle, axis=0)
    safe = np.where(total == 0, _F32(1), total)
    normal = tuple(np.where(total == 0, _F32(0), w / safe) for w in triangle)
    return _Taps(axis, tuple(np.clip(o, 0, n_in - 1) for o in offsets), normal)


def _pillow_taps(axis: int, n_in: int, n_out: int, bicubic: bool, a: float) -> _Taps:
    """Pillow's resampling filter along one axis (``bilinear_pillow``: triangle, support 1;
    ``bicubic_pillow``: Keys with ``cube_coeff``, support 2), widened by ``n_in / n_out`` when
    shrinking, centred on ``(x + 0.5) * n_in / n_out``, normalised over the taps inside the axis.
    4 to 2, bilinear: each output averages 4 inputs with weights 1/8, 3/8, 3/8, 1/8."""
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    support = (2.0 if bicubic else 1.0) * stretch
    size = math.ceil(support) * 2 + 1
    centres = (np.arange(n_out) + 0.5) * scale
    low = np.maximum(np.trunc(centres - support + 0.5).astype(np.intp), 0)
    count = np.minimum(np.trunc(centres + support + 0.5).astype(np.intp), n_in) - low
    k = np.arange(size)[:, None]
    d = np.abs((k + low - centres + 0.5) / stretch)
    if bicubic:
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = (((d - 5) * d + 8) * d - 4) * a
        weights = np.where(d < 1, near, np.where(d < 2, far, 0.0))
    else:
        weights = np.maximum(1 - d, 0.0)
    weights = np.where(k < count, weights, 0.0)
    total = weights.sum(axis=0)
    weights = np.where(total != 0, weights / np.where(total != 0, total, 1), weights)
    return _Taps(axis, tuple(np.clip(j + low, 0, n_in - 1) for j in range(size)), tuple(weights))


def _integer(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Whole-number ``values`` as ``dtype``, clipped to its range."""
    info = np.iinfo(dtype)
    return np.clip(values, info.min, info.max).astype(dtype)


def _apply_taps(x: np.ndarray, taps: _Taps) -> np.ndarray:
    if taps.weights is None:
        return np.take(x, taps.indices[0], axis=taps.axis)
    shape = [1] * x.ndim
    shape[taps.axis] = -1
    total = np.zeros(x.shape[: taps.axis] + (taps.indices[0].size,) + x.shape[taps.axis + 1 :], np.float64)
    for index, weight in zip(taps.indices, taps.weights):
        total += np.take(x, index, axis=taps.axis) * weight.astype(np.float64).reshape(shape)
    return total


@layer("Interpolate", 4, 11)
def interpolate(node: LayerNode) -> Kernel:
    """Interpolate-4 (data, sizes, scales, axes) and -11 (data, scales_or_sizes, axes); the rules
    are in the module text."""
    v11 = node.layer.version == "opset11"
    modes = ("nearest", "linear", "linear_onnx", "cubic") + (("bilinear_pillow", "bicubic_pillow") if v11 else ())
    rule: dict[str, Any] = {
        "mode": node.choice("mode", "nearest", modes),
        "transform": node.choice("coordinate_transformation_mode", "half_pixel", _TRANSFORMS),
        "nearest": node.choice("nearest_mode", "round_prefer_floor", _NEAREST),
        "cube_coeff": node.number("cube_coeff", -0.75),
    }
    pillow = rule["mode"].endswith("_pillow")
    by_sizes = node.choice("shape_calculation_mode", "sizes" if not v11 else "scales", ("sizes", "scales")) == "sizes"
    antialias = node.flag("antialias", False)
    pads = (node.ints("pads_begin", (0,)), node.ints("pads_end", (0,)))

    @functools.lru_cache(maxsize=16)
    def plan(shape: tuple[int, ...], values: tuple[float, ...], axes: tuple[int, ...]) -> tuple[_Taps, ...]:
        if len(values) != len(axes):
            raise node.fail(f"{len(values)} {'sizes' if by_sizes else 'scales'} for axes {list(axes)}")
        scales, outs = [], []
        for value, a in zip(values, axes):
            n = shape[a]
            if by_sizes:
                outs.append(int(value))
                scales.append(_F32(value) / _F32(n) if n else _F32(1))
            else:
                scales.append(_F32(value))
                outs.append(int(_F32(n) * (_F32(value) + _F32(1e-6))))
        if any(o < 0 for o in outs):
            raise node.fail(f"output sizes {outs} are negative")
        if pillow:
            if len(axes) != 2:
                raise node.fail(f"mode {rule['mode']} resizes two axes (height, width), not {list(axes)}")
            bicubic = rule["mode"] == "bicubic_pillow"
            taps = [_pillow_taps(a, shape[a], o, bicubic, rule["cube_coeff"]) for a, o in zip(axes, outs) if o != shape[a]]
            return tuple(reversed(taps))  # the width first, as Pillow
        shrinking = antialias and any(s < 1 for s in scales)
        return tuple(
            _axis_taps(rule, a, shape[a], o, s, shrinking) for a, o, s in zip(axes, outs, scales) if o != shape[a] or s != 1
        )

    def kernel(x: np.ndarray, *inputs: np.ndarray | None) -> tuple[np.ndarray, ...]:
        if v11:
            given, axes_input = inputs[0], inputs[1] if len(inputs) > 1 else None
        else:
            given = inputs[0] if by_sizes else inputs[1]
            axes_input = inputs[2] if len(inputs) > 2 else None
        assert given is not None
        axes = tuple(range(x.ndim))
        if axes_input is not None:
            axes = ints_of(axes_input)
            if any(not -x.ndim <= a < x.ndim for a in axes) or len(set(a % x.ndim for a in axes)) < len(axes):
                raise node.fail(f"axes {list(axes)} do not name distinct axes of a rank-{x.ndim} input")
            axes = tuple(a % x.ndim for a in axes)
        begin = (pads[0] + (0,) * x.ndim)[: x.ndim]
        end = (pads[1] + (0,) * x.ndim)[: x.ndim]
        if any(begin) or any(end):
            x = np.pad(x, list(zip(begin, end)))
        values = tuple(float(v) for v in np.asarray(given).reshape(-1))
        y: np.ndarray = x
        for taps in plan(x.shape, values, axes):
            y = _apply_taps(y, taps)
            if pillow and x.dtype.kind in "iu":  # each pass rounds half away from zero and clips
                y = _integer(np.sign(y) * np.floor(np.abs(y) + 0.5), x.dtype)
        if y.dtype != x.dtype:
            y = _integer(np.rint(y), x.dtype) if x.dtype.kind in "iu" else y.astype(x.dtype)
        return (y,)

    return kernel


@layer("GridSample", 9, traits=SAMPLING)
def grid_sample(node: LayerNode) -> Kernel:
    """GridSample-9: 4-D data sampled at a normalized grid (``align_corners``, ``mode`` bilinear,
    bicubic or nearest, ``padding_mode`` zeros, border or reflection), with OpenVINO's reference
    meaning, which is ONNX GridSample-22's: pixel coordinates in the grid's float type, nearest
    rounded half to even, padding applied to each pixel read (a single pixel reflects onto itself)."""
    mode = node.choice("mode", "bilinear", ("bilinear", "bicubic", "nearest"))
    padding = node.choice("padding_mode", "zeros", ("zeros", "border", "reflection"))
    rule = gridsample.Sampling(
        {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode), padding, node.flag("align_corners", False), 4
    )

    def kernel(data: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(invalid="ignore", over="ignore"):
            return (gridsample.grid_sample(data, grid, rule, node),)

    return kernel

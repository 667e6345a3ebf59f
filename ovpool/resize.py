"""Resize (10, 11, 13, 18, 19) and Upsample (7, 9)'s meaning, beside the pooling kernels: one rule per
version, the per-axis tables of source indices and weights, and the same tables as matrices.

The numpy executor applies the tables (``ovpool.engine.ops.resize``); OpenVINO's lowering of a
Resize its frontend converts wrong multiplies by the matrices (``axis_matrices``). A node is read
as an ``ovpool.nodes.OpNode``.

Every output coordinate ``x`` on a resized axis maps to a source coordinate ``x_original`` (the
``coordinate_transformation_mode``); ``nearest`` rounds it to one input index, ``linear`` weighs the
two inputs around it, ``cubic`` the four (Keys' kernel with ``cubic_coeff_a``), ``antialias``
(Resize-18+) stretches the linear/cubic filter by ``1/scale`` when downscaling. The result is
separable, so the kernel works axis by axis: per axis it holds a table of source indices (and
weights), built once per input shape and ``roi``/``scales``/``sizes`` values, and applies it with one
``np.take`` per tap and a weighted sum. Axis sizes and coordinates are computed in float32, the
``scales`` input's own type, as onnxruntime does:

- sizes from scales: ``floor(in * scale)``; 3 * float32(7/3) is 7.0 in float32 (6.99999976 in exact
  arithmetic), so the output has 7 elements. With ``tf_crop_and_resize`` the roi extent counts too,
  ``floor(in * (end - start) * scale)``, as the schema says: 10 elements, roi 0.2..0.8, scale 1.5
  give 9 (onnxruntime ignores the roi and gives 15).
- from ``sizes`` the scale is ``sizes / in``; Resize-18's ``keep_aspect_ratio_policy`` not_larger
  takes the smallest ``sizes[i] / in[axes[i]]`` for every axis of ``axes`` and rounds
  ``scale * in`` half up: (1, 1, 2, 4) to sizes (7, 8) on axes (2, 3) has scale min(3.5, 2) = 2 and
  gives (1, 1, 4, 8).
- ``half_pixel``: ``x_original = (x + 0.5) / scale - 0.5`` with the given scale (not
  ``out / in``): 4 elements at scale 0.6 give 2 outputs read at 0.333 and 2.0.
- ``align_corners``: ``x * (in - 1) / (out - 1)`` with the integer output length; a single output
  reads element 0 (the schema divides by zero there).
- Resize-10 and Upsample are ``asymmetric`` (``x / scale``); their nearest pixel is the floor, or
  the ceiling on an axis whose scale is below 1 (onnxruntime's and OpenVINO's "simple" rounding):
  10 elements at scale 0.6 give indices 0 2 4 5 7 9.

``linear`` on an integer tensor computes in float64 and truncates toward zero like onnxruntime
(0.75 becomes 0; onnxruntime sums in float32, so int32 values beyond 2**24 can differ by a few
units); ``cubic`` also clips to the type's range. float16 and bfloat16 compute in float32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ovpool.memory import check_tensor
from ovpool.nodes import OpNode, normalize_axes

_MODES = ("nearest", "linear", "cubic")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
_POLICIES = ("stretch", "not_larger", "not_smaller")
_CACHED_PLANS = 16
_F32 = np.float32


@dataclass(frozen=True)
class _Rule:
    """A node's attributes, defaults applied. ``nearest`` is one of ``_NEAREST_MODES`` or ``"simple"``
    (Resize-10/Upsample: floor, ceiling when the axis shrinks)."""

    mode: str
    transform: str
    nearest: str
    cubic_a: float
    exclude_outside: bool
    extrapolation: float
    antialias: bool
    axes: tuple[int, ...] | None
    policy: str


@dataclass(frozen=True)
class _Step:
    """One resized axis: ``indices[t]`` are the sources of tap ``t`` for every output position,
    ``weights[t]`` (None for a gather) their weights shaped to broadcast along ``axis``; ``outside``
    marks the outputs that take ``extrapolation_value``."""

    axis: int
    indices: tuple[np.ndarray, ...]
    weights: tuple[np.ndarray, ...] | None
    outside: np.ndarray | None


@dataclass(frozen=True)
class _Plan:
    steps: tuple[_Step, ...]
    compute: np.dtype | None  # dtype of the weighted sums; None when every step is a gather


def _choice(node: OpNode, name: str, default: str, allowed: Sequence[str]) -> str:
    value = node.attr(name, default)
    if value not in allowed:
        raise node.fail(f"'{value}' is not one of {', '.join(allowed)}", name)
    return str(value)


def _flag(node: OpNode, name: str) -> bool:
    value = node.attr(name, 0)
    if value not in (0, 1):
        raise node.fail(f"{value} is neither 0 nor 1", name)
    return bool(value)


def _known_attributes(node: OpNode) -> None:
    """An attribute the schema of ``node.since`` does not have (``axes`` on Resize-13) is an error."""
    known = onnx.defs.get_schema(node.op_type, node.since).attributes
    for name in node.attrs:
        if name not in known:
            raise node.fail(f"is not an attribute of {node.op_type}-{node.since}", name)


def _rule(node: OpNode, transforms: Sequence[str]) -> _Rule:
    """Resize-11+ attributes with their schema defaults."""
    _known_attributes(node)
    axes = node.attr("axes")
    return _Rule(
        mode=_choice(node, "mode", "nearest", _MODES),
        transform=_choice(node, "coordinate_transformation_mode", "half_pixel", transforms),
        nearest=_choice(node, "nearest_mode", "round_prefer_floor", _NEAREST_MODES),
        cubic_a=float(node.attr("cubic_coeff_a", -0.75)),
        exclude_outside=_flag(node, "exclude_outside"),
        extrapolation=float(node.attr("extrapolation_value", 0.0)),
        antialias=_flag(node, "antialias"),
        axes=None if axes is None else tuple(int(a) for a in axes),
        policy=_choice(node, "keep_aspect_ratio_policy", "stretch", _POLICIES),
    )


def _simple_rule(node: OpNode) -> _Rule:
    """Resize-10 and Upsample: ``mode`` nearest or linear, asymmetric coordinates, "simple" nearest."""
    _known_attributes(node)
    mode = _choice(node, "mode", "nearest", ("nearest", "linear"))
    return _Rule(mode, "asymmetric", "simple", -0.75, False, 0.0, False, None, "stretch")


# --- sizes and coordinates -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Axis:
    """What one resized axis needs: lengths, the scale of the coordinate formulas, the roi extent and
    the fractional target length (``half_pixel_symmetric``)."""

    n_in: int
    n_out: int
    scale: np.float32
    start: np.float32
    end: np.float32
    width: np.float32


def _values(array: np.ndarray | None) -> np.ndarray | None:
    """An optional 1-D input; an empty tensor counts as omitted."""
    if array is None:
        return None
    array = np.asarray(array)
    return array.reshape(-1) if array.size else None


def _axes_of(node: OpNode, rule: _Rule, rank: int) -> tuple[int, ...]:
    if rule.axes is None:
        return tuple(range(rank))
    return normalize_axes(node, rule.axes, rank)


def _resolve(
    node: OpNode,
    rule: _Rule,
    shape: tuple[int, ...],
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
) -> dict[int, _Axis]:
    """Every axis that ``axes`` (or the rank) names, with its output length and scale."""
    axes = _axes_of(node, rule, len(shape))
    roi, scales, sizes = _values(roi), _values(scales), _values(sizes)
    if scales is not None and sizes is not None:
        raise node.fail("has both 'scales' and 'sizes'; only one of them may be given")
    if scales is None and sizes is None:
        raise node.fail("has neither 'scales' nor 'sizes'; one of them is needed")
    given = scales if scales is not None else sizes
    assert given is not None
    if given.size != len(axes):
        what = "scales" if scales is not None else "sizes"
        raise node.fail(f"input '{what}' has {given.size} values for {len(axes)} axes of a rank-{len(shape)} input")
    starts, ends = [_F32(0)] * len(axes), [_F32(1)] * len(axes)
    if rule.transform == "tf_crop_and_resize":
        if roi is None or roi.size != 2 * len(axes):
            raise node.fail(f"tf_crop_and_resize needs 'roi' with {2 * len(axes)} values, got {0 if roi is None else roi.size}")
        values = roi.astype(_F32)
        starts, ends = list(values[: len(axes)]), list(values[len(axes) :])
    lengths = [shape[a] for a in axes]
    if any(n == 0 for n in lengths) and sizes is not None and any(s != 0 for s, n in zip(sizes, lengths) if n == 0):
        raise node.fail(f"cannot resize an empty axis to sizes {sizes.tolist()}")
    if scales is not None:
        factors = scales.astype(_F32)
        if not np.all((factors > 0) & np.isfinite(factors)):
            raise node.fail(f"input 'scales' {scales.tolist()} must be finite and greater than 0")
        widths = [_F32(n) * (e - s) * f for n, s, e, f in zip(lengths, starts, ends, factors)]
        if not all(np.isfinite(w) and w >= 0 for w in widths):
            raise node.fail(
                f"roi {roi.tolist() if roi is not None else None} with scales {scales.tolist()} gives no output length"
            )
        out = [int(np.floor(w)) for w in widths]
        widths = [_F32(n) * f for n, f in zip(lengths, factors)]
    else:
        assert sizes is not None
        wanted = sizes.astype(np.int64)
        if np.any(wanted < 0):
            raise node.fail(f"input 'sizes' {wanted.tolist()} must not be negative")
        if rule.policy == "stretch":
            out = [int(s) for s in wanted]
            factors = np.array([_F32(s) / _F32(n) if n else _F32(1) for s, n in zip(wanted, lengths)], _F32)
        else:
            ratios = [_F32(s) / _F32(n) for s, n in zip(wanted, lengths) if n]
            common = (min if rule.policy == "not_larger" else max)(ratios) if ratios else _F32(1)
            factors = np.full(len(axes), common, _F32)
            out = [int(np.floor(common * _F32(n) + _F32(0.5))) for n in lengths]
        widths = [_F32(n) * f for n, f in zip(lengths, factors)]
    return {a: _Axis(n, o, f, s, e, w) for a, n, o, f, s, e, w in zip(axes, lengths, out, factors, starts, ends, widths)}


def _coordinates(transform: str, axis: _Axis) -> np.ndarray:
    """``x_original`` of every output position, in float32: half_pixel at scale 2 maps 0, 1, 2 to
    -0.25, 0.25, 0.75."""
    x = np.arange(axis.n_out, dtype=_F32)
    half, scale, n_in, n_out = _F32(0.5), axis.scale, _F32(axis.n_in), _F32(axis.n_out)
    if transform == "half_pixel" or (transform == "pytorch_half_pixel" and axis.n_out > 1):
        return (x + half) / scale - half
    if transform == "half_pixel_symmetric":
        offset = n_in / _F32(2) * (_F32(1) - n_out / axis.width)
        return offset + (x + half) / scale - half
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    if transform == "align_corners" and axis.n_out > 1:
        return x * (n_in - _F32(1)) / (n_out - _F32(1))
    if transform == "tf_crop_and_resize":
        if axis.n_out > 1:
            return axis.start * (n_in - _F32(1)) + x * (axis.end - axis.start) * (n_in - _F32(1)) / (n_out - _F32(1))
        return np.full(1, half * (axis.start + axis.end) * (n_in - _F32(1)), _F32)
    return np.zeros(axis.n_out, _F32)  # pytorch_half_pixel and align_corners with one output


def _nearest(rule: _Rule, axis: _Axis, c: np.ndarray) -> np.ndarray:
    """The input index of each coordinate (float64 holds the float32 ties exactly): round_prefer_floor
    sends 1.5 to 1, round_prefer_ceil to 2."""
    if rule.nearest == "round_prefer_floor":
        index = np.ceil(c - 0.5)
    elif rule.nearest == "round_prefer_ceil":
        index = np.floor(c + 0.5)
    elif rule.nearest == "ceil" or (rule.nearest == "simple" and axis.scale < 1):
        index = np.ceil(c)
    else:
        index = np.floor(c)
    return np.clip(index, 0, axis.n_in - 1).astype(np.intp)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel: 1 at 0, 0 at 1 and from 2 on; a=-0.75 at 0.5 gives 0.59375."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(label: str, rule: _Rule, axis: _Axis, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights, (n_out, taps) each. linear: 2 taps (the coordinate clamped into
    the axis, which is what edge replication gives); cubic: 4 taps, the ones outside the axis
    replicated or, with exclude_outside, dropped and the rest renormalised; antialias below scale 1:
    every input within support/scale, the filter evaluated at distance*scale, weights normalised."""
    support = 1 if rule.mode == "linear" else 2
    stretch = min(float(axis.scale), 1.0) if rule.antialias else 1.0
    if rule.mode == "linear" and not rule.antialias:
        c = np.clip(c, 0, axis.n_in - 1)
    if stretch < 1:
        radius = support / stretch
        first = np.floor(c - radius) + 1
        count = int(np.ceil(2 * radius)) + 1
    else:
        first = np.floor(c) - (support - 1)
        count = 2 * support
    # Antialias at scale 1e-8 gives each output 2 * 10**8 + 1 linear taps: a table many times the input.
    check_tensor(f"{label} taps", [axis.n_out, count], "float64")
    index = first[:, None] + np.arange(count)
    distance = (index - c[:, None]) * stretch
    if rule.mode == "linear":
        weight = np.maximum(0.0, 1.0 - np.abs(distance))
    else:
        weight = _cubic(distance, rule.cubic_a)
    inside = (index >= 0) & (index <= axis.n_in - 1)
    if rule.exclude_outside:
        weight = np.where(inside, weight, 0.0)
    if rule.exclude_outside or stretch < 1:
        weight = weight / weight.sum(axis=1, keepdims=True)
    return np.clip(index, 0, axis.n_in - 1).astype(np.intp), weight


def _step(label: str, rule: _Rule, a: int, axis: _Axis, rank: int, compute: np.dtype | None) -> _Step | None:
    """The table of one axis, or None when it maps every element to itself. Its arrays are sized by
    the axis's output length alone, held to the memory budget before they exist (``label`` names
    them): with sizes (1, 0, 2**40) a (1, 0, 2) input has an empty output but 2**40 coordinates."""
    if axis.n_out == 0:
        return _Step(a, (np.zeros(0, np.intp),), None, None)
    check_tensor(f"{label} coordinates", [axis.n_out], "float32")
    c32 = _coordinates(rule.transform, axis)
    outside = None
    if rule.transform == "tf_crop_and_resize":
        off = (c32 < 0) | (c32 > axis.n_in - 1)
        outside = off if off.any() else None
    unchanged = axis.n_out == axis.n_in and np.array_equal(c32, np.arange(axis.n_in, dtype=_F32))
    if unchanged and outside is None and not (rule.antialias and axis.scale < 1 and rule.mode != "nearest"):
        return None
    check_tensor(f"{label} coordinates", [axis.n_out], "float64")  # and as many intp indices
    c = c32.astype(np.float64)
    if rule.mode == "nearest" or compute is None:
        return _Step(a, (_nearest(rule, axis, c),), None, outside)
    index, weight = _taps(label, rule, axis, c)
    keep = np.any(weight != 0, axis=0)  # taps that never weigh anything (antialias over-count)
    index, weight = index[:, keep], weight[:, keep]
    along = (axis.n_out,) + (1,) * (rank - a - 1)
    weights = tuple(np.ascontiguousarray(weight[:, t]).astype(compute).reshape(along) for t in range(weight.shape[1]))
    return _Step(a, tuple(np.ascontiguousarray(index[:, t]) for t in range(index.shape[1])), weights, outside)


def _compute_dtype(node: OpNode, rule: _Rule, dtype: np.dtype) -> np.dtype | None:
    """Where weighted sums happen: float32 for float16/bfloat16/float32, float64 for float64 and
    integers, the complex type itself; None for nearest (a gather keeps any type)."""
    if rule.mode == "nearest":
        return None
    if dtype.kind in "iu":
        return np.dtype(np.float64)
    if dtype.kind in "fcV":
        try:
            return np.promote_types(dtype, _F32)
        except TypeError:
            pass
    raise node.fail(f"{rule.mode} interpolation of {dtype} data is not defined")


def _plan(node: OpNode, rule: _Rule, x: np.ndarray, roi: Any, scales: Any, sizes: Any) -> _Plan:
    """The steps of every version of Resize and Upsample: the one place (with the tables of
    ``_step``) where their sizes are held to the memory budget before any array exists. (1, 1, 2, 2)
    float32 at scales (1, 1, 20000, 20000) gives (1, 1, 40000, 40000): 6.0 GiB, refused."""
    axes = _resolve(node, rule, x.shape, roi, scales, sizes)
    out_dims = tuple(axes[a].n_out if a in axes else n for a, n in enumerate(x.shape))
    check_tensor(f"{node.label}: output", out_dims, x.dtype.name, x.dtype.itemsize)
    compute = _compute_dtype(node, rule, x.dtype)
    # shrinking axes first (less data for the others), then the innermost (its gathers cost most)
    order = sorted(axes, key=lambda a: (axes[a].n_out / max(axes[a].n_in, 1), -a))
    steps = [_step(f"{node.label}: axis {a}", rule, a, axes[a], x.ndim, compute) for a in order]
    kept = tuple(s for s in steps if s is not None)
    plan = _Plan(kept, compute if any(s.weights is not None for s in kept) else None)
    if plan.compute is not None and plan.compute.itemsize > x.dtype.itemsize:
        # Weighted sums run in the wider compute type (float64 for integers, float32 for float16) on
        # arrays no larger than the input or the output, whichever is larger.
        work = out_dims if math.prod(out_dims) >= x.size else x.shape
        check_tensor(f"{node.label}: {plan.compute.name} work", work, plan.compute.name, plan.compute.itemsize)
    return plan


# --- the same meaning as matrices, for the OpenVINO lowering ---------------------------------------


@dataclass(frozen=True)
class AxisMatrix:
    """One resized axis as a matrix: output ``o`` on ``axis`` is ``sum_i weights[o, i] * x[i]``
    (float64, shape (n_out, n_in)); ``outside`` (None: none) marks the outputs that take the
    extrapolation value instead."""

    axis: int
    weights: np.ndarray
    outside: np.ndarray | None


def axis_matrices(node: OpNode, shape: tuple[int, ...], roi: Any, scales: Any, sizes: Any) -> tuple[AxisMatrix, ...]:
    """The Resize node's meaning on an input of ``shape`` as one matrix per axis it changes,
    from the very tables the kernel applies (Resize is separable: applying the matrices one axis
    after the other is the kernel's result up to float rounding; an axis it leaves alone has no
    matrix). Linear, half_pixel, 4 elements to
    2 (scale 0.5): each output reads 0.5 of two inputs, ``[[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]]``;
    with antialias, ``[[0.5, 0.375, 0.125, 0], [0, 0.125, 0.375, 0.5]]`` (the filter stretched
    over 4 inputs, renormalised where it leaves the axis)."""
    transforms = (*_TRANSFORMS, "half_pixel_symmetric") if node.since >= 19 else _TRANSFORMS
    rule = _simple_rule(node) if node.since < 11 else _rule(node, transforms)
    axes = _resolve(node, rule, tuple(shape), roi, scales, sizes)
    compute = None if rule.mode == "nearest" else np.dtype(np.float64)
    matrices = []
    for a in sorted(axes):
        step = _step(f"{node.label}: axis {a}", rule, a, axes[a], len(shape), compute)
        if step is None:
            continue
        n_out = len(step.indices[0])
        weights = np.zeros((n_out, axes[a].n_in))
        rows = np.arange(n_out)
        taps = step.weights if step.weights is not None else (np.ones(n_out),) * len(step.indices)
        for index, weight in zip(step.indices, taps):
            np.add.at(weights, (rows, index), np.asarray(weight, np.float64).reshape(-1))
        matrices.append(AxisMatrix(a, weights, step.outside))
    return tuple(matrices)

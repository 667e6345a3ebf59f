"""Resize (10, 11, 13, 18, 19) and Upsample (7, 9; 10 is deprecated) on numpy, each version with its own meaning.

The meaning (coordinates, rounding, filters, sizes from scales) is ``ovpool.resize``'s: per axis a
table of source indices (and weights), built once per input shape and ``roi``/``scales``/``sizes``
values; the kernel here applies it with one ``np.take`` per tap and a weighted sum, in buffers kept
from call to call. ``axis_matrices`` (the same tables as matrices) is ``ovpool.resize``'s too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, register
from ovpool.resize import _CACHED_PLANS, _F32, _TRANSFORMS, _Plan, _plan, _Rule, _rule, _simple_rule
from ovpool.resize import AxisMatrix as AxisMatrix  # moved to ovpool.resize; still here
from ovpool.resize import axis_matrices as axis_matrices


class _Scratch(threading.local):
    """One thread's buffers for a kernel's intermediate arrays, kept from call to call: a fresh 6 MB
    array costs its ~1600 pages in page faults on every call, more than the arithmetic on it."""

    def __init__(self) -> None:
        self.buffers: dict[Any, np.ndarray] = {}

    def get(self, role: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        key = (role, shape, dtype)
        buffer = self.buffers.get(key)
        if buffer is None:
            if len(self.buffers) >= 4 * _CACHED_PLANS:
                self.buffers.clear()
            buffer = self.buffers[key] = np.empty(shape, dtype)
        return buffer


def _apply(plan: _Plan, rule: _Rule, x: np.ndarray, scratch: _Scratch) -> np.ndarray:
    """The steps in order; every intermediate lives in ``scratch``, only the result is a new array."""
    y = x
    if plan.compute is not None and x.dtype != plan.compute:
        y = scratch.get("input", x.shape, plan.compute)
        np.copyto(y, x, casting="unsafe")
    cast = y.dtype != x.dtype
    for i, step in enumerate(plan.steps):
        shape = y.shape[: step.axis] + (len(step.indices[0]),) + y.shape[step.axis + 1 :]
        last = i == len(plan.steps) - 1 and not cast
        out = np.empty(shape, y.dtype) if last else scratch.get(i, shape, y.dtype)
        np.take(y, step.indices[0], axis=step.axis, out=out, mode="clip")
        if step.weights is not None:
            out *= step.weights[0]
            term = scratch.get("term", shape, y.dtype)
            for index, weight in zip(step.indices[1:], step.weights[1:]):
                np.take(y, index, axis=step.axis, out=term, mode="clip")
                term *= weight
                out += term
        y = out
    if y is x:
        y = x.copy()
    if cast:
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            y = np.clip(np.trunc(y), info.min, info.max)
        y = y.astype(x.dtype)
    for step in plan.steps:
        if step.outside is not None:
            y[(slice(None),) * step.axis + (step.outside,)] = _fill(rule.extrapolation, y.dtype)
    return y


def _fill(value: float, dtype: np.dtype) -> np.ndarray:
    """extrapolation_value in the output type; an integer type takes it truncated toward zero and
    wrapped like a C cast through a wide integer, as onnxruntime does: -1.0 is 255 in uint8, 2.7 is 2."""
    if dtype.kind in "iu":
        return np.array(np.clip(np.trunc(value), -(2.0**63), 2.0**63 - 1024)).astype(np.int64).astype(dtype)
    return np.array(value).astype(dtype)


def _key(array: Any) -> Any:
    if array is None:
        return None
    array = np.asarray(array)
    return (array.dtype.str, array.shape, array.tobytes())


def _kernel(node: OpNode, rule: _Rule, check: Any = None) -> Kernel:
    """The kernel ``(x, roi, scales, sizes)``; plans cached per input shape, dtype and input values."""
    plans: dict[Any, _Plan] = {}
    scratch = _Scratch()

    def resize(x: np.ndarray, roi: Any = None, scales: Any = None, sizes: Any = None) -> tuple[np.ndarray, ...]:
        x = np.asarray(x)
        key = (x.shape, x.dtype, _key(roi), _key(scales), _key(sizes))
        plan = plans.get(key)
        if plan is None:
            if check is not None:
                check(x, scales)
            plan = _plan(node, rule, x, roi, scales, sizes)
            if len(plans) >= _CACHED_PLANS:
                plans.clear()
            plans[key] = plan
        return (_apply(plan, rule, x, scratch),)

    return resize


# --- the versions ----------------------------------------------------------------------------------


def _upsample_scales(node: OpNode) -> Any:
    """Upsample's scales: one per axis, each at least 1 (4-D scales (1, 1, 2, 3) make 2x3 blocks)."""

    def check(x: np.ndarray, scales: Any) -> None:
        values = np.asarray(scales, _F32).reshape(-1)
        if values.size != x.ndim:
            raise node.fail(f"scales {values.tolist()} must have one value per axis of the rank-{x.ndim} input", "scales")
        if not np.all(values >= 1):
            raise node.fail(f"scales {values.tolist()} must be at least 1", "scales")

    return check


@register("Upsample", 7, 8)
def upsample_7(node: OpNode) -> Kernel:
    """Upsample-7: the ``scales`` attribute (>= 1 per axis), asymmetric coordinates, nearest takes
    the floor: (1, 1, 2, 2) of scales 1, 1, 1.5, 1.5 reads rows 0, 0, 1 (0/1.5, 1/1.5, 2/1.5)."""
    rule = _simple_rule(node)
    if "scales" not in node.attrs:
        raise node.fail("is required", "scales")
    scales = np.asarray(node.attrs["scales"], _F32)
    check = _upsample_scales(node)
    resize = _kernel(node, rule, check)
    return lambda x: resize(x, None, scales, None)


@register("Upsample", 9, 9)
def upsample_9(node: OpNode) -> Kernel:
    """Upsample-9: Upsample-7 with ``scales`` as the second input."""
    rule = _simple_rule(node)
    resize = _kernel(node, rule, _upsample_scales(node))
    return lambda x, scales: resize(x, None, scales, None)


@register("Upsample", 10)
def upsample_10(node: OpNode) -> Kernel:
    """Upsample-10 is deprecated (the schema exists only to say so): an opset-10+ model uses Resize."""
    raise node.fail("Upsample is deprecated from opset 10 on; the model must use Resize")


@register("Resize", 10, 10)
def resize_10(node: OpNode) -> Kernel:
    """Resize-10: inputs X and scales (> 0), mode nearest or linear, asymmetric coordinates; the
    nearest index is the floor of ``x / scale``, the ceiling where the scale is below 1: 10 elements
    at 0.6 give 6 outputs reading 0, 2, 4, 5, 7, 9 (0, 1.67, 3.33, 5, 6.67, 8.33 rounded up)."""
    resize = _kernel(node, _simple_rule(node))
    return lambda x, scales: resize(x, None, scales, None)


def _resize(node: OpNode, transforms: Sequence[str]) -> Kernel:
    rule = _rule(node, transforms)
    return _kernel(node, rule)


@register("Resize", 11, 12)
def resize_11(node: OpNode) -> Kernel:
    """Resize-11: inputs X, roi, scales (empty when sizes is given), sizes; modes nearest, linear,
    cubic; six coordinate transformations, tf_half_pixel_for_nn among them: (x + 0.5) / scale, so at
    scale 2 output 1 reads 0.75, floor(0.75 + 0.5) = 1 with round_prefer_floor."""
    return _resize(node, _TRANSFORMS)


@register("Resize", 13, 17)
def resize_13(node: OpNode) -> Kernel:
    """Resize-13: Resize-11 with roi and scales optional (an empty name or an empty tensor).
    tf_half_pixel_for_nn left the schema text here; exporters (tf2onnx) still write it and
    onnxruntime runs it, so it keeps its Resize-11 meaning."""
    return _resize(node, _TRANSFORMS)


@register("Resize", 18, 18)
def resize_18(node: OpNode) -> Kernel:
    """Resize-18: ``axes`` (the axes roi/scales/sizes name; the others keep their length),
    ``antialias`` (linear/cubic below scale 1 widen the filter: linear at scale 0.5 weighs 4 inputs
    at 1/8, 3/8, 3/8, 1/8) and ``keep_aspect_ratio_policy`` for sizes."""
    return _resize(node, _TRANSFORMS)


@register("Resize", 19)
def resize_19(node: OpNode) -> Kernel:
    """Resize-19: Resize-18 plus half_pixel_symmetric, which centres the sampled span when floor
    cut the output: 10 elements at scale 0.55 give 5 outputs (5.5 wanted), offset 5 * (1 - 5/5.5)."""
    return _resize(node, (*_TRANSFORMS, "half_pixel_symmetric"))

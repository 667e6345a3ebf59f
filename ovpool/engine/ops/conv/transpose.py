"""The ConvTranspose operator (versions 1, 11, 22): one matmul ``W^T @ X`` per group, then col2im
(one flat add per kernel tap into the stride's phase planes); the crop of the full output by
version (``split_version1``, ``split_version11``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

import numpy as np

from ovpool.engine.memo import dtype_name
from ovpool.engine.ops.base import Kernel, OpNode, Traits, register
from ovpool.engine.ops.conv.attributes import Attrs, _check_bias, _check_kernel, _compute_dtype, parse
from ovpool.engine.ops.conv.forward import CONV_WORK
from ovpool.memory import check_tensor, fits


@dataclass(frozen=True)
class TransposePlan:
    """How one ConvTranspose runs: the crop (negative: extension) of the full output at each end."""

    group: int
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    out: tuple[int, ...]


Split = Callable[[int, str, bool], int]


def split_version1(total: int, auto_pad: str, from_output_shape: bool) -> int:
    """ConvTranspose-1's crop at the start: with output_shape, ``total // 2`` unless SAME_UPPER
    (``total - total // 2``); SAME without output_shape follows its auto_pad text (the odd one at
    the end for SAME_UPPER)."""
    if from_output_shape:
        return total - total // 2 if auto_pad == "SAME_UPPER" else total // 2
    return total // 2 if auto_pad == "SAME_UPPER" else total - total // 2


def split_version11(total: int, auto_pad: str, from_output_shape: bool) -> int:
    """ConvTranspose-11/22's crop at the start: ``total // 2`` for SAME_UPPER, ``total - total // 2``
    otherwise, with or without output_shape."""
    return total // 2 if auto_pad == "SAME_UPPER" else total - total // 2


def transpose_plan(node: OpNode, attrs: Attrs, split: Split, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> TransposePlan:
    """Check X against W; the output size and start crop as the version states them."""
    _check_kernel(node, attrs, w_shape)
    rank = len(w_shape) - 2
    if len(x_shape) != rank + 2:
        raise node.fail(f"X has shape {list(x_shape)}, W {list(w_shape)}: X needs rank {rank + 2}")
    group = attrs.group
    if x_shape[1] != w_shape[0] or x_shape[1] % group:
        raise node.fail(f"X has {x_shape[1]} channels, W {w_shape[0]} input channels, {group} groups", "group")
    strides, dilations, begin, end = attrs.per_axis(node, rank)
    padding = attrs.output_padding or (0,) * rank
    if node.since >= 11:
        for p, s, d in zip(padding, strides, dilations):
            if p >= max(s, d):
                raise node.fail(f"{list(padding)}: {p} is not less than max(stride {s}, dilation {d})", "output_padding")
    sizes = x_shape[2:]
    full = [s * (n - 1) + (k - 1) * d + 1 + p for s, n, k, d, p in zip(strides, sizes, w_shape[2:], dilations, padding)]
    if attrs.output_shape is not None or attrs.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = attrs.output_shape or tuple(n * s for n, s in zip(sizes, strides))
        begin = tuple(max(0, split(f - o, attrs.auto_pad, attrs.output_shape is not None)) for f, o in zip(full, out))
    elif attrs.auto_pad == "VALID":
        out, begin = tuple(full), (0,) * rank
    else:
        out = tuple(f - b - e for f, b, e in zip(full, begin, end))
        if any(o < 1 for o in out):
            raise node.fail(f"{list(begin + end)} crop the whole output of size {full}", "pads")
    # An axis with one input cell writes from position 0 only: its stride is never used, and col2im
    # splits each axis into `stride` phases (strides 2**32 over 1 cell: stride 1).
    strides = tuple(1 if n == 1 else s for s, n in zip(strides, sizes))
    return TransposePlan(group, strides, dilations, tuple(begin), tuple(out))


def transpose_weights(w: np.ndarray, group: int, dtype: np.dtype) -> np.ndarray:
    """W (C, M/g, *k) as (g, M/g*K, C/g): its rows give one output channel and tap each."""
    c, rest = w.shape[0], math.prod(w.shape[1:])  # a size, not -1: W of no input channels has none
    return np.ascontiguousarray(w.astype(dtype, copy=False).reshape(group, c // group, rest).transpose(0, 2, 1))


def _phase_range(phase: int, s: int, start: int, extent: int, out: int) -> tuple[slice, slice] | None:
    """Rows q of a phase plane (full output positions ``phase + q * s``) that land in the output,
    ``0 <= phase + q * s - start < out``, as (phase plane, output) slices."""
    lo = max(0, -((phase - start) // s))
    hi = min(extent - 1, (out - 1 + start - phase) // s)
    if lo > hi:
        return None
    first = phase + lo * s - start
    return slice(lo, hi + 1), slice(first, first + (hi - lo) * s + 1, s)


def _transpose_run(x: np.ndarray, wt: np.ndarray, plan: TransposePlan, kernel: tuple[int, ...]) -> np.ndarray:
    """``cols = W^T @ X`` per group, then col2im over phase planes.

    Full output position ``i * s + t * d`` is row ``i + t * d // s`` of phase ``t * d % s`` (the
    positions congruent to it mod s). With X's rows laid out at the phase planes' pitch (zero
    columns added), each tap's (N, M, *L) block of cols lands in its phase plane at one flat offset:
    one flat add per tap over runs of a whole plane (the added zero columns spill harmlessly). The
    phases are then copied to their strided places in the output (s1 * s2 copies), cropped by the
    pads or extended where no input reaches. 4x4 kernel, stride 2 over 16x16: 16 adds into 4 phase
    planes of 17x17, then 4 copies. When
    (k - 1) * d < s every tap has a phase of its own (2x2, stride 2): its block of cols is copied
    straight to the output."""
    n, c = x.shape[:2]
    g = plan.group
    sizes = x.shape[2:]
    taps = list(product(*(range(k) for k in kernel)))
    m = g * (wt.shape[1] // len(taps))
    strides, dilations = plan.strides, plan.dilations
    extents = tuple(size + (k - 1) * d // s for size, k, d, s in zip(sizes, kernel, dilations, strides))
    plane = math.prod(extents)
    pitches = [math.prod(extents[i + 1 :]) for i in range(len(kernel))]
    run = sizes[0] * math.prod(extents[1:])
    if extents[1:] != sizes[1:]:
        pitched = np.zeros((n, c, sizes[0]) + extents[1:], dtype=x.dtype)
        pitched[(slice(None), slice(None), slice(None)) + tuple(slice(0, size) for size in sizes[1:])] = x
        x = pitched
    cols = np.matmul(wt, x.reshape(n, g, c // g, run)).reshape(n, m, len(taps), run)
    residues = [tuple(t * d % s for t, d, s in zip(tap, dilations, strides)) for tap in taps]
    if all((k - 1) * d < s for k, d, s in zip(kernel, dilations, strides)):
        sources = {r: cols[:, :, number].reshape((n, m) + extents) for number, r in enumerate(residues)}
    else:
        phases = list(product(*(range(s) for s in strides)))
        offsets = [
            phases.index(r) * plane + sum(t * d // s * p for t, d, s, p in zip(tap, dilations, strides, pitches))
            for r, tap in zip(residues, taps)
        ]
        total = len(phases) * plane
        flat = np.zeros((n, m, max(total, max(offsets) + run)), dtype=x.dtype)
        for number, offset in enumerate(offsets):
            flat[:, :, offset : offset + run] += cols[:, :, number]
        planes = flat[:, :, :total].reshape((n, m, len(phases)) + extents)
        sources = {r: planes[:, :, number] for number, r in enumerate(phases)}
    y = np.zeros((n, m) + plan.out, dtype=x.dtype)
    for phase, source in sources.items():
        ranges = [_phase_range(f, s, b, e, o) for f, s, b, e, o in zip(phase, strides, plan.begin, extents, plan.out)]
        if all(r is not None for r in ranges):
            y[(slice(None), slice(None)) + tuple(r[1] for r in ranges if r)] = source[
                (slice(None), slice(None)) + tuple(r[0] for r in ranges if r)
            ]
    return y


def _transpose_factory(node: OpNode, split: Split) -> Kernel:
    attrs = parse(node, transpose=True)
    constants = node.constants
    w_const = constants[1] if len(constants) > 1 else None
    b_const = constants[2] if len(constants) > 2 else None
    prepared: dict[np.dtype, np.ndarray] = {}
    if w_const is not None:
        _check_kernel(node, attrs, w_const.shape)
        if w_const.shape[0] % attrs.group:
            raise node.fail(f"W's {w_const.shape[0]} input channels do not split into {attrs.group} groups", "group")
        _check_bias(node, b_const, w_const.shape[1] * attrs.group)
        attrs.per_axis(node, w_const.ndim - 2)
        if w_const.dtype in (np.float16, np.float32, np.float64) or w_const.dtype.name == "bfloat16":
            dtype = np.dtype(np.float64) if w_const.dtype == np.float64 else np.dtype(np.float32)
            prepared[dtype] = transpose_weights(w_const, attrs.group, dtype)

    @functools.lru_cache(maxsize=16)
    def plan_for(x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> TransposePlan:
        return transpose_plan(node, attrs, split, x_shape, w_shape)

    def kernel(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        dtype = _compute_dtype(node, x, w)
        plan = plan_for(x.shape, w.shape)
        _check_bias(node, b, w.shape[1] * plan.group, x.dtype)
        # Dynamic dims reach here unchecked: the output, whose size bounds the phase planes and the
        # phases (strides 2**20 x 2**20 over 2x2: 2**40 phases), within the budget before any work.
        dims = (x.shape[0], w.shape[1] * plan.group) + plan.out
        if not fits(math.prod(dims) * dtype.itemsize):  # the message is made only for a refusal
            check_tensor(f"{node.label}: output", dims, dtype_name(dtype))
        wt = prepared.get(dtype) if w_const is not None else None
        if wt is None:
            wt = transpose_weights(w, plan.group, dtype)
        spatial = tuple(w.shape[2:])
        y = _transpose_run(x.astype(dtype, copy=False), wt, plan, spatial)
        if b is not None:
            y += b.astype(dtype, copy=False).reshape((-1,) + (1,) * len(spatial))
        return (y.astype(x.dtype, copy=False),)

    return kernel


@register("ConvTranspose", 1, 10, traits=Traits(work=CONV_WORK))
def conv_transpose_1(node: OpNode) -> Kernel:
    """ConvTranspose-1: output_shape crops ``total // 2`` at the start (the larger half at the end),
    SAME_UPPER with output_shape the larger half at the start; SAME alone per its auto_pad text.
    X (1, 1, 4), W (1, 1, 3) of ones, strides [2], output_shape [8]: full output
    [1, 1, 3, 2, 5, 3, 7, 4, 4] (X = 1..4) is cropped to its first 8 values."""
    return _transpose_factory(node, split_version1)


@register("ConvTranspose", 11, traits=Traits(work=CONV_WORK))
def conv_transpose_11(node: OpNode) -> Kernel:
    """ConvTranspose-11 and -22 (22 adds bfloat16): output_shape and SAME_LOWER crop the larger
    half at the start, SAME_UPPER ``total // 2``; output_padding < max(stride, dilation). The
    version-1 example with output_shape [8] keeps the last 8 values, [1, 3, 2, 5, 3, 7, 4, 4]."""
    return _transpose_factory(node, split_version11)

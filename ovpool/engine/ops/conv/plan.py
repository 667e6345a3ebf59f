"""How one Conv runs for given X and W shapes (``ConvPlan``: pads, output size, method), the padded
planes split into the stride's phases (``_phase_geometry``), its weights laid out for the method,
and the route taken where compiled code or OpenBLAS is at hand (``route``: the compiled tap loop
within the DIRECT_* bounds, the shifted products within SHIFT_*).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from itertools import product
from typing import Any, NamedTuple

import numpy as np

from ovpool.engine.native.compiled import taps_avx512
from ovpool.engine.ops.base import OpNode
from ovpool.engine.ops.conv.attributes import Attrs, _check_kernel
from ovpool.engine.ops.conv.buffers import _padded_shape

# Shifted products (``_conv_shifted``) replace im2col where each tap's product has at least
# SHIFT_WORK multiply-adds over at least SHIFT_CELLS columns (SHIFT_CELLS_UNIT at stride 1), of
# which at most SHIFT_WASTE times the output cells (measured on one thread, 3x3 pads 1: 16x80x80
# to 16 channels 0.65x im2col's time, 64x40x40 0.81x; at stride 1 96x26x26 0.82x, 128x20x20
# 0.95x, 256x10x10 0.93x; at stride 2 128x20x20 to 256 channels 1.15x, 64x40x40 to 128 0.98x;
# 16x10x10 1.9x, each product too small for a call's fixed cost), with at least SHIFT_CHANNELS
# input channels a group (3 channels over 800x608, stride 2: 1.3x im2col's time; 8 over 80x80:
# 0.64x).
SHIFT_WORK = 1 << 20
SHIFT_CELLS = 1024
SHIFT_CELLS_UNIT = 100
SHIFT_WASTE = 1.25
SHIFT_CHANNELS = 8
# The compiled tap loop (``_conv_taps_compiled``) also takes the im2col Convs of one input channel
# a group, and grouped ones of at most DIRECT_CHANNELS, with at least DIRECT_CELLS outputs a plane
# and at most DIRECT_PRODUCTS products an output (3x3 from 1x64x160 to 64 channels: 0.83x im2col's
# time; 32 channels in 8 groups over 40x40: 0.59x; silero's 256-tap STFT to 4 outputs: one matmul
# is quicker); dense ones of at most DIRECT_CHANNELS too where the loop is AVX-512's (3x3 stride 2
# from 3x224x224 to 16: 0.65x; 3x48x320 to 32: 0.65x; 4x64x64 to 16: 0.80x; 3x32x32 to 64: 1.0x;
# with AVX2's, 0.8-1.2x: left to im2col).
DIRECT_CHANNELS = 4
DIRECT_CELLS = 256
DIRECT_PRODUCTS = 64


@dataclass(frozen=True)
class ConvPlan:
    """How one Conv runs for given X and W shapes: pads, output size, and the method."""

    method: str  # "pointwise", "taps" or "im2col"
    group: int
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]


def conv_method(w_shape: tuple[int, ...], group: int, explicit_pads: tuple[int, ...] | None) -> str:
    """Depthwise-like weights (one input channel per group, <= 2 outputs per group) take the tap
    loop; a 1x1 kernel without explicit pads is a matmul; the rest im2col. SAME pads of a 1x1
    kernel are always 0."""
    if w_shape[1] == 1 and w_shape[0] // group <= 2:
        return "taps"
    if all(k == 1 for k in w_shape[2:]) and not any(explicit_pads or ()):
        return "pointwise"
    return "im2col"


def conv_plan(node: OpNode, attrs: Attrs, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> ConvPlan:
    """Check X against W and the attributes; pads and output size as the version states them."""
    _check_kernel(node, attrs, w_shape)
    rank = len(w_shape) - 2
    if len(x_shape) != rank + 2:
        raise node.fail(f"X has shape {list(x_shape)}, W {list(w_shape)}: X needs rank {rank + 2}")
    group = attrs.group
    if x_shape[1] != w_shape[1] * group:
        raise node.fail(f"X has {x_shape[1]} channels, W {w_shape[1]} per group x {group} groups", "group")
    if w_shape[0] % group:
        raise node.fail(f"W's {w_shape[0]} output channels do not split into {group} groups", "group")
    strides, dilations, begin, end = attrs.per_axis(node, rank)
    sizes = x_shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(w_shape[2:], dilations)]
    if attrs.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        totals = [max(0, (-(-n // s) - 1) * s + kd - n) for n, s, kd in zip(sizes, strides, spans)]
        small = [t // 2 for t in totals]
        large = [t - t // 2 for t in totals]
        begin, end = (tuple(small), tuple(large)) if attrs.auto_pad == "SAME_UPPER" else (tuple(large), tuple(small))
    elif attrs.auto_pad == "VALID":
        begin = end = (0,) * rank
    out = tuple((n + b + e - kd) // s + 1 for n, b, e, kd, s in zip(sizes, begin, end, spans, strides))
    if any(o < 1 for o in out):
        raise node.fail(f"input {list(sizes)} with pads {list(begin + end)} is smaller than the dilated kernel {spans}")
    # An axis with one output reads from position 0 only: its stride is never used, and the tap
    # loop splits each axis into `stride` phases (strides 2**32 over 8 cells: one output, stride 1).
    strides = tuple(1 if o == 1 else s for s, o in zip(strides, out))
    return ConvPlan(conv_method(w_shape, group, attrs.pads), group, strides, dilations, tuple(begin), tuple(end), out)


def conv_weights(method: str, w: np.ndarray, group: int, dtype: np.dtype) -> np.ndarray:
    """W laid out for ``method``: taps (K, g, M/g, 1); compiled taps (g, M/g, K); shifted
    (g, K, M/g, C/g); pointwise (g, M/g, C/g); im2col (g, M/g, C/g*K)."""
    m, taps = w.shape[0], math.prod(w.shape[2:])  # sizes, not -1: W of no output channels has none
    w = w.astype(dtype, copy=False)
    if method == "taps":
        return np.ascontiguousarray(w.reshape(group, m // group, w.shape[1] * taps).transpose(2, 0, 1))[..., None]
    if method == "shifted":
        return np.ascontiguousarray(w.reshape(group, m // group, w.shape[1], taps).transpose(0, 3, 1, 2))
    return np.ascontiguousarray(w.reshape(group, m // group, w.shape[1] * taps))


class _PhaseGeometry(NamedTuple):
    """A channel's padded plane split into the stride's phase planes (see ``_conv_taps``): the
    flat offset of each kernel tap within a channel's phase planes, the number of phases, one
    phase plane's shape, a channel's cells (``plane``), the length of a phase plane's row
    (``row``, its cells past the first axis), the elements the last tap reads past the last
    channel (``reach``) and the copies of input planes into phase planes (source and target
    slices)."""

    offsets: tuple[int, ...]
    phases: int
    phase_shape: tuple[int, ...]
    plane: int
    row: int
    reach: int
    copies: tuple[tuple[tuple[slice, ...], tuple[Any, ...]], ...]


@functools.lru_cache(maxsize=256)
def _phase_geometry(x_shape: tuple[int, ...], plan: ConvPlan, kernel: tuple[int, ...]) -> _PhaseGeometry:
    """The phase planes of ``x_shape`` padded as ``plan`` says, worked out once per input shape:
    3x3 stride 2 pads 1 over 7x7 (padded 9x9): 4 phases of 5x5, plane 100, row 5, tap (1, 2) at
    phase (1, 0) shifted one column, offset 2 * 25 + 1 = 51."""
    taps = list(product(*(range(k) for k in kernel)))
    padded = _padded_shape(x_shape, plan.begin, plan.end)[2:]
    strides = plan.strides
    phase_shape = tuple(-(-p // s) for p, s in zip(padded, strides))
    phase_size = math.prod(phase_shape)
    phases = list(product(*(range(s) for s in strides)))
    steps = [math.prod(phase_shape[i + 1 :]) for i in range(len(kernel))]
    offsets = tuple(
        phases.index(tuple(t * d % s for t, d, s in zip(tap, plan.dilations, strides))) * phase_size
        + sum(t * d // s * e for t, d, s, e in zip(tap, plan.dilations, strides, steps))
        for tap in taps
    )
    copies = []
    for number, phase in enumerate(phases):
        firsts = [(a - b) % s for a, b, s in zip(phase, plan.begin, strides)]
        if all(f < size for f, size in zip(firsts, x_shape[2:])):
            source = tuple(slice(f, None, s) for f, s in zip(firsts, strides))
            target = (number,) + tuple(
                slice((f + b) // s, (f + b) // s + len(range(f, size, s)))
                for f, b, s, size in zip(firsts, plan.begin, strides, x_shape[2:])
            )
            copies.append((source, target))
    return _PhaseGeometry(offsets, len(phases), phase_shape, len(phases) * phase_size, steps[0], max(offsets), tuple(copies))


def route(x_shape: tuple[int, ...], w_shape: tuple[int, ...], plan: ConvPlan) -> str:
    """Where a Conv of these shapes goes when compiled code is at hand: "compiled" (the compiled
    tap loop, 1-3 spatial axes: depthwise, or the DIRECT_* bounds), "shifted" (the SHIFT_*
    bounds), else its plan's method."""
    cg, rank = w_shape[1], len(plan.out)
    direct = (
        plan.method == "im2col"
        and (cg == 1 or cg <= DIRECT_CHANNELS and (1 < plan.group or taps_avx512()))
        and math.prod(plan.out) >= DIRECT_CELLS
        and cg * math.prod(w_shape[2:]) <= DIRECT_PRODUCTS
    )
    if rank <= 3 and (plan.method == "taps" or direct):
        return "compiled"
    return "shifted" if shifts(x_shape, w_shape, plan) else plan.method


def shifts(x_shape: tuple[int, ...], w_shape: tuple[int, ...], plan: ConvPlan) -> bool:
    """Whether an im2col Conv of these shapes runs as shifted products (the SHIFT_* bounds):
    3x3 pads 1 from 16x80x80 to 16 channels, 82 columns a row for 80 outputs, 6,560 columns and
    16 x 16 x 6,560 = 1.7 M multiply-adds a tap, does."""
    if plan.method != "im2col" or math.prod(w_shape[2:]) < 2 or w_shape[1] < SHIFT_CHANNELS:
        return False
    geometry = _phase_geometry(x_shape, plan, tuple(w_shape[2:]))
    cells = plan.out[0] * geometry.row
    work = cells * w_shape[1] * (w_shape[0] // plan.group)
    least = SHIFT_CELLS_UNIT if all(s == 1 for s in plan.strides) else SHIFT_CELLS
    return cells >= least and work >= SHIFT_WORK and cells <= SHIFT_WASTE * math.prod(plan.out)

"""The tap loops of Conv: one broadcast multiply and add per kernel tap in kernel order over flat
shifted views of the padded planes (depthwise, ``_conv_taps``; channels-last for small planes),
and the compiled tap loop (``_conv_taps_compiled``, ``ovpool.engine.native``) with its geometry.
"""

from __future__ import annotations

import functools
import math
from itertools import product
from typing import NamedTuple

import numpy as np

from ovpool.engine.native.compiled import Taps, address
from ovpool.engine.ops.conv.buffers import _padded_shape, small_ufunc_buffers
from ovpool.engine.ops.conv.plan import ConvPlan, _phase_geometry, _PhaseGeometry

TILE_BYTES = 1 << 18  # depthwise: a step's accumulator; with its scratch and the input it reads, in a core's L2


# The AVX-512 tap loop computes the kept runs straight into the output (no scratch, no copy) where
# that takes at most WIDE_RUNS times the vectors of all the cells (depthwise, against all cells:
# 3x3 over 56x56, 224 vectors against 203: 0.90x the time; 28x28, 56 against 53: 0.95x; 80x80:
# 0.86x; 5x5 over 20x20, 40 against 30: 1.2x; 7x7, 7 against 5: 1.4x)
WIDE_RUNS = 1.15


def _conv_taps(x: np.ndarray, wl: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None) -> np.ndarray:
    """One input channel per group: ``y[r] = sum over taps of w_tap[r] * x_tap[r]`` over rows
    r = (image, group), one broadcast multiply and add per kernel tap in kernel order, each over a
    flat shifted view. A tile of rows is copied into a zero-bordered buffer (the padding is done in
    cache); its outputs are computed in steps whose accumulator holds about TILE_BYTES (several
    thin planes at once, or a band of rows of one large plane), each step's sum (plus bias) written
    once to the output. 5x5 over 240 planes of 12x80 (padded 16x84, 12 output rows of 84): steps
    of 65 planes; 3x3 over 16 planes of 400x304 (400 rows of 306): one plane at a time in bands of
    214 rows.

    Strides become shifts by splitting each padded plane into its phases: with stride s, output o
    reads padded position ``o * s + t * d = s * (o + t * d // s) + t * d % s``, i.e. position
    ``o + t * d // s`` of phase ``t * d % s`` (the positions congruent to it mod s), a plane of
    ``ceil(P / s)``. With stride 1 there is one phase, the padded plane. In a phase plane of width
    Q, output (o1, o2) is flat position ``o1 * Q + o2`` and tap (i, j) adds a constant offset; the
    columns o2 >= out2 are computed and dropped (3x3 over 112x112, padded 114x114: 9 shifted runs
    of 112 * 114 per plane)."""
    n, g = x.shape[0], plan.group
    mg = wl.shape[2]
    rows = n * g
    layout = _taps_layout(x.shape, mg, plan, kernel, x.itemsize)
    geometry, tile, band, height = layout.geometry, layout.tile, layout.band, plan.out[0]
    plane, row, taps = geometry.plane, geometry.row, len(geometry.offsets)
    buffer = np.zeros(tile * plane + geometry.reach, dtype=x.dtype)
    phase_planes = buffer[: tile * plane].reshape((tile, geometry.phases) + geometry.phase_shape)
    views = [buffer[o : o + tile * plane].reshape(tile, 1, plane) for o in geometry.offsets]
    weights = np.broadcast_to(wl[:, None], (taps, n) + wl.shape[1:]).reshape(taps, rows, mg, 1)
    biases = None if bias is None else np.broadcast_to(bias.reshape(1, g, mg), (n, g, mg)).reshape(rows, mg, 1)
    planes = x.reshape((rows,) + x.shape[2:])
    y = np.empty((rows, mg) + plan.out, dtype=x.dtype)
    acc = np.empty(tile * mg * band * row, dtype=x.dtype)
    tmp = np.empty_like(acc)
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in plan.out[1:])
    with small_ufunc_buffers():
        for first in range(0, rows, tile):
            count = min(tile, rows - first)
            for source, target in geometry.copies:
                phase_planes[(slice(0, count),) + target] = planes[(slice(first, first + count),) + source]
            w_tile = weights[:, first : first + count]
            for top in range(0, height, band):
                size = min(band, height - top)
                cells = slice(top * row, (top + size) * row)
                part = acc[: count * mg * size * row].reshape(count, mg, size * row)
                scratch = tmp[: part.size].reshape(part.shape)
                np.multiply(views[0][:count, :, cells], w_tile[0], out=part)
                for view, w in zip(views[1:], w_tile[1:]):
                    np.multiply(view[:count, :, cells], w, out=scratch)
                    part += scratch
                if biases is not None:
                    part += biases[first : first + count]
                y[first : first + count, :, top : top + size] = part.reshape((count, mg, size) + geometry.phase_shape[1:])[crop]
    return y.reshape((n, g * mg) + plan.out)


def _conv_taps_compiled(
    x: np.ndarray, wn: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None, loop: Taps
) -> np.ndarray:
    """The tap loop compiled (``compiled.taps_for``): for each row (image, group) its input planes
    copied into a zero-bordered buffer of one row's phase planes (in cache), then for each output
    ``y = sum over the group's input channels c and taps k of W[m, c, k] * x_c shifted by tap k``,
    channel by channel, tap by tap, each output's kept positions written to it. ``wn`` is W as
    (g, M/g, C/g * K). With one input channel per group (depthwise) these are ``_conv_taps``'
    multiplies and adds in the same order: the same bits. With a few channels per group
    (``direct``) it is a direct convolution, which a 3-channel image's first layer needs (27
    products a position: im2col's columns and shifted products' nine passes over the output both
    cost more than the products)."""
    geometry = _compiled_geometry(x.shape, plan, kernel, wn.shape[1], x.itemsize)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    y = np.empty((x.shape[0], plan.group * wn.shape[1]) + plan.out, dtype=x.dtype)
    if loop(address(x), address(wn), 0 if bias is None else address(bias), address(y), geometry.address):
        raise MemoryError(f"Conv: no memory for a zero-bordered buffer of {geometry.ints[6]} values")
    return y


class _CompiledGeometry(NamedTuple):
    """The int64 that ``compiled.taps_for`` reads (layout in ``_compiled.c``) and their address."""

    ints: np.ndarray
    address: int


@functools.lru_cache(maxsize=256)
def _compiled_geometry(
    x_shape: tuple[int, ...], plan: ConvPlan, kernel: tuple[int, ...], mg: int, itemsize: int
) -> _CompiledGeometry:
    """What ``compiled.taps_for`` reads for one input shape (1-3 spatial axes): the sizes, the tap
    offsets (each input channel of a group in turn), the output runs, and the copies of an input
    plane into its phase planes. 14x14 outputs in phase planes 18 wide are 14 runs 18 apart of one
    row of 14, (14, 18, 1, 0, 14); 4x5x6 outputs in phase planes of 6x7x8 are 4 runs 56 apart of 5
    rows 8 apart, (4, 56, 5, 8, 6). The runs are computed straight into the output where their
    rows hold at least 128 bytes and take no more vectors of 64 bytes than all the cells: 2x96
    outputs in planes 100 wide, 2 x 6 vectors against 13 (computed, then copied); not 56x56 in
    planes 58 wide, 56 x 4 against 203."""
    geometry, out = _phase_geometry(x_shape, plan, kernel), plan.out
    shape, cg = geometry.phase_shape, x_shape[1] // plan.group
    if len(out) == 1:
        runs = (1, 0, 1, 0, out[0])
    elif len(out) == 2:
        runs = (out[0], shape[1], 1, 0, out[1])
    else:
        runs = (out[0], geometry.row, math.prod(out[1:-1]), shape[-1], out[-1])
    offsets = [c * geometry.plane + offset for c in range(cg) for offset in geometry.offsets]
    cells = out[0] * geometry.row
    lanes = 64 // itemsize
    direct = runs[4] * itemsize >= 128 and runs[0] * runs[2] * -(-runs[4] // lanes) <= -(-cells // lanes)
    wide = runs[0] * runs[2] * -(-runs[4] // lanes) <= WIDE_RUNS * -(-cells // lanes)
    sizes = [x_shape[0] * plan.group, plan.group, mg, cg, math.prod(x_shape[2:]), geometry.plane]
    sizes += [cg * geometry.plane + geometry.reach, cells, len(offsets), len(geometry.copies), int(direct), int(wide)]
    ints = np.array(sizes + list(runs) + offsets + _copy_ints(x_shape[2:], geometry), dtype=np.int64)
    return _CompiledGeometry(ints, ints.ctypes.data)


def _copy_ints(sizes: tuple[int, ...], geometry: _PhaseGeometry) -> list[int]:
    """Each copy of ``geometry`` as 11 ints for ``_compiled.c``: source and target offset, then
    counts, source steps and target steps over three axes (leading axes of one): a 5x7 plane into
    phase 0 of 2x2 phase planes of 4x5 (stride 2, pads 1 before), from (1, 1) to (1, 1): offsets
    8 and 6, counts (1, 2, 3), source steps (0, 14, 2), target steps (0, 5, 1)."""
    source_steps = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    shape, pad = geometry.phase_shape, 3 - len(sizes)
    target_steps = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    ints: list[int] = []
    for source, (phase, *target) in geometry.copies:
        ints.append(sum(s.start * e for s, e in zip(source, source_steps)))
        ints.append(phase * math.prod(shape) + sum(t.start * e for t, e in zip(target, target_steps)))
        ints += [1] * pad + [len(range(size)[s]) for size, s in zip(sizes, source)]
        ints += [0] * pad + [s.step * e for s, e in zip(source, source_steps)]
        ints += [0] * pad + target_steps
    return ints


def _conv_taps_channels_last(
    x: np.ndarray, wl: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None
) -> np.ndarray:
    """``_conv_taps`` for one output per channel on small output planes, with channels last: each
    tap multiplies a strided (N, *out, C) view of the zero-bordered input by its C weights, so a
    numpy loop runs over the C channels instead of a short plane row (a 5x5 depthwise over 512
    planes of 7x7: 25 multiply-adds over 49 runs of 512, against 512 runs of 77). The same taps in
    the same order, then the bias: the same values bit for bit."""
    n, c = x.shape[:2]
    padded = _padded_shape(x.shape, plan.begin, plan.end)
    xt = np.zeros((n,) + padded[2:] + (c,), dtype=x.dtype)
    inside = (slice(None),) + tuple(slice(b, b + size) for b, size in zip(plan.begin, x.shape[2:])) + (slice(None),)
    xt[inside] = np.moveaxis(x, 1, -1)
    weights = wl[:, :, 0, 0]
    y = np.empty((n,) + plan.out + (c,), dtype=x.dtype)
    scratch = np.empty_like(y)
    with small_ufunc_buffers():
        for index, tap in enumerate(product(*(range(k) for k in kernel))):
            view = xt[
                (slice(None),)
                + tuple(
                    slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, plan.dilations, plan.out, plan.strides)
                )
                + (slice(None),)
            ]
            if index == 0:
                np.multiply(view, weights[0], out=y)
            else:
                np.multiply(view, weights[index], out=scratch)
                y += scratch
        if bias is not None:
            y += bias
    return np.ascontiguousarray(np.moveaxis(y, -1, 1))


class _TapsLayout(NamedTuple):
    """How ``_conv_taps`` steps for one input shape: the phase geometry, the tile (planes at once)
    and the band (output rows at once)."""

    geometry: _PhaseGeometry
    tile: int
    band: int


@functools.lru_cache(maxsize=256)
def _taps_layout(x_shape: tuple[int, ...], mg: int, plan: ConvPlan, kernel: tuple[int, ...], itemsize: int) -> _TapsLayout:
    """``_conv_taps``' steps, worked out once per input shape and plan (a run only allocates)."""
    rows = x_shape[0] * plan.group
    geometry = _phase_geometry(x_shape, plan, kernel)
    height, row = plan.out[0], geometry.row
    grid = height * row
    budget = max(1, TILE_BYTES // (max(1, mg) * itemsize))  # W of no output channels: one step
    tile = max(1, min(rows, budget // grid))
    band = height if budget >= grid else max(1, budget // row)
    return _TapsLayout(geometry, tile, band)

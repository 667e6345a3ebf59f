"""The matrix-product routes of Conv: a 1x1 kernel as one matmul (``_conv_pointwise``), im2col
columns in blocks of about COLS_BYTES then a batched matmul (``_conv_im2col``; gathered in one
indexing when small, ``_conv_gathered``), and one ``gemm`` per tap over the zero-bordered input at
the tap's offset, without columns (``_conv_shifted``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ovpool.engine.blas import Gemm
from ovpool.engine.ops.conv.buffers import _add_bias, _padded, _padding, small_ufunc_buffers
from ovpool.engine.ops.conv.plan import ConvPlan, _phase_geometry

COLS_BYTES = 1 << 21  # im2col: columns built and multiplied a block of about this size at a time (below
# numpy's 4 MB huge-page threshold, whose page faults can cost more than the convolution)


def _conv_pointwise(x: np.ndarray, wl: np.ndarray, plan: ConvPlan, bias: np.ndarray | None) -> np.ndarray:
    """1x1 kernel: ``(g, M/g, C/g) @ (N, g, C/g, P)``, the input subsampled first to the cells
    the outputs read, ``0, s, ..., (out - 1) * s`` (stride 2 over 7 cells: 0, 2, 4, 6)."""
    if x.shape[2:] != plan.out:
        x = x[(slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(plan.out, plan.strides))]
    n, g = x.shape[0], plan.group
    y = np.matmul(wl, x.reshape(n, g, x.shape[1] // g, math.prod(plan.out)))
    if bias is not None:
        _add_bias(y, bias)
    return y.reshape((n, g * wl.shape[1]) + plan.out)


def _conv_gathered(x: np.ndarray, wl: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None) -> np.ndarray:
    """im2col for a small Conv (at most SMALL_COLUMNS column values): the columns gathered from
    the input in one indexing (``_gather_index``) instead of padding, viewing and copying, then
    the same matmul and bias add, so the same values. silero's (1, 129, 3) by 128x129x3, pads 1:
    387 x 3 columns."""
    index = _gather_index(x.shape, plan, kernel)
    cols = np.concatenate((x.reshape(-1), np.zeros(1, x.dtype)))[index]
    y = np.matmul(wl, cols)
    if bias is not None:
        _add_bias(y, bias)
    return y.reshape((x.shape[0], plan.group * wl.shape[1]) + plan.out)


@functools.lru_cache(maxsize=256)
def _gather_index(x_shape: tuple[int, ...], plan: ConvPlan, kernel: tuple[int, ...]) -> np.ndarray:
    """Where each im2col column value of ``_conv_im2col`` is in the flat input, (N, g, C/g*K, P),
    a padding cell pointing past its end (at the zero ``_conv_gathered`` appends): (1, 1, 3), a
    kernel of 2 with pads 1 gives [[3, 0, 1, 2], [0, 1, 2, 3]]."""
    size = math.prod(x_shape)
    padding = _padding(x_shape, plan.begin, plan.end)
    cells = np.full(padding.shape, size, dtype=np.intp)
    cells[padding.interior] = np.arange(size).reshape(x_shape)
    layout = _im2col_layout(padding.shape, cells.itemsize, plan, kernel, 1)
    windows = np.ndarray(layout.shape, cells.dtype, cells, 0, layout.strides)
    return np.ascontiguousarray(windows).reshape(layout.n, plan.group, layout.cg * layout.k, plan.out[0] * layout.rest)


def _conv_im2col(x: np.ndarray, wl: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None) -> np.ndarray:
    """Windows of the padded input as (N, g, C/g*K, P) columns, then a batched matmul with W as
    (g, M/g, C/g*K). The columns are built in blocks of about COLS_BYTES, so that each is still in
    cache when multiplied: several images at once when they fit, else blocks of output rows of one
    image (3x3 over 64x56x56: 576 x 3,136 columns, 7.2 MB, go as 4 blocks of 16 rows). Each block's
    product is written to its rows of the output with the bias added in the same pass. (Multiplying
    straight into the output's rows was slower: with 24 outputs of 80x80, a C matrix at a pitch of
    25,600 bytes made OpenBLAS 1.2-1.4x slower than a contiguous block.)"""
    xp = _padded(x, plan.begin, plan.end)
    g, mg = plan.group, wl.shape[1]
    layout = _im2col_layout(xp.shape, xp.itemsize, plan, kernel, mg)
    n, c, cg, k = layout.n, layout.c, layout.cg, layout.k
    windows = np.ndarray(layout.shape, xp.dtype, xp, 0, layout.strides)  # as_strided's view, without its Python cost
    height, rest, rows, images = plan.out[0], layout.rest, layout.rows, layout.images
    biases = None if bias is None else bias.reshape(g, mg, 1, 1)
    if rows == height and images >= n:  # one block: the product is the output
        cols = np.empty(layout.shape, dtype=x.dtype)
        cols[...] = windows
        y = np.matmul(wl, cols.reshape(n, g, cg * k, height * rest))
        if bias is not None:
            _add_bias(y, bias)
        return y.reshape((n, g * mg) + plan.out)
    first_axis = 3 + len(kernel)
    y = np.empty((n, g, mg, height, rest), dtype=x.dtype)
    columns = np.empty(images * c * k * rows * rest, dtype=x.dtype)
    product_ = np.empty(images * g * mg * rows * rest, dtype=x.dtype)
    with small_ufunc_buffers():
        for image in range(0, n, images):
            for row in range(0, height, rows):
                block = windows[(slice(image, image + images),) + (slice(None),) * (first_axis - 1) + (slice(row, row + rows),)]
                cols = columns[: block.size].reshape(block.shape)
                cols[...] = block
                count, span = block.shape[0], block.size // (block.shape[0] * c * k)
                result = product_[: count * g * mg * span].reshape(count, g, mg, span)
                np.matmul(wl, cols.reshape(count, g, cg * k, span), out=result)
                target = y[image : image + count, :, :, row : row + rows]
                if biases is None:
                    target[...] = result.reshape(target.shape)
                else:
                    np.add(result.reshape(target.shape), biases, out=target)
    return y.reshape((n, g * mg) + plan.out)


def _conv_shifted(
    x: np.ndarray, ws: np.ndarray, plan: ConvPlan, kernel: tuple[int, ...], bias: np.ndarray | None, gemm: Gemm
) -> np.ndarray:
    """Without columns: each kernel tap is one product ``W_tap (M/g, C/g) @ X_tap (C/g, T)``
    accumulated into the output by numpy's OpenBLAS (``blas.gemm_for``), where X_tap is the
    zero-bordered input's phase planes (``_phase_geometry``) read from the tap's flat offset, one
    row per channel at the pitch of a channel's planes. The T = out1 * row columns include the
    positions past each output row's end (``row - out2`` of them), computed and dropped. 3x3
    stride 1 pads 1 over 64x20x20: nine products 64x64 @ 64x440 at offsets 0, 1, 2, 22, ...,
    46, each column t the output (t // 22, t % 22), columns 20 and 21 of each row dropped. The
    input is copied once into its phase planes instead of nine times into columns; a tap's sum
    is added in tap order after the channels, where im2col adds each channel's taps in turn
    (the rounding differs as between two BLAS blockings)."""
    n, g = x.shape[0], plan.group
    taps, mg, cg = ws.shape[1:]
    geometry = _phase_geometry(x.shape, plan, kernel)
    height, row, plane = plan.out[0], geometry.row, geometry.plane
    cells = height * row
    item = x.itemsize
    buffer = np.zeros(x.shape[1] * plane + geometry.reach, dtype=x.dtype)
    planes = buffer[: x.shape[1] * plane].reshape((x.shape[1], geometry.phases) + geometry.phase_shape)
    wide = np.empty((n, g, mg, cells), dtype=x.dtype)
    source, weights, target = buffer.ctypes.data, ws.ctypes.data, wide.ctypes.data
    for image in range(n):
        for part, place in geometry.copies:
            planes[(slice(None),) + place] = x[(image, slice(None)) + part]
        for group in range(g):
            a = weights + group * taps * mg * cg * item
            b = source + group * cg * plane * item
            c = target + (image * g + group) * mg * cells * item
            for tap, offset in enumerate(geometry.offsets):
                gemm(mg, cells, cg, a + tap * mg * cg * item, cg, b + offset * item, plane, 1.0 if tap else 0.0, c, cells)
    rank = len(plan.out)
    full = wide.reshape((n, g * mg, height) + geometry.phase_shape[1:])
    kept = full[(slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in plan.out[1:])]
    if bias is None:
        return np.ascontiguousarray(kept)
    return np.add(kept, bias.reshape((g * mg,) + (1,) * rank))


class _Im2colLayout(NamedTuple):
    """Where ``_conv_im2col`` reads for one padded input shape: the window view's shape and strides
    (N, g, C/g, *kernel, *out), and the block: output rows and images at once."""

    n: int
    c: int
    cg: int
    k: int
    rest: int
    rows: int
    images: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@functools.lru_cache(maxsize=256)
def _im2col_layout(padded: tuple[int, ...], itemsize: int, plan: ConvPlan, kernel: tuple[int, ...], mg: int) -> _Im2colLayout:
    """``_conv_im2col``'s geometry, worked out once per padded shape and plan (a run only copies
    and multiplies). The padded input is C-contiguous, so its strides follow from its shape."""
    n, c = padded[:2]
    g = plan.group
    cg, k = c // g, math.prod(kernel)
    sl = [itemsize * math.prod(padded[i + 1 :]) for i in range(2, len(padded))]
    sc, sn = itemsize * math.prod(padded[2:]), itemsize * math.prod(padded[1:])
    shape = (n, g, cg) + kernel + plan.out
    strides = (
        (sn, cg * sc, sc) + tuple(d * s for d, s in zip(plan.dilations, sl)) + tuple(st * s for st, s in zip(plan.strides, sl))
    )
    height, rest = plan.out[0], math.prod(plan.out[1:])
    row_bytes = max(1, c * k * rest * itemsize)  # no input channels: no columns, one block
    rows = max(1, min(height, COLS_BYTES // row_bytes))
    images = max(1, min(n, COLS_BYTES // (row_bytes * height))) if rows == height else 1
    return _Im2colLayout(n, c, cg, k, rest, rows, images, shape, strides)

"""Conv and ConvTranspose, versions 1, 11 and 22, over 1-D, 2-D and 3-D (any spatial rank).

Sizes use the dilated kernel ``kd = (k - 1) * d + 1`` (k=3, d=2: kd=5).

**Conv**, every version. Explicit pads: ``out = floor((L + pb + pe - kd) / s) + 1`` (L=7, k=3, s=2,
pads 1+1: 4). ``VALID``: pads 0. ``SAME_UPPER``/``SAME_LOWER``: ``out = ceil(L / s)``, total pad
``max(0, (out - 1) * s + kd - L)``, the odd one at the end for UPPER and at the start for LOWER
(L=6, k=4, s=1: out 6, total 3, UPPER pads (1, 2), LOWER (2, 1)); dilation is part of kd.
Conv-1's text says SAME makes "the output spatial size match the input": that is the stride-1 case;
its schema's shape inference gives ``ceil(L / s)`` like Conv-11's text, and so does this module.
Groups: X has C = group * W.shape[1] channels, output channel m reads the input channels of group
``m // (M / group)``. Conv-22 adds bfloat16 (computed in float32, like float16).

**ConvTranspose**. Each input value spreads ``W`` over the *full* output of length
``F = s * (L - 1) + kd + op`` (op = output_padding, extra positions at the high end; L=4, k=3,
s=2: F=9); ``pads`` crop it: ``out = F - pb - pe``. With ``output_shape`` (pads ignored) or
``SAME_*`` (``out = L * s``) the crop is ``total = F - out``, split by version:

- version 1, ``output_shape``: start ``total // 2``, the larger half at the end, except SAME_UPPER
  which takes the larger half at the start. Version 1 ``SAME_*`` without output_shape: its
  auto_pad text, "the extra padding at the end for SAME_UPPER and at the beginning for SAME_LOWER".
- versions 11 and 22: SAME_UPPER starts at ``total // 2``; NOTSET, VALID and SAME_LOWER take
  the larger half at the start.

L=4, k=3, s=2, output_shape [8]: total 1, version 1 keeps full[0:8], version 11 full[1:9].
Version 1's SAME text ("match the input") is the stride-1 case of ``L * s``, which its shape
inference gives. A negative total (k < s with SAME, or output_shape beyond F) would make negative
pads, which pads cannot be: the output is extended at the high end only, like output_padding, with
positions no input reaches (bias only). L=4, k=1, s=2, SAME: full [x0, 0, x1, 0, x2, 0, x3],
output [x0, 0, x1, 0, x2, 0, x3, 0]. Versions 11 and 22 require each output_padding < max(stride,
dilation).
Bias: one value per output channel across groups (group 2, W of shape (4, 3, k): output channel 4
is group 1's channel 1 and gets B[4]).

Speed: Conv gathers windows through a strided view into im2col columns and multiplies by BLAS
(``(g, M/g, C/g*K) @ (N, g, C/g*K, P)``), in blocks of about 2 MB that stay in cache; a 1x1 kernel
without pads is a plain matmul. Where each tap's product is large (SHIFT_*), and numpy runs on
OpenBLAS (``blas.py``), there are no columns: one product per tap reads the zero-bordered input
at the tap's offset and is accumulated into the output by ``gemm`` (3x3 over 16x80x80: 0.65x
im2col's time). ConvTranspose is one matmul ``W^T @ X`` per group, then col2im:
one flat add per kernel tap into the stride's phase planes and one strided copy per phase.
Depthwise kernels (one input channel per group, at most two outputs) accumulate one broadcast
multiply and add per kernel tap, in kernel order, over cache-sized steps (several thin planes, or
bands of rows of a large one), each tap a flat shifted view of the padded planes (strides split
into phases; 3x3 over 112x112: 9 taps over runs of 12,768). The kernels run with numpy's ufunc
buffer kept small (``small_ufunc_buffers``). Float16 and bfloat16 are computed in float32,
float64 in float64; results have the input's type.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any, NamedTuple

import numpy as np

from ovpool.engine.blas import Gemm, gemm_for
from ovpool.engine.memo import LIMIT, ShapeMemo, dtype_name
from ovpool.engine.native.compiled import Taps, address, bias_for, taps_avx512, taps_for
from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, register
from ovpool.memory import check_tensor, fits

# Working memory of an im2col Conv: the padded input and a block of columns (1.6 x input for 3x3
# pads 1; columns of up to COLS_BYTES at a time, 9 x a small input for 3x3). ConvInteger,
# QLinearConv, ConvTranspose and the IR's convolution layers run on the same kernels.
CONV_WORK = Rule(3.0, 3.0, 16.0, 8 << 20)

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
TILE_BYTES = 1 << 18  # depthwise: a step's accumulator; with its scratch and the input it reads, in a core's L2
COLS_BYTES = 1 << 21  # im2col: columns built and multiplied a block of about this size at a time (below
# numpy's 4 MB huge-page threshold, whose page faults can cost more than the convolution)
UFUNC_BUFFER = 16  # elements: numpy's ufunc buffer inside the Conv kernels (see small_ufunc_buffers)
# depthwise: output planes of at most this many cells run channels-last (_conv_taps_channels_last)
SMALL_PLANE = 100
# elements: below this, a bias add is cheaper than setting numpy's buffer size around it (8.7 against
# 1.8 us for 258 x 4 outputs; 24 against 50 us for 64 x 3,136)
SMALL_ADD = 1 << 15
# im2col Convs of at most SMALL_COLUMNS column values gather them in one indexing
# (``_conv_gathered``): silero's (1, 129, 3) by 128x129x3 in 0.6x the time.
SMALL_COLUMNS = 1 << 12
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
# The AVX-512 tap loop computes the kept runs straight into the output (no scratch, no copy) where
# that takes at most WIDE_RUNS times the vectors of all the cells (depthwise, against all cells:
# 3x3 over 56x56, 224 vectors against 203: 0.90x the time; 28x28, 56 against 53: 0.95x; 80x80:
# 0.86x; 5x5 over 20x20, 40 against 30: 1.2x; 7x7, 7 against 5: 1.4x)
WIDE_RUNS = 1.15


@dataclass(frozen=True)
class Attrs:
    """A node's convolution attributes as given (None: absent), checked for sign and agreement."""

    kernel_shape: tuple[int, ...] | None
    strides: tuple[int, ...] | None
    dilations: tuple[int, ...] | None
    pads: tuple[int, ...] | None
    auto_pad: str
    group: int
    output_shape: tuple[int, ...] | None = None
    output_padding: tuple[int, ...] | None = None

    def per_axis(self, node: OpNode, rank: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """strides, dilations, pads begin, pads end for ``rank`` spatial axes, defaults applied."""
        for name in ("kernel_shape", "strides", "dilations", "output_shape", "output_padding"):
            value = getattr(self, name)
            if value is not None and len(value) != rank:
                raise node.fail(f"{list(value)} has {len(value)} values for {rank} spatial axes", name)
        if self.pads is not None and len(self.pads) != 2 * rank:
            raise node.fail(f"{list(self.pads)} has {len(self.pads)} values, {rank} spatial axes need {2 * rank}", "pads")
        ones = (1,) * rank
        pads = self.pads or (0,) * (2 * rank)
        return self.strides or ones, self.dilations or ones, pads[:rank], pads[rank:]


def _ints(node: OpNode, name: str, minimum: int) -> tuple[int, ...] | None:
    value = node.attr(name)
    if value is None:
        return None
    values = tuple(int(v) for v in value)
    if any(v < minimum for v in values):
        raise node.fail(f"{list(values)} has a value below {minimum}", name)
    return values


def parse(node: OpNode, transpose: bool) -> Attrs:
    """The attributes of ``node``: signs, auto_pad spelling, group >= 1, and pads not beside auto_pad."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise node.fail(f"'{auto_pad}' is not one of {', '.join(AUTO_PADS)}", "auto_pad")
    group = int(node.attr("group", 1))
    if group < 1:
        raise node.fail(f"{group} is below 1", "group")
    pads = _ints(node, "pads", 0)
    if pads is not None and auto_pad != "NOTSET":
        raise node.fail(f"{list(pads)} given with auto_pad '{auto_pad}': the schema allows one or the other", "pads")
    return Attrs(
        kernel_shape=_ints(node, "kernel_shape", 1),
        strides=_ints(node, "strides", 1),
        dilations=_ints(node, "dilations", 1),
        pads=pads,
        auto_pad=auto_pad,
        group=group,
        output_shape=_ints(node, "output_shape", 1) if transpose else None,
        output_padding=_ints(node, "output_padding", 0) if transpose else None,
    )


def _compute_dtype(node: OpNode, x: np.ndarray, w: np.ndarray) -> np.dtype:
    """float32 for float16 (and bfloat16 from version 22), else the input's own type."""
    if x.dtype != w.dtype:
        raise node.fail(f"X is {x.dtype} and W is {w.dtype}; the schema wants one type T")
    if x.dtype in (np.float32, np.float64):
        return x.dtype
    if x.dtype == np.float16 or (x.dtype.name == "bfloat16" and node.since >= 22):
        return np.dtype(np.float32)
    raise node.fail(f"input type {x.dtype} is not one of the float types {node.op_type}-{node.since} allows")


def _check_kernel(node: OpNode, attrs: Attrs, w_shape: tuple[int, ...]) -> None:
    if len(w_shape) < 3:
        raise node.fail(f"W has shape {list(w_shape)}; it needs 2 leading dimensions and at least one spatial one")
    if attrs.kernel_shape is not None and attrs.kernel_shape != tuple(w_shape[2:]):
        raise node.fail(f"{list(attrs.kernel_shape)} is not W's spatial shape {list(w_shape[2:])}", "kernel_shape")


def _check_bias(node: OpNode, b: np.ndarray | None, channels: int, dtype: np.dtype | None = None) -> None:
    if b is None:
        return
    if b.shape != (channels,):
        raise node.fail(f"B has shape {list(b.shape)}; {channels} output channels need one value each")
    if dtype is not None and b.dtype != dtype:
        raise node.fail(f"B is {b.dtype} and X is {dtype}; the schema wants one type T")


def _pad_buffer(x: np.ndarray, begin: tuple[int, ...], end: tuple[int, ...], tail: int = 0) -> np.ndarray:
    """``x`` (N, C, *L) with zeros around its spatial axes, flat, followed by ``tail`` zeros (read by
    the flat tap views, never kept); ``x`` itself, flat, when there is nothing to add."""
    if not any(begin) and not any(end) and not tail:
        return np.ascontiguousarray(x).reshape(-1)
    padding = _padding(x.shape, begin, end)
    flat = np.zeros(padding.cells + tail, dtype=x.dtype)
    flat[: padding.cells].reshape(padding.shape)[padding.interior] = x
    return flat


class _Padding(NamedTuple):
    """An input shape padded: the padded shape, its cells and where the input sits in it."""

    shape: tuple[int, ...]
    cells: int
    interior: tuple[slice, ...]


@functools.lru_cache(maxsize=256)
def _padding(shape: tuple[int, ...], begin: tuple[int, ...], end: tuple[int, ...]) -> _Padding:
    """(N, C, *L) with ``begin`` and ``end`` added to L: (1, 2, 5) with (1,), (2,) is (1, 2, 8), 16
    cells, the input at [:, :, 1:6]; worked out once per shape and pads (each Conv of a run asks
    two or three times)."""
    padded = shape[:2] + tuple(n + b + e for n, b, e in zip(shape[2:], begin, end))
    interior = (slice(None), slice(None)) + tuple(slice(b, b + n) for b, n in zip(begin, shape[2:]))
    return _Padding(padded, math.prod(padded), interior)


def _padded_shape(shape: tuple[int, ...], begin: tuple[int, ...], end: tuple[int, ...]) -> tuple[int, ...]:
    """The padded shape of ``_padding``: (1, 2, 5) with (1,), (2,) is (1, 2, 8)."""
    return _padding(shape, begin, end).shape


def _padded(x: np.ndarray, begin: tuple[int, ...], end: tuple[int, ...]) -> np.ndarray:
    return _pad_buffer(x, begin, end).reshape(_padded_shape(x.shape, begin, end))


# ---------------------------------------------------------------------------------------- Conv


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


def _add_bias(y: np.ndarray, bias: np.ndarray) -> None:
    """``y`` (N, g, M/g, P) plus ``bias`` (M values) over each plane of P, in place: compiled
    (``compiled.bias_for``, one pass: 200 planes of 192 in 4.5 against numpy's 11.5 us), else
    numpy's broadcast add, with its ufunc buffer small where that pays (SMALL_ADD)."""
    add = bias_for(y.dtype)
    if add is not None and y.flags.c_contiguous and bias.flags.c_contiguous and bias.dtype == y.dtype:
        add(address(y), address(bias), math.prod(y.shape[:-1]), bias.size, y.shape[-1])
    elif y.size < SMALL_ADD:
        y += bias.reshape(y.shape[1:-1] + (1,))
    else:
        with small_ufunc_buffers():
            y += bias.reshape(y.shape[1:-1] + (1,))


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


@contextlib.contextmanager
def small_ufunc_buffers() -> Iterator[None]:
    """numpy's ufunc buffer at UFUNC_BUFFER elements inside the block, restored after (also on an
    error). numpy 2.4 copies operands through its buffer (8192 elements by default) when their
    innermost run is shorter than it and the axes do not merge, even when nothing needs converting:
    a multiply of 48 rows of 1,008 floats by one weight per row took 0.43 ns per element, 0.13 ns
    with a buffer of 16 (no copy). The kernels' operands share one type and never need the buffer;
    an operation that converts types would be slower with it (a float16 by float32 multiply: 2.4x)."""
    old = np.setbufsize(UFUNC_BUFFER)
    try:
        yield
    finally:
        np.setbufsize(old)


def _conv_factory(node: OpNode) -> Kernel:
    attrs = parse(node, transpose=False)
    constants = node.constants
    w_const = constants[1] if len(constants) > 1 else None
    b_const = constants[2] if len(constants) > 2 else None
    prepared: dict[tuple[str, Any], np.ndarray] = {}
    if w_const is not None:
        _check_kernel(node, attrs, w_const.shape)
        if w_const.shape[0] % attrs.group:
            raise node.fail(f"W's {w_const.shape[0]} output channels do not split into {attrs.group} groups", "group")
        _check_bias(node, b_const, w_const.shape[0])
        attrs.per_axis(node, w_const.ndim - 2)
        if w_const.dtype in (np.float16, np.float32, np.float64) or w_const.dtype.name == "bfloat16":
            dtype = np.dtype(np.float64) if w_const.dtype == np.float64 else np.dtype(np.float32)
            method = conv_method(w_const.shape, attrs.group, attrs.pads)
            prepared[(method, dtype)] = conv_weights(method, w_const, attrs.group, dtype)

    output_what, padded_what = f"{node.label}: output", f"{node.label}: padded input"

    def sized_plan(
        shapes: tuple[tuple[int, ...], tuple[int, ...]],
    ) -> tuple[ConvPlan, tuple[int, ...], tuple[int, ...], int, str]:
        """The plan, the output and padded input dims and their cells together, and the route
        with compiled code, per X and W shape."""
        x_shape, w_shape = shapes
        plan = conv_plan(node, attrs, x_shape, w_shape)
        output_dims, padded_dims = (x_shape[0], w_shape[0]) + plan.out, _padded_shape(x_shape, plan.begin, plan.end)
        return plan, output_dims, padded_dims, math.prod(output_dims) + math.prod(padded_dims), route(x_shape, w_shape, plan)

    plan_for = ShapeMemo(sized_plan)

    def resolved(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> tuple[int, Callable[[np.ndarray], np.ndarray]]:
        """The bytes a Conv of these inputs' shapes and types allocates (the output and the padded
        input) and ``run(x) -> y`` for them: its route chosen, W laid out, the bias cast; checked
        against the node (types, bias) and the budget on the way."""
        dtype = _compute_dtype(node, x, w)
        plan, output_dims, padded_dims, cells, way = plan_for((x.shape, w.shape))
        _check_bias(node, b, w.shape[0], x.dtype)
        # Within the budget before any work: the output, and the padded input the windows read
        # (pads 2**31 on an IR layer whose declared output is small: 408 GiB).
        needed = cells * dtype.itemsize
        if not fits(needed):
            check_tensor(output_what, output_dims, dtype_name(dtype))
            check_tensor(padded_what, padded_dims, dtype_name(dtype))
        gemm = gemm_for(dtype) if way == "shifted" else None
        loop = taps_for(dtype) if way == "compiled" else None
        method = "shifted" if gemm is not None else "compiled taps" if loop is not None else plan.method
        wl = prepared.get((method, dtype)) if w_const is not None else None
        if wl is None:
            wl = conv_weights(method, w, plan.group, dtype)
            if w_const is not None:
                prepared[(method, dtype)] = wl
        spatial = tuple(w.shape[2:])
        bias = None if b is None else b.astype(dtype, copy=False)
        small = x.shape[0] * padded_dims[1] * math.prod(spatial) * math.prod(plan.out) <= SMALL_COLUMNS
        return needed, _bound(plan, wl, spatial, bias, (gemm, loop, small), dtype, x.dtype)

    # (X shape, X type) -> resolved(...) for W and B the node's constants, as they are on every run
    ready: dict[tuple[tuple[int, ...], np.dtype], tuple[int, Callable[[np.ndarray], np.ndarray]]] = {}

    def kernel(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        constant = w is w_const and b is b_const
        if constant:
            entry = ready.get((x.shape, x.dtype))
            if entry is not None and fits(entry[0]):
                return (entry[1](x),)
        needed, run = resolved(x, w, b)
        if constant:
            if len(ready) >= LIMIT:
                ready.clear()
            ready[(x.shape, x.dtype)] = (needed, run)
        return (run(x),)

    return kernel


def _bound(
    plan: ConvPlan,
    wl: np.ndarray,
    spatial: tuple[int, ...],
    bias: np.ndarray | None,
    route: tuple[Gemm | None, Taps | None, bool],
    dtype: np.dtype,
    x_dtype: np.dtype,
) -> Callable[[np.ndarray], np.ndarray]:
    """``run(x) -> y``, the Conv of ``plan`` by weights ``wl`` laid out for its route, ``(gemm,
    loop, small)``: the shifted products where ``gemm`` is given, the compiled taps where ``loop``
    is, else the plan's method (columns gathered where ``small``), chosen once; computed in
    ``dtype`` and given back in X's type ``x_dtype`` (a float16 X is computed in float32, then
    rounded to float16; a float32 X is passed straight through)."""
    gemm, loop, small = route
    if gemm is not None:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_shifted(x, wl, plan, spatial, bias, gemm)

    elif loop is not None:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps_compiled(x, wl, plan, spatial, bias, loop)

    elif plan.method == "taps" and wl.shape[2] == 1 and math.prod(plan.out) <= SMALL_PLANE:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps_channels_last(x, wl, plan, spatial, bias)

    elif plan.method == "taps":

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps(x, wl, plan, spatial, bias)

    elif plan.method == "pointwise":

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_pointwise(x, wl, plan, bias)

    elif small:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_gathered(x, wl, plan, spatial, bias)

    else:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_im2col(x, wl, plan, spatial, bias)

    if x_dtype == dtype:
        return inner

    def cast(x: np.ndarray) -> np.ndarray:
        return inner(x.astype(dtype)).astype(x_dtype, copy=False)

    return cast


@register("Conv", 1, traits=Traits(work=CONV_WORK, fresh=True))  # a new array, never a view
def conv(node: OpNode) -> Kernel:
    """Conv-1, -11 and -22 share one rule (see the module text): versions differ only in wording
    (Conv-1's SAME "match the input" is ceil(L/s) by its shape inference) and in bfloat16 (22).
    A (1, 2, 5, 5) input, W (4, 1, 3, 3), group 2, pads 1: output (1, 4, 5, 5), output channels
    0-1 read input channel 0, channels 2-3 input channel 1."""
    return _conv_factory(node)


# ------------------------------------------------------------------------------- ConvTranspose


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

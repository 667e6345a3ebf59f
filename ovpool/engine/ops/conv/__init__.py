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

The package's modules, by concept: ``attributes`` (the node's attributes, checked), ``buffers``
(padding, the bias add, numpy's ufunc buffer), ``plan`` (ConvPlan, phase geometry, weight layout,
the route), ``gemm`` (pointwise, im2col, gathered and shifted products), ``taps`` (the tap loops,
numpy's and compiled), ``forward`` (the Conv operator) and ``transpose`` (ConvTranspose). Every
name stays importable from ``ovpool.engine.ops.conv``.
"""

from __future__ import annotations

from ovpool.engine.ops.conv.attributes import AUTO_PADS, Attrs, _check_bias, _check_kernel, _compute_dtype, _ints, parse
from ovpool.engine.ops.conv.buffers import (
    SMALL_ADD,
    UFUNC_BUFFER,
    _add_bias,
    _pad_buffer,
    _padded,
    _padded_shape,
    _Padding,
    _padding,
    small_ufunc_buffers,
)
from ovpool.engine.ops.conv.forward import CONV_WORK, SMALL_COLUMNS, SMALL_PLANE, _bound, _conv_factory, conv
from ovpool.engine.ops.conv.gemm import (
    COLS_BYTES,
    _conv_gathered,
    _conv_im2col,
    _conv_pointwise,
    _conv_shifted,
    _gather_index,
    _im2col_layout,
    _Im2colLayout,
)
from ovpool.engine.ops.conv.plan import (
    DIRECT_CELLS,
    DIRECT_CHANNELS,
    DIRECT_PRODUCTS,
    SHIFT_CELLS,
    SHIFT_CELLS_UNIT,
    SHIFT_CHANNELS,
    SHIFT_WASTE,
    SHIFT_WORK,
    ConvPlan,
    _phase_geometry,
    _PhaseGeometry,
    conv_method,
    conv_plan,
    conv_weights,
    route,
    shifts,
)
from ovpool.engine.ops.conv.taps import (
    TILE_BYTES,
    WIDE_RUNS,
    _compiled_geometry,
    _CompiledGeometry,
    _conv_taps,
    _conv_taps_channels_last,
    _conv_taps_compiled,
    _copy_ints,
    _taps_layout,
    _TapsLayout,
)
from ovpool.engine.ops.conv.transpose import (
    Split,
    TransposePlan,
    _phase_range,
    _transpose_factory,
    _transpose_run,
    conv_transpose_1,
    conv_transpose_11,
    split_version1,
    split_version11,
    transpose_plan,
    transpose_weights,
)

__all__ = [
    "AUTO_PADS",
    "Attrs",
    "_check_bias",
    "_check_kernel",
    "_compute_dtype",
    "_ints",
    "parse",
    "SMALL_ADD",
    "UFUNC_BUFFER",
    "_Padding",
    "_add_bias",
    "_pad_buffer",
    "_padded",
    "_padded_shape",
    "_padding",
    "small_ufunc_buffers",
    "ConvPlan",
    "DIRECT_CELLS",
    "DIRECT_CHANNELS",
    "DIRECT_PRODUCTS",
    "SHIFT_CELLS",
    "SHIFT_CELLS_UNIT",
    "SHIFT_CHANNELS",
    "SHIFT_WASTE",
    "SHIFT_WORK",
    "_PhaseGeometry",
    "_phase_geometry",
    "conv_method",
    "conv_plan",
    "conv_weights",
    "route",
    "shifts",
    "COLS_BYTES",
    "_Im2colLayout",
    "_conv_gathered",
    "_conv_im2col",
    "_conv_pointwise",
    "_conv_shifted",
    "_gather_index",
    "_im2col_layout",
    "TILE_BYTES",
    "WIDE_RUNS",
    "_CompiledGeometry",
    "_TapsLayout",
    "_compiled_geometry",
    "_conv_taps",
    "_conv_taps_channels_last",
    "_conv_taps_compiled",
    "_copy_ints",
    "_taps_layout",
    "CONV_WORK",
    "SMALL_COLUMNS",
    "SMALL_PLANE",
    "_bound",
    "_conv_factory",
    "conv",
    "Split",
    "TransposePlan",
    "_phase_range",
    "_transpose_factory",
    "_transpose_run",
    "conv_transpose_1",
    "conv_transpose_11",
    "split_version1",
    "split_version11",
    "transpose_plan",
    "transpose_weights",
]

"""Convolutions and pooling.

Convolution is ONNX Conv-11 with ``pads = pads_begin + pads_end``, GroupConvolution the same with
its ``[G, C_out/G, C_in/G, k...]`` weights seen as ``[C_out, C_in/G, k...]`` and ``group=G``.
Integer Convolution (ConvInteger as the ONNX frontend writes it) is exact.

ConvolutionBackpropData weights are ``[C_in, C_out, k...]`` (grouped: ``[G, C_in/G, C_out/G,
k...]``); the full output ``s * (L - 1) + (k - 1) * d + 1 + output_padding`` is cropped by the pads;
``same_*`` without ``output_shape`` crops nothing (L=5, k=3, s=2: 11 outputs, not ONNX's 10);
with ``output_shape``, the output starts at ``pads_begin`` (explicit), or at ``total - total //
2`` (same_upper) or ``total // 2`` (same_lower) of ``total = full - output_shape``.

AvgPool and MaxPool run on ovpool's pooling kernels with the IR's meaning.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ovpool import kernels
from ovpool.engine.ir_layers.base import Builder, LayerNode, cached, ints_of, layer, same_type
from ovpool.engine.ops.base import Kernel, Traits
from ovpool.engine.ops.conv import CONV_WORK
from ovpool.engine.ops.pooling import MAX_POOLING, POOLING
from ovpool.errors import SpecError
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.templates import versions_of

_AUTO_PADS = {"explicit": "NOTSET", "notset": "NOTSET", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}


def _conv_attrs(node: LayerNode) -> dict[str, Any]:
    """Convolution's attributes as ONNX Conv's: ``pads = pads_begin + pads_end`` when explicit."""
    auto_pad = _AUTO_PADS[node.choice("auto_pad", "explicit", tuple(_AUTO_PADS))]
    attrs: dict[str, Any] = {
        "strides": list(node.ints("strides")),
        "dilations": list(node.ints("dilations")),
        "auto_pad": auto_pad,
    }
    if auto_pad == "NOTSET":
        attrs["pads"] = list(node.ints("pads_begin") + node.ints("pads_end"))
    return attrs


def _backprop_window(
    node: LayerNode, full: Sequence[int], output_shape: Sequence[int] | None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where ConvolutionBackpropData's output lies in the full output (``full`` per spatial axis,
    output_padding included): (starts, sizes). Without ``output_shape``: explicit pads crop
    (start ``pads_begin``, size ``full - pads_begin - pads_end``), ``valid`` and ``same_*`` crop
    nothing. With it, the size is ``output_shape`` and the start ``pads_begin`` (explicit), 0
    (valid), ``total - total // 2`` (same_upper) or ``total // 2`` (same_lower), ``total = full -
    output_shape``: full 11, output_shape 8, same_upper starts at 2. A window past the full output
    reads zeros."""
    auto_pad = node.choice("auto_pad", "explicit", tuple(_AUTO_PADS))
    rank = len(full)
    begin = node.ints("pads_begin", (0,) * rank) if auto_pad in ("explicit", "notset") else (0,) * rank
    if output_shape is None:
        end = node.ints("pads_end", (0,) * rank) if auto_pad in ("explicit", "notset") else (0,) * rank
        return tuple(begin), tuple(f - b - e for f, b, e in zip(full, begin, end))
    if len(output_shape) != rank:
        raise node.fail(f"output_shape {list(output_shape)} has {len(output_shape)} values for {rank} spatial axes")
    totals = [f - o for f, o in zip(full, output_shape)]
    if auto_pad == "same_upper":
        begin = tuple(t - t // 2 for t in totals)
    elif auto_pad == "same_lower":
        begin = tuple(t // 2 for t in totals)
    return tuple(begin), tuple(output_shape)


def _window(y: np.ndarray, starts: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """``y``'s spatial axes cut to ``sizes`` from ``starts``, zeros where that runs past ``y``."""
    if all(s == 0 for s in starts) and tuple(sizes) == y.shape[2:]:
        return y
    out = np.zeros(y.shape[:2] + tuple(sizes), y.dtype)
    source, target = [slice(None)] * 2, [slice(None)] * 2
    for start, size, length in zip(starts, sizes, y.shape[2:]):
        low, high = max(start, 0), min(start + size, length)
        if high <= low:
            return out
        source.append(slice(low, high))
        target.append(slice(low - start, high - start))
    out[tuple(target)] = y[tuple(source)]
    return out


def _grouped(weights: np.ndarray) -> np.ndarray:
    """Grouped weights in ONNX's layout: [G, C_out/G, C_in/G, k...] -> [C_out, C_in/G, k...]
    (backprop: [G, C_in/G, C_out/G, k...] -> [C_in, C_out/G, k...]): the first two axes merged."""
    return weights.reshape((weights.shape[0] * weights.shape[1],) + weights.shape[2:])


class _Held:
    """A constant weight passed through a memoised builder by identity (arrays are not hashable)."""

    def __init__(self, value: np.ndarray | None) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Held) and other.value is self.value


def _convolution(grouped: bool, transposed: bool) -> Builder:
    """Convolution (ONNX Conv-11) and ConvolutionBackpropData (the full output of ONNX
    ConvTranspose with no pads, then ``_backprop_window``), and their grouped forms (``group`` =
    the weights' first dim). Constant weights are laid out once; a kernel is built per group count.
    Integer data and weights (ONNX ConvInteger as OpenVINO writes it: i32 after subtracting the zero
    points) are convolved exactly, in float64 (every product and partial sum of 8-bit values is a
    whole number far below 2**53), and the sums are cast to the data's type."""

    def build(node: LayerNode) -> Kernel:
        if transposed:
            padding = node.ints("output_padding", ())
            attrs = {"strides": list(node.ints("strides")), "dilations": list(node.ints("dilations")), "auto_pad": "VALID"}
            op, since = "ConvTranspose", 11
        else:
            attrs, op, since = _conv_attrs(node), "Conv", 11

        @cached
        def by_group(group: int, held: _Held) -> Kernel:
            return node.onnx(op, since, {**attrs, "group": group}, (None, held.value))

        w_const = node.constant(1)
        if w_const is not None and w_const.dtype.kind in "iu":
            w_const = w_const.astype(np.float64)
        ready = _Held(_grouped(w_const) if grouped and w_const is not None else w_const)

        def kernel(x: np.ndarray, w: np.ndarray, output_shape: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
            group = w.shape[0] if grouped else 1
            integer = x.dtype if x.dtype.kind in "iu" else None
            if integer is not None:
                same_type(node, x, w)
                x, w = x.astype(np.float64), w.astype(np.float64)
            weights = ready.value if ready.value is not None else (_grouped(w) if grouped else w)
            y = by_group(group, ready)(x, weights)[0]
            if integer is not None:
                y = np.rint(y).astype(np.int64).astype(integer)
            if not transposed:
                return (y,)
            full = [f + p for f, p in zip(y.shape[2:], padding or (0,) * (y.ndim - 2))]
            starts, sizes = _backprop_window(node, full, None if output_shape is None else ints_of(output_shape))
            if any(n < 1 for n in sizes):
                raise node.fail(f"the pads leave no output of the full output {full}")
            return (_window(y, starts, sizes),)

        return kernel

    return build


_CONV = Traits(work=CONV_WORK)  # on ONNX Conv's and ConvTranspose's kernels
layer("Convolution", 1, traits=_CONV)(_convolution(grouped=False, transposed=False))
layer("GroupConvolution", 1, traits=_CONV)(_convolution(grouped=True, transposed=False))
layer("ConvolutionBackpropData", 1, traits=_CONV)(_convolution(grouped=False, transposed=True))
layer("GroupConvolutionBackpropData", 1, traits=_CONV)(_convolution(grouped=True, transposed=True))


def _pooling(node: LayerNode) -> Kernel:
    """AvgPool/MaxPool of every templated version with the IR's meaning (``ceil`` keeps a window
    that lies in the padding, ``exclude-pad="false"`` divides by the whole kernel), on ovpool's
    pooling kernels; MaxPool-8/14 computes its indices only when they are read."""
    layer_ = node.layer
    template = template_for(layer_.type, layer_.version, node.label)
    with_indices = node.n_outputs > 1

    @functools.lru_cache(maxsize=8)
    def spec_for(rank: int, dtype: str) -> Any:
        try:
            return spec_from_layer(template, layer_.data, rank, dtype, layer_.name, with_indices=with_indices)
        except SpecError as exc:
            raise exc.at(node.label) from None

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        spec = spec_for(x.ndim, x.dtype.name)
        try:
            result = kernels.pool(x, spec)
        except SpecError as exc:
            raise exc.at(node.label) from None
        return result if isinstance(result, tuple) else (result,)

    return kernel


for _type in ("AvgPool", "MaxPool"):
    layer(_type, *(t.since for t in versions_of(_type)), traits=MAX_POOLING if _type == "MaxPool" else POOLING)(_pooling)


def biased_convolution(node: LayerNode, weights: np.ndarray, bias: np.ndarray, separate: Kernel) -> Kernel:
    """A Convolution or GroupConvolution of constant float ``weights`` (as the layer reads them)
    and the Add of a per-channel ``bias`` (``C`` values) after it, as one step ``(x, w, b) -> y``:
    ONNX Conv-11's kernel with ``B``, which adds the bias to each finished sum (``sum + b``, the
    Add's own operation; every Conv route does, ``ovpool.engine.ops.conv``): x 1, w 2, b 0.5 gives
    2.5 either way, bit for bit. Data of another type than the weights runs ``separate`` (the
    layer's kernel, then the Add), which says what is wrong with it as the two layers do."""
    grouped = node.layer.type == "GroupConvolution"
    laid = _grouped(weights) if grouped else weights
    attrs = {**_conv_attrs(node), "group": weights.shape[0] if grouped else 1}
    conv = node.onnx("Conv", 11, attrs, (None, laid, bias))

    def kernel(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype != laid.dtype or w is not weights or b is not bias:
            return separate(x, w, b)
        return conv(x, laid, bias)

    return kernel

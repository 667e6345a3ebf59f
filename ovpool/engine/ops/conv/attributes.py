"""A Conv or ConvTranspose node's attributes as given, checked (signs, agreement, the kernel and
bias shapes against W's), and the type it is computed in (float16 and bfloat16 in float32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ovpool.engine.ops.base import OpNode

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


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

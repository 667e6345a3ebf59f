"""Layers that move elements without computing new values: ShuffleChannels, BatchToSpace,
SpaceToBatch, Roll, and Eye, which writes an identity.

- ShuffleChannels-1 splits ``axis`` (default 1) into ``group`` rows and reads it column-wise:
  6 channels in 2 groups come out 0 3 1 4 2 5.
- SpaceToBatch-2 pads each axis by ``pads_begin``/``pads_end`` and moves the ``block_shape``
  blocks of every axis (the batch's block is 1) into the batch, the block offsets outermost;
  BatchToSpace-2 is its inverse, then crops ``crops_begin``/``crops_end``. [1, 1, 4] with block
  [1, 1, 2] gives [2, 1, 2]: the even then the odd elements.
- Roll-7 shifts the ``axes`` (an input) cyclically by ``shift`` (one per axis, or one for all),
  as numpy's roll: [1, 2, 3, 4] by 1 gives [4, 1, 2, 3].
- Eye-9 is a ``num_rows x num_columns`` matrix of ``output_type`` with ones on the diagonal
  ``diagonal_index`` (above the main one when positive), repeated over ``batch_shape``.
"""

from __future__ import annotations

import math

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, ints_of, layer
from ovpool.engine.ops.base import Kernel


@layer("ShuffleChannels", 1)
def shuffle_channels(node: LayerNode) -> Kernel:
    """ShuffleChannels-1: ``axis`` of length C seen as [group, C / group], transposed."""
    axis, group = node.integer("axis", 1), node.integer("group", 1)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if not -x.ndim <= axis < x.ndim or group < 1 or x.shape[axis % x.ndim] % group:
            raise node.fail(f"axis {axis} and group {group} do not split input {list(x.shape)}")
        a = axis % x.ndim
        split = x.reshape(x.shape[:a] + (group, x.shape[a] // group) + x.shape[a + 1 :])
        return (np.swapaxes(split, a, a + 1).reshape(x.shape),)

    return kernel


def _blocks(node: LayerNode, x: np.ndarray, block: np.ndarray, *pads: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """``block_shape`` and the two pad or crop inputs as tuples of one value per axis, checked."""
    values = tuple(ints_of(v) for v in (block, *pads))
    if any(len(v) != x.ndim for v in values) or values[0][0] != 1 or min(values[0]) < 1 or min(min(v) for v in values[1:]) < 0:
        raise node.fail(
            f"block_shape and pads {[list(v) for v in values]} do not fit input {list(x.shape)} (block 1 on the batch)"
        )
    return values


@layer("SpaceToBatch", 2)
def space_to_batch(node: LayerNode) -> Kernel:
    """SpaceToBatch-2 (data, block_shape, pads_begin, pads_end); see the module text."""

    def kernel(x: np.ndarray, block: np.ndarray, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        blocks, pb, pe = _blocks(node, x, block, begin, end)
        y = np.pad(x, list(zip(pb, pe)))
        if any(d % b for d, b in zip(y.shape, blocks)):
            raise node.fail(f"padded dims {list(y.shape)} are not multiples of block_shape {list(blocks)}")
        n = y.ndim
        split = y.reshape(tuple(v for d, b in zip(y.shape, blocks) for v in (d // b, b)))
        order = [2 * i + 1 for i in range(n)] + [0] + [2 * i for i in range(1, n)]
        moved = split.transpose(order)  # [B_0 (1), B_1, ..., batch, D_1 / B_1, ...]
        return (moved.reshape((y.shape[0] * math.prod(blocks),) + tuple(d // b for d, b in zip(y.shape[1:], blocks[1:]))),)

    return kernel


@layer("BatchToSpace", 2)
def batch_to_space(node: LayerNode) -> Kernel:
    """BatchToSpace-2 (data, block_shape, crops_begin, crops_end): SpaceToBatch undone, then cropped."""

    def kernel(x: np.ndarray, block: np.ndarray, begin: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        blocks, cb, ce = _blocks(node, x, block, begin, end)
        inner = blocks[1:]
        total = math.prod(inner)
        if x.shape[0] % total:
            raise node.fail(f"batch {x.shape[0]} is not a multiple of the blocks {list(blocks)}")
        n = x.ndim - 1
        split = x.reshape(tuple(inner) + (x.shape[0] // total,) + x.shape[1:])
        order = [n] + [a for i in range(n) for a in (n + 1 + i, i)]
        y = split.transpose(order).reshape((x.shape[0] // total,) + tuple(d * b for d, b in zip(x.shape[1:], inner)))
        if any(b + e > d for b, e, d in zip(cb, ce, y.shape)):
            raise node.fail(f"crops {list(cb)}, {list(ce)} exceed {list(y.shape)}")
        return (y[tuple(slice(b, d - e) for b, e, d in zip(cb, ce, y.shape))],)

    return kernel


@layer("Roll", 7)
def roll(node: LayerNode) -> Kernel:
    """Roll-7 (data, shift, axes): numpy's roll, a single shift applying to every axis."""

    def kernel(x: np.ndarray, shift: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        s, a = ints_of(shift), ints_of(axes)
        if len(s) == 1:
            s = s * len(a)
        if len(s) != len(a) or any(not -x.ndim <= v < x.ndim for v in a):
            raise node.fail(f"shift {list(s)} and axes {list(a)} do not fit a rank-{x.ndim} input")
        return (np.roll(x, s, a) if a else x,)

    return kernel


@layer("Eye", 9)
def eye(node: LayerNode) -> Kernel:
    """Eye-9 (num_rows, num_columns, diagonal_index, optional batch_shape): 2 x 3 with diagonal 1
    gives [[0, 1, 0], [0, 0, 1]]."""
    dtype = node.element_type("output_type")

    def kernel(
        rows: np.ndarray, columns: np.ndarray, diagonal: np.ndarray, batch: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        n, m, k = (ints_of(v)[0] for v in (rows, columns, diagonal))
        if n < 0 or m < 0:
            raise node.fail(f"{n} rows and {m} columns: neither can be negative")
        matrix = np.eye(n, m, k, dtype=dtype)
        lead = () if batch is None else ints_of(batch)
        return (np.broadcast_to(matrix, lead + (n, m)).copy(),)

    return kernel

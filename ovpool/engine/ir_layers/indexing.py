"""Indexing IR layers: OneHot, GatherElements, GatherND, the scatters, CumSum, Reverse,
ReverseSequence, NonZero, Unique.

- OneHot-1 writes ``on_value`` where the new axis equals the index, ``off_value`` elsewhere; an
  index outside [0, depth) gives a row of ``off_value`` (OneHot-16 with
  ``negative_indices_mode="normalize"`` first counts [-depth, -1] from the end): indices [0, 2,
  -1], depth 3 give rows 100, 001, 000 (normalize: 001). The output has ``on_value``'s type.
- ScatterNDUpdate-4 replaces the slice at each index tuple by its update, in order (a repeated
  index keeps the last); ScatterNDUpdate-15 ``reduction`` combines instead, in order: ``sum``,
  ``sub`` (data - u1 - u2), ``prod``, ``min``, ``max`` (on booleans ``sum`` is or, ``prod`` and).
- ScatterElementsUpdate-3/12 addresses ``data`` as GatherElements does (``axis`` an input); -12's
  ``reduction`` (none, sum, prod, min, max, mean) combines the updates of an element with its data
  value, or, with ``use_init_val="false"``, with the reduction's neutral value instead; ``mean``
  divides the sum by the count (data value included when used), integers rounding down: data 1
  with updates 2 and 4 gives 7/3 = 2.33 in f32, 2 in i32 (without the data value: 3).
- Indices may be negative (counted from the end of their axis) in GatherElements, GatherND, the
  scatters; GatherND-5 merges its ``batch_dims`` leading output axes into one, GatherND-8 keeps them.
- Reverse-1 flips the axes given by index (``mode="index"``) or by a boolean mask (``"mask"``);
  ReverseSequence-1 reverses the first ``seq_lengths[b]`` elements along ``seq_axis`` of each batch
  ``b`` of ``batch_axis``: [1, 2, 3, 4] with length 3 gives [3, 2, 1, 4].
- NonZero-3 gives the ``[rank, count]`` coordinates of the non-zero elements in row-major order
  (``output_type`` i64 or i32); Unique-10 the distinct values (of the flattened data, or the
  slices along the ``axis`` input), sorted or (``sorted="false"``) in order of first occurrence,
  with first-occurrence indices, the inverse indices and the counts, as ONNX Unique-11.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, cached, int64, ints_of, layer
from ovpool.engine.ops.base import Kernel


@layer("OneHot", 1, 16)
def one_hot(node: LayerNode) -> Kernel:
    """OneHot-1/16 (indices, depth, on_value, off_value) as ONNX OneHot-9 (an index outside [0,
    depth) gives no on value) or, for ``negative_indices_mode="normalize"``, OneHot-11; a scalar
    index gives a 1-D output of ``depth`` values."""
    v16 = node.layer.version == "opset16"
    normalize = v16 and node.choice("negative_indices_mode", "ignore_negative", ("ignore_negative", "normalize")) == "normalize"
    # a constant depth and on/off pair are the ONNX kernel's constants: counted and made once (8 us a call less)
    fixed_depth, fixed_on, fixed_off = (node.constant(i) for i in (1, 2, 3))
    pair = None
    if fixed_on is not None and fixed_off is not None and fixed_on.size == 1 and fixed_off.size == 1:
        pair = np.stack([fixed_off.reshape(()), fixed_on.reshape(())])
    depth_constant = None if fixed_depth is None else np.asarray(fixed_depth).reshape(-1)
    onnx_one_hot = node.onnx("OneHot", 11 if normalize else 9, {"axis": node.integer("axis")}, (None, depth_constant, pair))

    def kernel(indices: np.ndarray, depth: np.ndarray, on: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, ...]:
        if on.size != 1 or off.size != 1:
            raise node.fail(f"on_value {list(on.shape)} and off_value {list(off.shape)} must be one value each")
        values = pair if pair is not None and on is fixed_on and off is fixed_off else np.stack([off.reshape(()), on.reshape(())])
        scalar = indices.ndim == 0
        depths = depth if depth_constant is not None else np.asarray(depth).reshape(-1)  # a constant: the kernel's own
        (out,) = onnx_one_hot(indices.reshape(-1) if scalar else indices, depths, values)
        return (out.reshape(-1) if scalar else out,)

    return kernel


@layer("GatherElements", 6)
def gather_elements(node: LayerNode) -> Kernel:
    """GatherElements-6: ONNX GatherElements-11 along ``axis``: out[i][j] = data[indices[i][j]][j] on axis 0."""
    return node.onnx("GatherElements", 11, {"axis": node.integer("axis")})


@layer("GatherND", 5, 8)
def gather_nd(node: LayerNode) -> Kernel:
    """GatherND-5/8: ONNX GatherND-12 with ``batch_dims``; version 5 merges the batch axes of the
    output into one: data (2, 3, 4), indices (2, 3, 1), batch_dims 2 give (6,) in 5, (2, 3) in 8."""
    batch_dims = node.integer("batch_dims", 0)
    onnx_gather = node.onnx("GatherND", 12, {"batch_dims": batch_dims})
    merge = node.layer.version == "opset5" and batch_dims > 1

    def kernel(data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        (out,) = onnx_gather(data, indices.astype(np.int64, copy=False))
        return (out.reshape((-1,) + out.shape[batch_dims:]) if merge else out,)

    return kernel


_ND_REDUCTIONS = {"none": "none", "sum": "add", "sub": "add", "prod": "mul", "min": "min", "max": "max"}


@layer("ScatterNDUpdate", 4, 15)
def scatter_nd_update(node: LayerNode) -> Kernel:
    """ScatterNDUpdate-4 (replace) and -15 (``reduction``) on ONNX ScatterND-18 (none, add, mul,
    min, max); ``sub`` is the sum of the negated updates (exact: a + (-u) is a - u in floats and
    in wrapping integers): data [5], indices [[0], [0]], updates [1, 2], sub gives [2]."""
    reduction = node.choice("reduction", "none", tuple(_ND_REDUCTIONS)) if node.layer.version == "opset15" else "none"
    onnx_scatter = node.onnx("ScatterND", 18, {"reduction": _ND_REDUCTIONS[reduction]})

    def kernel(data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> tuple[np.ndarray, ...]:
        if updates.dtype != data.dtype:
            raise node.fail(f"updates are {updates.dtype}, data {data.dtype}: the layer takes one element type")
        if reduction == "sub":
            if data.dtype == np.bool_:
                raise node.fail("reduction sub of booleans is not defined", "reduction")
            with np.errstate(over="ignore"):
                updates = np.negative(updates)
        return onnx_scatter(data, indices.astype(np.int64, copy=False), updates)

    return kernel


_ELEMENT_REDUCTIONS = {"none": "none", "sum": "add", "mean": "add", "prod": "mul", "min": "min", "max": "max"}


def _neutral(reduction: str, dtype: np.dtype) -> Any:
    """The value a reduction starts from without the data's own: 0 (sum, mean), 1 (prod), the
    type's largest (min) or lowest (max) value."""
    if reduction in ("sum", "mean"):
        return dtype.type(0)
    if reduction == "prod":
        return dtype.type(1)
    if dtype == np.bool_:
        return reduction == "min"
    info: Any = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.max if reduction == "min" else info.min


@layer("ScatterElementsUpdate", 3, 12)
def scatter_elements_update(node: LayerNode) -> Kernel:
    """ScatterElementsUpdate-3 (replace) and -12 (``reduction``, ``use_init_val``) on ONNX
    ScatterElements-18 along the ``axis`` input; the rules are in the module text."""
    v12 = node.layer.version == "opset12"
    reduction = node.choice("reduction", "none", tuple(_ELEMENT_REDUCTIONS)) if v12 else "none"
    use_init = node.flag("use_init_val", True) if v12 else True
    by_axis = cached(lambda axis, op: node.onnx("ScatterElements", 18, {"axis": axis, "reduction": op}))

    def kernel(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        if updates.dtype != data.dtype:
            raise node.fail(f"updates are {updates.dtype}, data {data.dtype}: the layer takes one element type")
        a = ints_of(axis)[0]
        index = indices.astype(np.int64, copy=False)
        if reduction == "none":
            return by_axis(a, "none")(data, index, updates)
        if reduction == "mean" or not use_init:
            # how many updates land on each element (0: untouched)
            (counts,) = by_axis(a, "add")(np.zeros(data.shape, np.int64), index, np.ones(index.shape, np.int64))
        if not use_init:
            data = np.where(counts > 0, _neutral(reduction, data.dtype), data)
        (out,) = by_axis(a, _ELEMENT_REDUCTIONS[reduction])(data, index, updates)
        if reduction == "mean":
            n = np.maximum(counts + int(use_init), 1)
            if data.dtype.kind in "iu":
                means = np.floor(out.astype(np.float64) / n).astype(data.dtype)
            else:
                means = (out / n.astype(out.dtype)).astype(data.dtype)
            out = np.where(counts > 0, means, out)
        return (out,)

    return kernel


@layer("ScatterUpdate", 3)
def scatter_update(node: LayerNode) -> Kernel:
    """ScatterUpdate-3: the slices of ``data`` along ``axis`` at ``indices`` replaced by ``updates``
    of shape data.shape[:axis] + indices.shape + data.shape[axis + 1:], in order: data zeros (3,),
    indices [2, 0], updates [7, 8] give [8, 0, 7]."""

    def kernel(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        a = ints_of(axis)[0]
        if not -data.ndim <= a < data.ndim:
            raise node.fail(f"axis {a} is outside a rank-{data.ndim} input")
        a %= data.ndim
        n = data.shape[a]
        index = indices.astype(np.int64).reshape(-1)
        if np.any((index < -n) | (index >= n)):
            raise node.fail(f"indices {sorted(set(index[(index < -n) | (index >= n)].tolist()))[:3]} are outside axis {a} of {n}")
        want = data.shape[:a] + indices.shape + data.shape[a + 1 :]
        if updates.shape != want:
            raise node.fail(f"updates {list(updates.shape)} are not {list(want)}")
        out = np.moveaxis(data.copy(), a, 0)
        out[index % n] = np.moveaxis(updates.reshape(data.shape[:a] + (index.size,) + data.shape[a + 1 :]), a, 0)
        return (np.moveaxis(out, 0, a),)

    return kernel


@layer("CumSum", 3)
def cumsum(node: LayerNode) -> Kernel:
    """CumSum-3: ONNX CumSum-14 along the ``axis`` input (axis 0 when absent), ``exclusive`` and
    ``reverse``: [1, 2, 3] gives [1, 3, 6]."""
    attrs = {"exclusive": int(node.flag("exclusive", False)), "reverse": int(node.flag("reverse", False))}
    onnx_cumsum = node.onnx("CumSum", 14, attrs)

    def kernel(x: np.ndarray, axis: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        return onnx_cumsum(x, np.int64(0) if axis is None else np.asarray(axis).astype(np.int64).reshape(()))

    return kernel


@layer("Reverse", 1)
def reverse(node: LayerNode) -> Kernel:
    """Reverse-1: ``data`` flipped along the axes of the second input, indices (``mode="index"``)
    or one boolean per axis (``"mask"``): [[1, 2], [3, 4]] on axis 1 gives [[2, 1], [4, 3]]."""
    by_mask = node.choice("mode", "index", ("index", "mask")) == "mask"

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        if by_mask:
            mask = np.asarray(axes).reshape(-1)
            if mask.size != x.ndim:
                raise node.fail(f"a mask of {mask.size} values for a rank-{x.ndim} input", "mode")
            chosen = tuple(int(i) for i in np.flatnonzero(mask))
        else:
            chosen = ints_of(axes)
            if any(not -x.ndim <= a < x.ndim for a in chosen):
                raise node.fail(f"axes {list(chosen)} fall outside a rank-{x.ndim} input")
        return (np.flip(x, tuple(a % x.ndim for a in chosen)).copy() if chosen else x,)

    return kernel


@layer("ReverseSequence", 1)
def reverse_sequence(node: LayerNode) -> Kernel:
    """ReverseSequence-1: along ``seq_axis`` (default 1), the first ``seq_lengths[b]`` elements of
    each batch ``b`` of ``batch_axis`` (default 0) in reverse order, the rest as they are."""
    batch_attr, seq_attr = node.integer("batch_axis", 0), node.integer("seq_axis", 1)

    def kernel(x: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
        rank = x.ndim
        if not (-rank <= batch_attr < rank and -rank <= seq_attr < rank) or batch_attr % rank == seq_attr % rank:
            raise node.fail(f"batch_axis {batch_attr} and seq_axis {seq_attr} must be distinct axes of a rank-{rank} input")
        b, s = batch_attr % rank, seq_attr % rank
        count = int64(lengths)
        assert count is not None
        if count.size != x.shape[b] or np.any((count < 0) | (count > x.shape[s])):
            raise node.fail(f"seq_lengths {count.tolist()} do not fit batch {x.shape[b]} and sequence {x.shape[s]}")
        t = np.arange(x.shape[s])
        source = np.where(t[None, :] < count[:, None], count[:, None] - 1 - t[None, :], t[None, :])  # [batch, seq]
        moved = np.moveaxis(x, (b, s), (0, 1))
        index = source.reshape(source.shape + (1,) * (rank - 2))
        out = np.take_along_axis(moved, np.broadcast_to(index, moved.shape), axis=1)
        return (np.moveaxis(out, (0, 1), (b, s)),)

    return kernel


@layer("NonZero", 3)
def non_zero(node: LayerNode) -> Kernel:
    """NonZero-3: ONNX NonZero-9's ``[rank, count]`` coordinates as ``output_type`` (i64 by
    default): [[1, 0], [0, 3]] gives [[0, 1], [0, 1]]; a 0-d input counts as one of shape [1], as
    OpenVINO's reference and CPU plugin count it: 0-d true gives [[0]], 0-d false an empty [1, 0]
    (the plugin's; the reference's empty result is [0, 0])."""
    index_type = node.element_type("output_type", "i64")
    onnx_non_zero = node.onnx("NonZero", 9)
    return lambda x: (onnx_non_zero(x.reshape(1) if x.ndim == 0 else x)[0].astype(index_type),)


@layer("Unique", 10)
def unique(node: LayerNode) -> Kernel:
    """Unique-10 (data, optional axis) on ONNX Unique-11: outputs the values, first-occurrence
    indices and inverse indices (``index_element_type``) and counts (``count_element_type``):
    [2, 1, 1, 3] unsorted gives [2, 1, 3], [0, 1, 3], [0, 1, 1, 2], [1, 2, 1]."""
    keep_sorted = node.flag("sorted", True)
    index_type = node.element_type("index_element_type", "i64")
    count_type = node.element_type("count_element_type", "i64")
    by_axis = cached(
        lambda axis: node.onnx(
            "Unique", 11, {"sorted": int(keep_sorted), **({} if axis is None else {"axis": axis})}, n_outputs=4
        )
    )

    def kernel(x: np.ndarray, axis: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        values, first, inverse, counts = by_axis(None if axis is None else ints_of(axis)[0])(x)
        return values, first.astype(index_type), inverse.astype(index_type), counts.astype(count_type)

    return kernel


@layer("Bucketize", 3)
def bucketize(node: LayerNode) -> Kernel:
    """Bucketize-3 (data, sorted buckets): the bucket of each value as ``output_type``; with
    ``with_right_bound`` (the default) bucket i holds buckets[i-1] < x <= buckets[i], else
    buckets[i-1] <= x < buckets[i]: buckets [1, 3], x 3 gives 1 (right bound) or 2."""
    right = node.flag("with_right_bound", True)
    index_type = node.element_type("output_type", "i64")

    def kernel(x: np.ndarray, buckets: np.ndarray) -> tuple[np.ndarray, ...]:
        edges = np.asarray(buckets).reshape(-1)
        return (np.searchsorted(edges, x, side="left" if right else "right").astype(index_type),)

    return kernel

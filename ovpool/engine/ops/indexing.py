"""Gather, scatter, sort and select operators: Gather, GatherElements, GatherND, Scatter,
ScatterElements, ScatterND, OneHot, CumSum, CumProd, TopK, NonZero, Compress, Unique.

Each since-version keeps its own meaning: negative indices only from the version that allows
them (Gather-1 and Scatter-9 refuse index -1, Gather-11 reads it as the last entry; OneHot-9 gives
an all-off row for index -1 where OneHot-11 sets the last class), GatherND ``batch_dims`` from 12,
scatter reductions from 16 (add, mul) and 18 (max, min), TopK's ``k`` an attribute in 1 and an
input from 10, ``largest``/``sorted`` from 11. All work is numpy indexing (``take``,
``take_along_axis``, fancy indexing, ``ufunc.at`` for reductions); an index out of bounds is the
node's error, never numpy's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ovpool.engine.memo import ShapeMemo, dtype_name
from ovpool.engine.ops.base import SHAPE_VALUE, Kernel, OpNode, normalize_axis, outputs, register
from ovpool.engine.ops.checks import type_guard
from ovpool.memory import check_tensor, fits

_FEW = 64  # indices up to this many are bounded in Python: two numpy reductions cost more


def _valid(node: OpNode, indices: np.ndarray, size: np.ndarray | int, negative: bool, what: str = "indices") -> None:
    """Every index in [-size, size) (``negative``) or [0, size); ``size`` broadcasts against the
    indices (GatherND: one size per index column)."""
    if indices.dtype.kind not in "iu":
        raise node.fail(f"input '{what}' must be an integer tensor, got {indices.dtype}")
    if not indices.size:
        return
    if isinstance(size, int):
        if indices.size <= _FEW:
            listed = indices.ravel().tolist()
            low, high = min(listed), max(listed)
        else:
            low, high = indices.min(), indices.max()
        if low >= (-size if negative else 0) and high < size:
            return
        outside = True
    else:
        low = -np.asarray(size) if negative else 0
        outside = bool(np.any(indices < low) or np.any(indices >= size))
    if outside:
        bounds = "[-s, s-1]" if negative else "[0, s-1]"
        raise node.fail(f"input '{what}' has a value outside {bounds} for axis size s = {np.asarray(size).tolist()}")


def _normalized(indices: np.ndarray, size: np.ndarray | int) -> np.ndarray:
    """Indices (already valid) with the negative ones counted from the end, as int64."""
    indices = indices.astype(np.int64, copy=False)
    return np.where(indices < 0, indices + size, indices)


class _ElementIndex:
    """GatherElements/ScatterElements addressing: for each entry of ``indices`` (same rank as the
    data, no longer than it off ``axis``) the data entry at the entry's own coordinates with the
    one on ``axis`` replaced by its value. Data (2,3), axis 1, indices [[2],[0]] address (0, 2) and
    (1, 0). The open grid of the other coordinates is made once per pair of shapes."""

    def __init__(self, node: OpNode, negative: bool) -> None:
        self._node = node
        self._negative = negative
        self._grids = ShapeMemo(self._grid)

    def _grid(self, key: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, tuple[np.ndarray | None, ...]]:
        """(axis, the coordinates off the axis as broadcastable aranges, None on the axis)."""
        shape, dims = key
        axis = _axis(self._node, len(shape))
        if len(dims) != len(shape) or any(i > d for n, (i, d) in enumerate(zip(dims, shape)) if n != axis):
            raise self._node.fail(f"indices {dims} must have the rank of data {shape} and fit in it off axis {axis}")
        ones = [1] * len(dims)
        grid = tuple(
            None if n == axis else np.arange(size, dtype=np.int64).reshape(ones[:n] + [size] + ones[n + 1 :])
            for n, size in enumerate(dims)
        )
        return axis, grid

    def __call__(self, indices: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """The index tuple into data of ``shape``; an index outside the axis is the node's error
        (negative ones, when allowed, count from the end as numpy's do)."""
        axis, grid = self._grids((shape, indices.shape))
        _valid(self._node, indices, shape[axis], self._negative)
        return tuple(indices if g is None else g for g in grid)


def _axis(node: OpNode, rank: int) -> int:
    return normalize_axis(node, int(node.attr("axis", 0)), rank)


def _reduction(node: OpNode) -> Callable[..., None] | None:
    """The ``ufunc.at`` of the node's ``reduction`` (16: add, mul; 18: also max, min), None for none."""
    if node.since < 16:
        return None
    allowed = {"none": None, "add": np.add.at, "mul": np.multiply.at}
    if node.since >= 18:
        allowed |= {"max": np.maximum.at, "min": np.minimum.at}
    reduction = node.attr("reduction", "none")
    if reduction not in allowed:
        raise node.fail(f"'{reduction}' is not one of {', '.join(allowed)} in {node.op_type}-{node.since}", "reduction")
    return allowed[reduction]


# ---------------------------------------------------------------------------------------------
# Gather family


@register("Gather", 1, traits=SHAPE_VALUE)
def gather(node: OpNode) -> Kernel:
    """Gather: output[i.., j..] = data[.., indices[i..], ..] along ``axis`` (default 0, negative
    allowed). Indices in [0, s) for Gather-1, [-s, s) from 11. data (3,2) = [[1,2],[3,4],[5,6]]
    with indices [[0,1],[1,2]] gives (2,2,2) = [[[1,2],[3,4]],[[3,4],[5,6]]]; index -1 (11+) is row 2."""
    negative = node.since >= 11
    axis_of: ShapeMemo[int, int] = ShapeMemo(lambda rank: _axis(node, rank))
    constant = node.constants[1] if len(node.constants) > 1 else None

    def bound(size: int) -> None:
        if constant is not None:
            _valid(node, constant, size, negative)

    bounded = ShapeMemo(bound)  # constant indices (silero's select of one row): once per axis size

    def kernel(data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        a = axis_of(data.ndim)
        if indices is constant and constant is not None:
            bounded(data.shape[a])
        else:
            _valid(node, indices, data.shape[a], negative)
        return outputs(data.take(indices, axis=a))  # np.take's method, without its wrapper

    return kernel


@register("GatherElements", 11)
def gather_elements(node: OpNode) -> Kernel:
    """GatherElements: output has the shape of ``indices``; out[i][j] = data[indices[i][j]][j] for
    axis 0 (data[i][indices[i][j]] for axis 1). [[1,2],[3,4]] with indices [[0,0],[1,0]], axis=1,
    gives [[1,1],[4,3]]. Off the axis ``indices`` may be shorter than ``data``."""
    index = _ElementIndex(node, True)

    def kernel(data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        return (data[index(indices, data.shape)],)

    return kernel


@register("GatherND", 11)
def gather_nd(node: OpNode) -> Kernel:
    """GatherND: each index tuple (last axis of ``indices``, length k) picks a slice of ``data``;
    the first ``batch_dims`` axes (12+, default 0) are shared. data (2,2,2) = [[[0,1],[2,3]],
    [[4,5],[6,7]]] with indices [[0,1],[1,0]] gives [[2,3],[4,5]]; with batch_dims=1 and indices
    [[1],[0]] it also gives [[2,3],[4,5]]."""
    b = int(node.attr("batch_dims", 0)) if node.since >= 12 else 0

    def kernel(data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        r, q = data.ndim, indices.ndim
        if not 0 <= b < min(q, r) or data.shape[:b] != indices.shape[:b]:
            raise node.fail(
                f"data {data.shape} and indices {indices.shape} must share {b} leading dims, b < min(q, r)", "batch_dims"
            )
        k = indices.shape[-1]
        if not 1 <= k <= r - b:
            raise node.fail(f"index tuples of length {k} must have 1..{r - b} entries for data {data.shape}")
        dims = data.shape[b : b + k]
        _valid(node, indices, np.array(dims), True)
        batch = math.prod(data.shape[:b])
        tuples = _normalized(indices, np.array(dims)).reshape(batch, -1, k) if batch else np.zeros((0, 0, k), np.int64)
        flat = np.ravel_multi_index(tuple(np.moveaxis(tuples, -1, 0)), dims)
        rows = data.reshape(batch, math.prod(dims), *data.shape[b + k :])
        return (rows[np.arange(batch)[:, None], flat].reshape(indices.shape[:-1] + data.shape[b + k :]),)

    return kernel


# ---------------------------------------------------------------------------------------------
# Scatter family


def _scatter_elements(node: OpNode, negative: bool) -> Kernel:
    reduce = _reduction(node)
    index = _ElementIndex(node, negative)

    def kernel(data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> tuple[np.ndarray, ...]:
        if indices.shape != updates.shape:
            raise node.fail(f"indices {indices.shape} and updates {updates.shape} must have one shape")
        where = index(indices, data.shape)
        result = data.copy()
        if reduce is None:
            result[where] = updates
        else:
            reduce(result, where, updates)
        return (result,)

    return kernel


@register("Scatter", 9, 10)
def scatter(node: OpNode) -> Kernel:
    """Scatter-9 (deprecated): ScatterElements-11's rule with indices in [0, s) only."""
    return _scatter_elements(node, False)


@register("Scatter", 11)
@register("ScatterElements", 11)
def scatter_elements(node: OpNode) -> Kernel:
    """ScatterElements: a copy of ``data`` where output[indices[i][j]][j] = updates[i][j] (axis 0;
    output[i][indices[i][j]] for axis 1), indices in [-s, s). From 16 ``reduction`` combines
    instead of replacing: add, mul; from 18 also max, min. data [[1,2,3,4,5]], indices [[1,3]],
    updates [[1.1,2.1]], axis=1 gives [[1,1.1,3,2.1,5]]; with reduction=add [[1,3.1,3,6.1,5]]."""
    return _scatter_elements(node, True)


@register("ScatterND", 11)
def scatter_nd(node: OpNode) -> Kernel:
    """ScatterND: a copy of ``data`` where the slice at each index tuple (last axis of
    ``indices``, length k) is replaced by the matching slice of ``updates``, of shape
    indices.shape[:-1] + data.shape[k:]; ``reduction`` as ScatterElements (16: add, mul; 18: max,
    min). data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12] gives [1,11,3,10,9,6,7,12]."""
    reduce = _reduction(node)

    def kernel(data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> tuple[np.ndarray, ...]:
        k = indices.shape[-1] if indices.ndim else 0
        if not 1 <= k <= data.ndim:
            raise node.fail(f"index tuples of length {k} must have 1..{data.ndim} entries for data {data.shape}")
        if updates.shape != indices.shape[:-1] + data.shape[k:]:
            raise node.fail(f"updates {updates.shape} must be indices.shape[:-1] + data.shape[{k}:]")
        dims = np.array(data.shape[:k])
        _valid(node, indices, dims, True)
        tuples = _normalized(indices, dims).reshape(-1, k)
        flat = np.ravel_multi_index(tuple(tuples.T), data.shape[:k])
        result = data.copy()
        rows = result.reshape(int(dims.prod()), *data.shape[k:])
        slices = updates.reshape(len(flat), *data.shape[k:])
        if reduce is None:
            rows[flat] = slices
        else:
            reduce(rows, flat, slices)
        return (result,)

    return kernel


# ---------------------------------------------------------------------------------------------
# OneHot, CumSum


@register("OneHot", 9)
def one_hot(node: OpNode) -> Kernel:
    """OneHot: a new axis of length ``depth`` at ``axis`` (default -1, range [-r-1, r]) holding
    values[1] (on) where it equals the index and values[0] (off) elsewhere. Indices and depth of
    other types are cast to int64. OneHot-9: indices outside [0, depth) give an all-off row;
    OneHot-11: [-depth, depth) are valid, -1 being the last class. Indices [0, 2, -1], depth 3,
    values [0, 5] give [[5,0,0],[0,0,5],[0,0,5]] in 11, last row [0,0,0] in 9. The output (the
    indices' dims with ``depth`` inserted at ``axis``) is held to the memory budget before any work:
    indices (40000,) with depth 40000 and float32 values would need 6.0 GiB."""
    axis = int(node.attr("axis", -1))
    negative = node.since >= 11

    def count(depth: np.ndarray) -> int:
        depth = np.asarray(depth)
        if depth.ndim > 1 or depth.size != 1:
            raise node.fail(f"input 'depth' must be a scalar or one value, got shape {depth.shape}")
        classes = int(depth.reshape(-1)[0])
        if classes < 1:
            raise node.fail(f"input 'depth' is {classes}, must be >= 1")
        return classes

    constant_depth = node.constants[1] if len(node.constants) > 1 else None
    fixed = None if constant_depth is None else count(constant_depth)

    def derive(key: tuple[tuple[int, ...], int]) -> tuple[list[int], tuple[int, ...], np.ndarray]:
        """(output dims, the indices' shape with a 1 at the class axis, the class numbers along it)."""
        shape, classes = key
        if not shape:
            raise node.fail("input 'indices' must have rank >= 1")
        a = normalize_axis(node, axis, len(shape) + 1)
        # The comparison reads an int64 range of depth numbers: larger than an int8 output of one index.
        check_tensor(f"{node.label}: class numbers", [classes], "int64")
        numbers = np.arange(classes, dtype=np.int64).reshape((1,) * a + (classes,) + (1,) * (len(shape) - a))
        return [*shape[:a], classes, *shape[a:]], (*shape[:a], 1, *shape[a:]), numbers

    layout = ShapeMemo(derive)
    constant_values = node.constants[2] if len(node.constants) > 2 else None
    # off and on of constant values as 0-d arrays (np.where reads them quicker than numpy scalars)
    fixed_pair = None
    if constant_values is not None and constant_values.shape == (2,):
        fixed_pair = (constant_values[1:].reshape(()), constant_values[:1].reshape(()))

    def kernel(indices: np.ndarray, depth: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
        classes = count(depth) if fixed is None else fixed
        if values.shape != (2,):
            raise node.fail(f"input 'values' must be [off, on], got shape {values.shape}")
        out_dims, spread, numbers = layout((indices.shape, classes))
        if not fits(math.prod(out_dims) * values.dtype.itemsize):  # the message is made only for a refusal
            check_tensor(f"{node.label}: output", out_dims, dtype_name(values.dtype), values.dtype.itemsize)
        index = indices.astype(np.int64, copy=False)
        if negative and (index.item() if index.size == 1 else index.min(initial=0)) < 0:
            index = np.where(index < 0, index + classes, index)
        on, off = fixed_pair if values is constant_values and fixed_pair is not None else (values[1], values[0])
        return (np.where(index.reshape(spread) == numbers, on, off),)

    return kernel


def _cumulative(node: OpNode, running: Callable[..., np.ndarray], identity: int) -> Kernel:
    """The kernel of CumSum/CumProd: ``running`` (np.cumsum, np.cumprod) along the ``axis`` input
    (one int32/int64 value) in T; ``exclusive`` shifts the results one place, ``identity`` first."""
    exclusive = bool(node.attr("exclusive", 0))
    reverse = bool(node.attr("reverse", 0))
    check = type_guard(node)

    def kernel(x: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        axis = np.asarray(axis)
        check(x, axis)
        if axis.size != 1 or axis.dtype.kind not in "iu":
            raise node.fail(f"input 'axis' must be one integer, got {axis.dtype} of shape {axis.shape}")
        a = normalize_axis(node, int(axis.reshape(-1)[0]), x.ndim)
        source = np.flip(x, a) if reverse else x
        with np.errstate(all="ignore"):
            results = running(source, axis=a, dtype=x.dtype)
        if exclusive:
            shifted = np.full_like(results, identity)
            lead = (slice(None),) * a
            shifted[(*lead, slice(1, None))] = results[(*lead, slice(None, -1))]
            results = shifted
        return (np.flip(results, a) if reverse else results,)

    return kernel


@register("CumSum", 11)
def cumsum(node: OpNode) -> Kernel:
    """CumSum: running sums along the ``axis`` input (0-D); ``exclusive`` leaves out the element
    itself, ``reverse`` runs from the end. [1,2,3]: [1,3,6]; exclusive [0,1,3]; reverse [6,5,3];
    both [5,3,0]. Sums are in T (int32 wraps, float16 rounds at each step)."""
    return _cumulative(node, np.cumsum, 0)


@register("CumProd", 26)
def cumprod(node: OpNode) -> Kernel:
    """CumProd-26: running products along the ``axis`` input (int32/int64, one value), as CumSum:
    [1,2,3]: [1,2,6]; exclusive [1,1,2]; reverse [6,6,3]; both [6,3,1]. Products are in T (int32
    wraps, float16 rounds at each step, as numpy's cumprod in the type does)."""
    return _cumulative(node, np.cumprod, 1)


# ---------------------------------------------------------------------------------------------
# TopK


@register("TopK", 1)
def top_k(node: OpNode) -> Kernel:
    """TopK: the k largest (or, from 11, with largest=0, smallest) values along ``axis`` (default
    -1) and their int64 indices, sorted, equal values in index order (the lower index first).
    ``k`` is an attribute in TopK-1, a one-value input from 10. [3,1,3,2] with k=2 gives values
    [3,3], indices [0,2]; smallest k=2: [1,2], indices [1,3]."""
    axis = int(node.attr("axis", -1))
    largest = bool(node.attr("largest", 1)) if node.since >= 11 else True
    if node.since < 10 and (node.attr("k") is None or int(node.attrs["k"]) < 1):
        raise node.fail(f"must be given and >= 1, got {node.attr('k')}", "k")
    fixed_k = int(node.attrs["k"]) if node.since < 10 else None

    def kernel(x: np.ndarray, k_input: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if fixed_k is None:
            if k_input is None or np.asarray(k_input).size != 1:
                raise node.fail("input 'K' must hold one value")
            k = int(np.asarray(k_input).reshape(-1)[0])
        else:
            k = fixed_k
        a = normalize_axis(node, axis, x.ndim)
        n = x.shape[a]
        if not 0 <= k <= n:
            raise node.fail(f"k = {k} is outside [0, {n}] for axis {a} of {x.shape}")
        rows = np.moveaxis(x, a, -1)
        index = _best(rows.reshape(math.prod(rows.shape[:-1]), n), k, largest).reshape(*rows.shape[:-1], k)
        index = np.moveaxis(index, -1, a)
        return np.take_along_axis(x, index, axis=a), index

    return kernel


def _best(rows: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """int64 (R, k): per row of ``rows`` the positions of its k largest (smallest) values, best
    first, equal values by position. NaN counts as above every number.

    For k < n the k-th best value of each row (np.partition, linear time) is a threshold that
    exactly the winners and their ties reach; only those candidates are sorted (by row, value,
    position). When k is small against n, the k-th best of a strided sample (every 16th value,
    still >= k values) is the threshold instead: at least k row values reach it, about 16k do.
    Small inputs, k = n and rows with NaN are sorted whole."""
    count, n = rows.shape
    if 0 < k < n and rows.size > 4096 and not (rows.dtype.kind == "f" and np.isnan(rows).any()):
        source = rows[:, ::16] if n >= 64 * k else rows
        m = source.shape[1]
        if largest:
            threshold = np.partition(source, m - k, axis=1)[:, m - k]
            row, col = np.divmod(np.flatnonzero(rows >= threshold[:, None]), n)
        else:
            threshold = np.partition(source, k - 1, axis=1)[:, k - 1]
            row, col = np.divmod(np.flatnonzero(rows <= threshold[:, None]), n)
        order = _candidate_order(rows[row, col], row, col, count, n, largest)
        counts = np.bincount(row, minlength=count)
        return col[order[(np.cumsum(counts) - counts)[:, None] + np.arange(k)]]
    if largest:
        # A stable ascending sort of the reversed rows puts equal values in falling position
        # order; read backwards it is descending with the lower position first.
        order = np.argsort(rows[:, ::-1], axis=1, kind="stable")
        return (n - 1) - order[:, ::-1][:, :k]
    return np.argsort(rows, axis=1, kind="stable")[:, :k]


def _candidate_order(values: np.ndarray, row: np.ndarray, col: np.ndarray, count: int, n: int, largest: bool) -> np.ndarray:
    """The order of TopK candidates (given in row, position order) by row, then value (best
    first), then position. Values of at most 32 bits become unsigned keys in value order (floats:
    sign bit flipped, or all bits when negative; -0.0 taken as 0.0), packed with row and position
    into one uint64 that a single unstable sort orders; wider types take two stable sorts."""
    size = values.dtype.itemsize
    row_bits, col_bits = max(count - 1, 1).bit_length(), max(n - 1, 1).bit_length()
    if values.dtype.kind in "fiu" and row_bits + 8 * size + col_bits <= 64:
        if values.dtype.kind == "f":
            values = values + values.dtype.type(0)
        bits = values.view(f"u{size}").astype(np.uint64)
        top, full = np.uint64(1 << (8 * size - 1)), np.uint64((1 << (8 * size)) - 1)
        if values.dtype.kind == "f":
            key = np.where(bits & top, ~bits & full, bits | top)
        else:
            key = bits ^ top if values.dtype.kind == "i" else bits
        if largest:
            key = full - key
        packed = (row.astype(np.uint64) << np.uint64(8 * size + col_bits)) | (key << np.uint64(col_bits)) | col.astype(np.uint64)
        return np.argsort(packed)
    # a stable sort by value (descending: sorted reversed and read backwards, so that ties stay
    # by position), then a stable sort by row
    if largest:
        order = (len(values) - 1) - np.argsort(values[::-1], kind="stable")[::-1]
    else:
        order = np.argsort(values, kind="stable")
    return order[np.argsort(row[order], kind="stable")]


# ---------------------------------------------------------------------------------------------
# NonZero, Compress, Unique


@register("NonZero", 9)
def non_zero(node: OpNode) -> Kernel:
    """NonZero: the int64 (rank, n) coordinates of the non-zero elements in row-major order.
    [[1,0],[0,3]] gives [[0,1],[0,1]]. A 0-D input gives shape (0, 1) or (0, 0), as the schema says
    (numpy's and onnxruntime's (1, n) is not ONNX's)."""

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.ndim == 0:
            return (np.zeros((0, int(bool(x.reshape(-1)[0]))), dtype=np.int64),)
        return (np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1),)

    return kernel


@register("Compress", 9)
def compress(node: OpNode) -> Kernel:
    """Compress: the slices along ``axis`` (non-negative in 9, negative allowed from 11) whose
    ``condition`` entry is true; without axis the flattened input's elements. A shorter condition
    drops the rest. [[1,2],[3,4],[5,6]] with condition [0,1], axis 0 gives [[3,4]]; without axis
    and [0,1,1] gives [2,3]."""
    axis = node.attr("axis")
    if axis is not None and int(axis) < 0 and node.since < 11:
        raise node.fail(f"{axis} is negative; Compress-9 accepts only [0, r)", "axis")

    def kernel(x: np.ndarray, condition: np.ndarray) -> tuple[np.ndarray, ...]:
        if condition.ndim != 1:
            raise node.fail(f"input 'condition' must be 1-D, got shape {condition.shape}")
        chosen = np.flatnonzero(condition)
        source = x.reshape(-1) if axis is None else x
        a = 0 if axis is None else normalize_axis(node, int(axis), x.ndim)
        if chosen.size and chosen[-1] >= source.shape[a]:
            raise node.fail(f"input 'condition' selects entry {chosen[-1]} of an axis of length {source.shape[a]}")
        return (np.take(source, chosen, axis=a),)

    return kernel


@register("Unique", 11)
def unique(node: OpNode) -> Kernel:
    """Unique: the distinct values (or sub-tensors along ``axis``), sorted ascending (sorted=1,
    the default) or in order of first occurrence (sorted=0), with int64 first-occurrence indices,
    inverse indices and counts. [2,1,1,3,4,3] with sorted=0 gives [2,1,3,4], indices [0,1,3,4],
    inverse [0,1,1,2,3,2], counts [1,2,2,1]."""
    axis = node.attr("axis")
    keep_sorted = bool(node.attr("sorted", 1))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        a = None if axis is None else normalize_axis(node, int(axis), x.ndim)
        source = x.reshape(-1) if a is None else x
        values, first, inverse, counts = np.unique(source, return_index=True, return_inverse=True, return_counts=True, axis=a)
        inverse = inverse.reshape(-1)
        if not keep_sorted:
            order = np.argsort(first, kind="stable")
            values = np.take(values, order, axis=0 if a is None else a)
            first, counts = first[order], counts[order]
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            inverse = rank[inverse]
        results = (values, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64))
        return outputs(*results[: node.n_outputs])

    return kernel

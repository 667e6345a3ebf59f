"""The numpy pooling kernels: exact, vectorised, no Python loop over output elements.

A pooling window is a box, and both max and sum over a box can be taken one axis at a time:
``sum over (h, w) = sum over h of (sum over w)``. Each axis pass loops over the ``k`` kernel taps
and combines *views* of its input into an output-sized accumulator, touching only the outputs
whose tap lands inside the input (``tap_span``), so padding is never materialised and nothing
copies the input per tap. A 3x3 max pool costs 3+3 passes instead of 9.

A max pool of stride 1 without indices (SPP's 5x5, 9x9 and 13x13) pads one axis at a time into a
buffer instead, where every tap of the axis is the same array shifted, so each pass is one
contiguous run however small the planes; where the pooling rule's working memory allows, runs of
taps combine by doubling: 13 taps in 5 passes.

Speed: numpy's loops are fast only over contiguous memory. Outer axes are reduced first (a strided
view of rows keeps each row contiguous, and the data shrinks); the innermost axis, if strided, is
split once into its ``s`` phases (``a[..., p::s]``), so that tap ``t`` of a stride-2 pool reads a
contiguous run of one phase. Index-tracking max reduces innermost first instead: that order makes
"first maximum wins" mean first in row-major order.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ovpool import shape
from ovpool.axis import TapSpan, tap_span
from ovpool.errors import ModelError, SpecError
from ovpool.memory import check_tensor
from ovpool.spec import PoolKind, PoolSpec


def pool(x: np.ndarray, spec: PoolSpec) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Run an average, max, Lp or global pool on ``x`` (N, C, *spatial). Max with ``spec.indices``
    returns (values, indices)."""
    shape.check_input_rank(spec, x.ndim)
    if not spec.is_global:
        out_shape = _output_shape(spec, x.shape)
        check_tensor(f"node '{spec.name}': output", out_shape, x.dtype.name, x.dtype.itemsize)
        if 0 in x.shape[:2]:  # no plane to pool (batch or channels 0): [0, 2, 9, 9] k3 s2 p1 ceil gives [0, 2, 5, 5]
            values = np.empty(out_shape, x.dtype)
            if spec.kind is PoolKind.MAX and spec.indices is not None:
                return values, np.empty(out_shape, spec.indices.dtype)
            return values
    if spec.kind is PoolKind.GLOBAL_AVERAGE:
        return global_average(x)
    if spec.kind is PoolKind.GLOBAL_MAX:
        return _global(x, np.max, None)
    if spec.kind is PoolKind.GLOBAL_LP:
        return global_lp(x, spec)
    if spec.kind is PoolKind.LP:
        return lp_pool(x, spec)
    if spec.kind is PoolKind.AVERAGE:
        return average_pool(x, spec)
    if spec.kind is PoolKind.MAX:
        return max_pool(x, spec)
    raise SpecError(spec.name, None, spec.kind.value, "is not a pool; use max_unpool")


@functools.lru_cache(maxsize=256)
def _output_shape(spec: PoolSpec, input_shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape.output_shape``, worked out once per spec and input shape (kernels run it on every call)."""
    return shape.output_shape(spec, input_shape)


def average_pool(x: np.ndarray, spec: PoolSpec) -> np.ndarray:
    """Average over each window: the sum of its input cells over ``shape.divisor_counts``. A window
    with no input cell averages to 0 where the divisor counts its pads (count_include_pad=1: L=1,
    k=2, d=2, SAME pads 1/1 read cells -1 and 1, both pad, giving 0/2); where nothing is counted
    (exclude-pad) it is refused, its value being undefined."""
    windows = _windows(x, spec, empty_ok=True)
    acc_dtype = _accumulator(x.dtype)
    divisor = np.ones((), dtype=acc_dtype)
    for axis, counts in enumerate(shape.divisor_counts(spec, x.shape[2:])):
        if not counts.all():
            raise SpecError(
                spec.name,
                "pads",
                spec.pads_begin + spec.pads_end,
                f"output {int(np.argmin(counts))} of axis {axis} has no input cell in its window and nothing to divide by",
            )
        divisor = np.multiply.outer(divisor, counts.astype(acc_dtype))

    def planes(chunk: np.ndarray) -> np.ndarray:
        acc = chunk
        for axis, plan in enumerate(windows):
            acc = _reduce_axis(acc, 2 + axis, plan, np.add, 0, acc_dtype)
        acc /= divisor
        return acc.astype(x.dtype, copy=False)

    return _over_planes(x, planes)


def lp_pool(x: np.ndarray, spec: PoolSpec) -> np.ndarray:
    """The p-norm of each window's taps inside the input, ``(sum |x|**p) ** (1/p)``; a tap in the
    padding adds 0, so a window with no input cell (dilation stepping over a small input) gives 0.
    Powers and sums are taken in the ``_accumulator`` type (float32 for half precision and float32,
    as the average's sums) and rounded once to ``x``'s type: p=2 over the taps 3 and -4 gives
    sqrt(9 + 16) = 5.0; p=3 over 1 and 2 gives 9 ** (1/3) = 2.0801."""
    assert spec.p is not None  # an Lp spec has its p (PoolSpec checks it)
    p = spec.p
    windows = _windows(x, spec, empty_ok=True)

    def planes(chunk: np.ndarray) -> np.ndarray:
        acc = _powers(chunk, p)
        for axis, plan in enumerate(windows):
            acc = _reduce_axis(acc, 2 + axis, plan, np.add, 0, acc.dtype)
        return _root(acc, p).astype(x.dtype, copy=False)

    return _over_planes(x, planes)


def global_lp(x: np.ndarray, spec: PoolSpec) -> np.ndarray:
    """The p-norm of each (n, c) plane, shape (N, C, 1, ...), accumulated as in ``lp_pool``: p=1 over
    the plane [[1, -2], [3, 0]] gives 6.0. A plane of no cell gives 0 (an empty sum)."""
    assert spec.p is not None  # an Lp spec has its p (PoolSpec checks it)
    sums = _powers(x, spec.p).sum(axis=tuple(range(2, x.ndim)), keepdims=True)
    return _root(sums, spec.p).astype(x.dtype, copy=False)


def _powers(x: np.ndarray, p: float) -> np.ndarray:
    """``|x| ** p`` in the ``_accumulator`` type of ``x`` (p=1: ``|x|``; p=2: ``x*x``)."""
    acc = x.astype(_accumulator(x.dtype))
    np.abs(acc, out=acc)
    if p == 2:
        np.multiply(acc, acc, out=acc)
    elif p != 1:
        np.power(acc, p, out=acc)
    return acc


def _root(sums: np.ndarray, p: float) -> np.ndarray:
    """``sums ** (1/p)`` in place (p=2: ``sqrt``, correctly rounded)."""
    if p == 2:
        np.sqrt(sums, out=sums)
    elif p != 1:
        np.power(sums, 1 / p, out=sums)
    return sums


def max_pool(x: np.ndarray, spec: PoolSpec) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Maximum of each window; NaN wins (the first NaN, row-major, gives the index). Ties go to
    the first cell in row-major order, whatever ``spec.indices.order`` the index is written in."""
    windows = _windows(x, spec)
    lowest = _lowest(x.dtype)
    if spec.indices is None:
        if all(s == 1 for s in spec.strides):
            return _unit_stride_max(x, spec, windows, lowest)
        if x.size <= SMALL_POOL and all(_covering(plan) for plan in windows):
            return _covering_max(x, windows)

        def planes(chunk: np.ndarray) -> np.ndarray:
            acc = chunk
            with np.errstate(invalid="ignore"):
                for axis, plan in enumerate(windows):
                    acc = _reduce_axis(acc, 2 + axis, plan, np.maximum, lowest, x.dtype, fill_is_identity=True)
            return acc

        return _over_planes(x, planes)
    n_step, c_step, steps = shape.index_strides(x.shape, spec.indices)

    def planes_with_indices(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        acc, where = chunk, np.zeros((1,) * chunk.ndim, dtype=np.int64)
        for axis in reversed(range(len(windows))):
            acc, where = _argmax_axis(acc, where, 2 + axis, windows[axis], steps[axis], lowest)
        return acc, where

    values, where = _over_planes(x, planes_with_indices)
    batch = np.arange(x.shape[0], dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - 1)) * n_step
    channel = np.arange(x.shape[1], dtype=np.int64).reshape((1, -1) + (1,) * (x.ndim - 2)) * c_step
    where += batch + channel
    return values, where.astype(spec.indices.dtype, copy=False)


# Work is split into chunks of whole (n, c) planes of about this many input bytes: a chunk's
# passes then run in cache, and chunks run on a thread per core (numpy releases the GIL).
CHUNK_BYTES = 1 << 21


def _over_planes(x: np.ndarray, planes):
    """Apply ``planes`` (arrays of shape (1, P, *spatial) -> one array or a tuple of arrays of shape
    (1, P, *out)) to chunks of the N*C planes of ``x`` and reassemble (N, C, *out)."""
    count = x.shape[0] * x.shape[1]
    flat = x.reshape((1, count) + x.shape[2:])
    step = max(1, CHUNK_BYTES // max(1, flat[0, 0].nbytes))
    if count <= step:
        results = [planes(flat)]
    else:
        results = list(_executor().map(planes, [flat[:, i : i + step] for i in range(0, count, step)]))
    if isinstance(results[0], tuple):
        return tuple(_join(x, [r[k] for r in results]) for k in range(len(results[0])))
    return _join(x, results)


def _join(x: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    whole = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return whole.reshape(x.shape[:2] + whole.shape[2:])


@functools.lru_cache(maxsize=1)
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="ovpool-kernel")


def max_unpool(
    x: np.ndarray, indices: np.ndarray, spec: PoolSpec, output_shape: Sequence[int] | np.ndarray | None = None
) -> np.ndarray:
    """Scatter ``x`` into zeros at ``indices``, flat positions in the whole output tensor
    (PyTorch, onnxruntime, DirectML). The output is ``output_shape`` when given, else
    ``shape.unpool_output_spatial``: 1x1x2x2 with k2 s2 gives 1x1x4x4."""
    if indices.shape != x.shape:
        raise ModelError(f"node '{spec.name}': indices shape {list(indices.shape)} differs from X shape {list(x.shape)}")
    if output_shape is None:
        out_shape = tuple(x.shape[:2]) + tuple(int(v) for v in shape.unpool_output_spatial(spec, x.shape[2:]))
    else:
        out_shape = tuple(int(v) for v in output_shape)
        if len(out_shape) != x.ndim or out_shape[:2] != x.shape[:2] or min(out_shape) < 0:
            raise ModelError(
                f"node '{spec.name}': output_shape {list(out_shape)} does not match X shape {list(x.shape)} in rank, N or C"
                " (or has a negative dim)"
            )
    check_tensor(f"node '{spec.name}': output", out_shape, x.dtype.name, x.dtype.itemsize)
    size = int(np.prod(out_shape))
    flat = indices.astype(np.int64, copy=False).ravel()
    bad = (flat < 0) | (flat >= size)
    if bad.any():
        raise ModelError(
            f"node '{spec.name}': input 'I' holds index {int(flat[bad][0])} outside the output of "
            f"{size} elements (shape {list(out_shape)})"
        )
    out = np.zeros(size, dtype=x.dtype)
    out[flat] = x.ravel()
    return out.reshape(out_shape)


@dataclass(frozen=True)
class _AxisPlan:
    """One spatial axis of a pool: its output length, stride and the span of each kernel tap."""

    out: int
    stride: int
    spans: tuple[TapSpan, ...]


def _windows(x: np.ndarray, spec: PoolSpec, empty_ok: bool = False) -> tuple[_AxisPlan, ...]:
    """Per spatial axis, the output length, stride and tap spans. A window with no input cell is
    refused unless ``empty_ok`` (an average that counts pads: its value is 0). Worked out once per
    spec and spatial shape (a 5x5 pool of a 10x10 plane: about 40 us, then a dictionary lookup)."""
    return _plans(spec, x.shape[2:], empty_ok)


@functools.lru_cache(maxsize=256)
def _plans(spec: PoolSpec, spatial: tuple[int, ...], empty_ok: bool) -> tuple[_AxisPlan, ...]:
    error = None if empty_ok else shape.empty_window_error(spec, spatial)
    if error is not None:
        raise error
    pads_begin, _ = shape.resolved_pads(spec, spatial)
    out = shape.output_spatial(spec, spatial)
    return tuple(
        _AxisPlan(
            out[a],
            spec.strides[a],
            tuple(tap_span(length, out[a], spec.strides[a], spec.dilations[a], pads_begin[a], t) for t in range(spec.kernel[a])),
        )
        for a, length in enumerate(spatial)
    )


# The working memory a pooling kernel may hold beside its input and output, as multiples of them:
# the pooling families' rule of the memory budget (engine/budget.py builds POOLING from these).
# The stride-1 max form keeps to it: doubling (``_max_of_taps``) holds at most 4 arrays of the
# padded tensor at once, taps in order 2.
SCRATCH_INPUTS, SCRATCH_OUTPUTS = 1.5, 2
DOUBLING_ARRAYS, IN_ORDER_ARRAYS = 4, 2


def _unit_stride_max(x: np.ndarray, spec: PoolSpec, windows: Sequence[_AxisPlan], lowest) -> np.ndarray:
    """Stride-1 max, one axis at a time, outermost first (as the span form goes). For each axis
    the tensor so far is copied once into a buffer padded on that axis alone with the lowest value
    (the identity of max, so a pad tap is skipped bit for bit): in its flat form tap ``t`` of the
    axis is the buffer shifted by ``t*d`` rows of the axes after it, so every tap is one contiguous
    pass however short the rows (``_max_of_taps``), and the outputs are a view of the first ``out``
    rows, which the next axis copies from. Output cell ``o`` reads padded cells up to
    ``o + (k-1)*d``, inside its row, so a shift never mixes rows where an output is read. An axis
    whose padded buffers would not fit the working memory of the pooling rule takes its taps in
    order (2 buffers instead of 4), or, if even that does not fit, the span form's pass. SPPF's 5x5
    with pads 2 on (1, 128, 10, 10), taps in order (4 padded arrays do not fit): 8 passes in about
    a third of the span form's time (0.08 ms against 0.23); 5x5 on (1, 16, 256, 256): 0.45 of it."""
    pads_begin, _ = shape.resolved_pads(spec, x.shape[2:])
    out_bytes = math.prod(plan.out for plan in windows) * x.shape[0] * x.shape[1] * x.itemsize
    room = SCRATCH_INPUTS * x.nbytes + SCRATCH_OUTPUTS * out_bytes
    acc = x
    with np.errstate(invalid="ignore"):
        for axis, (plan, k, d, pad) in enumerate(zip(windows, spec.kernel, spec.dilations, pads_begin), start=2):
            if k == 1:  # one tap and, every window holding an input cell, no pad: the axis as it is
                continue
            length = acc.shape[axis]
            dims = acc.shape[:axis] + (max(pad + length, plan.out + (k - 1) * d),) + acc.shape[axis + 1 :]
            buffer_bytes = math.prod(dims) * x.itemsize
            # the previous axis' result (a view of its padded array) stays alive while it is copied
            copied = 0 if acc is x else (acc if acc.base is None else acc.base).nbytes
            if max(copied, IN_ORDER_ARRAYS * buffer_bytes - buffer_bytes) + buffer_bytes > room:
                acc = _reduce_axis(acc, axis, plan, np.maximum, lowest, x.dtype, fill_is_identity=True)
                continue
            buffer = np.full(dims, lowest, dtype=x.dtype)
            buffer[(slice(None),) * axis + (slice(pad, pad + length),)] = acc
            acc = x  # the tensor copied is freed
            taps = _max_of_taps if DOUBLING_ARRAYS * buffer_bytes <= room else _max_in_order
            flat = taps(buffer.reshape(-1), k, d * math.prod(dims[axis + 1 :]))
            del buffer
            acc = flat.reshape(dims)[(slice(None),) * axis + (slice(0, plan.out),)]
            del flat
    return np.ascontiguousarray(acc)


# A max pool of at most this many input values whose every tap reaches every output (no pad
# cell in any window: 2x2 stride 2) takes ``_covering_max``; larger ones go by planes, whose
# contiguous phases of the innermost axis beat strided views.
SMALL_POOL = 1 << 16


def _covering(plan: _AxisPlan) -> bool:
    return all(span.first == 0 and span.stop == plan.out for span in plan.spans)


def _covering_max(x: np.ndarray, windows: Sequence[_AxisPlan]) -> np.ndarray:
    """Max over windows that hold no pad cell, outermost axis first, each axis's taps in order
    on strided views of the tensor so far (the span form's operations, so its bits, without its
    per-plane and phase copies): 2x2 stride 2 over (1, 200, 2, 96) in 16 us against 54."""
    acc = x
    with np.errstate(invalid="ignore"):
        for axis, plan in enumerate(windows, start=2):
            lead = (slice(None),) * axis
            views = [acc[lead + (span.input_slice(plan.stride),)] for span in plan.spans]
            if len(views) == 1:
                acc = views[0]
                continue
            result = np.maximum(views[0], views[1])
            for view in views[2:]:
                np.maximum(result, view, out=result)
            acc = result
    return np.ascontiguousarray(acc)


def _max_in_order(source: np.ndarray, k: int, shift: int) -> np.ndarray:
    """``_max_of_taps`` with the taps folded in order, ``max(max(t0, t1), t2)``..., k-1 passes
    through one array besides ``source``."""
    if k == 1:
        return source
    size = source.size - (k - 1) * shift
    result = np.empty_like(source)
    np.maximum(source[:size], source[shift : shift + size], out=result[:size])
    for t in range(2, k):
        np.maximum(result[:size], source[t * shift : t * shift + size], out=result[:size])
    return result


def _max_of_taps(source: np.ndarray, k: int, shift: int) -> np.ndarray:
    """``y[i] = max(source[i], source[i + shift], ..., source[i + (k-1)*shift])`` for ``i`` below
    ``source.size - (k-1)*shift``, in an array of ``source``'s size whose later cells are not
    written (``source`` itself when k is 1). By doubling: level ``j`` holds the max of ``2**j``
    consecutive taps, one pass from level ``j-1``; the window is the levels of k's binary digits,
    lowest first, each block starting where the one before ends: k=13 is taps 0 (level 0), 1-4
    (level 2) and 5-12 (level 3), 3 levels and 2 combinations, 5 passes instead of 12 (k=5: 3
    instead of 4). Each ``np.maximum(a, b)`` has ``a`` over earlier taps than ``b``, so ties go as in
    a fold in tap order (``np.maximum`` keeps its second operand when two zeros tie: the last zero
    of the window wins either way) and the first NaN in tap order is the one kept: the same bits."""
    size = source.size - (k - 1) * shift
    level, width, done = source, 1, 0
    first: np.ndarray | None = None
    result: np.ndarray | None = None
    while True:
        if k & width:
            block = level[done * shift : done * shift + size]
            if done == 0:
                first = block
            elif result is None:
                assert first is not None
                result = np.empty_like(source)
                np.maximum(first, block, out=result[:size])
                first = None  # a level no later block reads: freed
            else:
                np.maximum(result[:size], block, out=result[:size])
            del block
            done += width
        if 2 * width > k:
            break
        reach = source.size - (2 * width - 1) * shift
        following = np.empty_like(source)
        np.maximum(level[:reach], level[width * shift : width * shift + reach], out=following[:reach])
        level, width = following, 2 * width
    if result is not None:
        return result
    return level  # k is a power of two: its one block is the last level, from cell 0 (``first``)


def _tap_views(res: np.ndarray, a: np.ndarray, axis: int, plan: _AxisPlan):
    """Triples (output view, input view, span) for each tap that reaches the input. Input views
    of the innermost axis come from its phases, so they are contiguous."""
    lead = (slice(None),) * axis
    phases = _phases(a, axis, plan.stride)
    for span in plan.spans:
        n = span.stop - span.first
        if n <= 0:
            continue
        if phases is None:
            src = a[lead + (span.input_slice(plan.stride),)]
        else:
            start = span.first_input // plan.stride
            src = phases[span.first_input % plan.stride][..., start : start + n]
        yield res[lead + (slice(span.first, span.stop),)], src, span


def _phases(a: np.ndarray, axis: int, stride: int) -> list[np.ndarray] | None:
    """For a strided innermost axis, its ``stride`` phases as contiguous arrays (one copy of ``a``
    in all): cell ``i*s + p`` is ``phases[p][i]``. None where plain views are already fast. A
    stride longer than the axis has one phase per cell (stride 2**31-1 over 5 cells: 5 phases)."""
    if stride == 1 or axis != a.ndim - 1:
        return None
    return [np.ascontiguousarray(a[..., p::stride]) for p in range(min(stride, a.shape[axis]))]


def _reduce_axis(a: np.ndarray, axis: int, plan: _AxisPlan, combine, fill, dtype, fill_is_identity: bool = False) -> np.ndarray:
    """Combine the taps of one axis in tap order, into an accumulator that starts as: the first two
    taps combined when both cover every output; with ``fill_is_identity`` (``combine(fill, v)`` is
    ``v``, bit for bit: max from the lowest value), also when only the second does (the second
    alone where the first does not reach); else a copy of the first tap when it covers every
    output, else ``fill`` (a sum from 0.0 differs: 0.0 + -0.0 is 0.0). Max over 3 taps of stride 2
    with pads 1 over 112 cells (56 outputs; tap 0 misses output 0) takes 2 passes, ``max(tap 0,
    tap 1)`` on outputs 1-55 (output 0 from tap 1) then tap 2, instead of a fill and 3, in the same
    order and so with the same bits."""
    res = np.empty(a.shape[:axis] + (plan.out,) + a.shape[axis + 1 :], dtype=dtype)
    views = list(_tap_views(res, a, axis, plan))
    covers = [span.first == 0 and span.stop == plan.out for _, _, span in views]
    if len(views) > 1 and covers[1] and (covers[0] or fill_is_identity):
        (dst, src, span), (_, whole, _) = views[:2]
        lead = (slice(None),) * axis
        combine(src, whole[lead + (slice(span.first, span.stop),)], out=dst, dtype=dtype, casting="unsafe")
        for outside in (lead + (slice(0, span.first),), lead + (slice(span.stop, plan.out),)):
            np.copyto(res[outside], whole[outside], casting="unsafe")
        views = views[2:]
    elif views and covers[0]:
        np.copyto(res, views[0][1], casting="unsafe")
        views = views[1:]
    else:  # no tap reaches the first output (or none reaches the input: every window is padding)
        res.fill(fill)
    for dst, src, _ in views:
        combine(dst, src, out=dst, casting="unsafe")
    return res


def _argmax_axis(
    a: np.ndarray, where: np.ndarray, axis: int, plan: _AxisPlan, step: int, lowest
) -> tuple[np.ndarray, np.ndarray]:
    """Max along one axis, carrying the flat spatial index of the winner: ``where`` holds the part
    from axes already reduced; this axis adds ``coordinate * step``."""
    out_shape = a.shape[:axis] + (plan.out,) + a.shape[axis + 1 :]
    res = np.full(out_shape, lowest, dtype=a.dtype)
    res_at = np.full(out_shape, -1, dtype=np.int64)
    where = np.broadcast_to(where, a.shape)
    coords = (np.arange(a.shape[axis], dtype=np.int64) * step).reshape((-1,) + (1,) * (a.ndim - axis - 1))
    floating = not np.issubdtype(a.dtype, np.integer)
    lead = (slice(None),) * axis
    for dst, src, span in _tap_views(res, a, axis, plan):
        picked = span.input_slice(plan.stride)
        dst_at = res_at[lead + (slice(span.first, span.stop),)]
        src_at = where[lead + (picked,)] + coords[picked]
        with np.errstate(invalid="ignore"):
            take = (dst_at < 0) | (src > dst)
        if floating:
            take |= np.isnan(src) & ~np.isnan(dst)
        np.copyto(dst, src, where=take)
        np.copyto(dst_at, src_at, where=take)
    return res, res_at


def global_average(x: np.ndarray) -> np.ndarray:
    """The mean of each (n, c) plane, shape (N, C, 1, ...): the planes as rows of an (N*C, cells)
    matrix times a vector of ones (one BLAS pass, in float32 for float32 and half precision, in
    float64 for float64), over the cell count: a plane [[1, 2], [3, 4.5]] gives 10.5 / 4 = 2.625.
    The sum is added in BLAS's blocked order, not numpy's pairwise one: the means of 96 planes of
    6400 standard normal float32 values are at most 1.2e-8 off the float64 means (pairwise: 4e-9),
    in half to three quarters of ``np.mean``'s time. A plane of no cell gives NaN, as ``np.mean``
    does."""
    cells = math.prod(x.shape[2:])
    if cells == 0:
        return _global(x, np.mean, _accumulator(x.dtype))
    dtype = _accumulator(x.dtype)
    sums = x.reshape(-1, cells).astype(dtype, copy=False) @ np.ones(cells, dtype)
    sums /= cells
    return sums.astype(x.dtype, copy=False).reshape(x.shape[:2] + (1,) * (x.ndim - 2))


def _global(x: np.ndarray, reduce, dtype) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    if dtype is None:
        return reduce(x, axis=axes, keepdims=True)
    return reduce(x, axis=axes, keepdims=True, dtype=dtype).astype(x.dtype, copy=False)


def _accumulator(dtype: np.dtype) -> np.dtype:
    """float64 sums stay float64; float16, bfloat16 and float32 sum in float32."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _lowest(dtype: np.dtype):
    """The identity of max for this dtype: -inf for floats, the minimum for integers."""
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).min
    return -np.inf

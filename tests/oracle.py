"""A deliberately naive loop implementation of SEMANTICS.md, written independently of ovpool.

It walks every output position and every kernel tap in plain Python and reads ONNX-style attribute
dicts directly. Window counts are found by enumerating window starts, not by the closed forms of
the shape engine: floor keeps windows that fit in the padded input; ceil also keeps one window that
runs past its end, then drops it if it starts in the end padding; "ceil_no_drop" keeps it.
Slow by design: use on small tensors only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _pads_for(attrs, spatial, kernel, strides, dilations):
    rank = len(spatial)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for length, k, s, d in zip(spatial, kernel, strides, dilations):
            out = -(-length // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - length)
            low = total // 2
            if auto_pad == "SAME_UPPER":
                begin.append(low)
                end.append(total - low)
            else:
                begin.append(total - low)
                end.append(low)
        return begin, end
    if auto_pad == "VALID":
        return [0] * rank, [0] * rank
    pads = attrs.get("pads", [0] * 2 * rank)
    return list(pads[:rank]), list(pads[rank:])


def _starts(length, k, s, d, pb, pe, rounding):
    """Window starts (in unpadded coordinates) along one axis, by enumeration."""
    padded = length + pb + pe
    extent = (k - 1) * d + 1
    starts = []
    i = 0
    while True:
        start = i * s  # padded coordinates
        fits = start + extent <= padded
        if fits:
            starts.append(start)
        elif rounding != "floor" and (i == 0 or (i - 1) * s + extent < padded):
            if rounding == "ceil_no_drop" or start < length + pb:
                starts.append(start)
            break
        else:
            break
        i += 1
    return [st - pb for st in starts]


def pool(x, op, attrs, rounding=None, divisor=None, index_axis=0):
    """Naive pool. op: "avg", "max", "sum" (the window totals and divisor counts of "avg", as a
    pair of arrays, for exact arithmetic on them) or "lp" (ONNX LpPool, ``attrs["p"]`` default 2:
    the p-th root of the sum of ``abs(v) ** p`` over the window's taps inside the input, a padding
    tap adding 0). attrs: ONNX attribute dict (kernel_shape, strides, pads,
    dilations, auto_pad, ceil_mode, count_include_pad, storage_order). ``rounding`` overrides
    ceil_mode with "floor", "ceil" or "ceil_no_drop"; ``divisor`` overrides count_include_pad with
    "exclude", "include" or "full_if_padded". Returns (y, indices) for max, y for avg."""
    x = np.asarray(x)
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    rank = len(spatial)
    kernel = list(attrs["kernel_shape"])
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    begin, end = _pads_for(attrs, spatial, kernel, strides, dilations)
    if rounding is None:
        rounding = "ceil" if attrs.get("ceil_mode", 0) else "floor"
    if attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        rounding = "floor"
    if divisor is None:
        divisor = "include" if attrs.get("count_include_pad", 0) else "exclude"
    column_major = attrs.get("storage_order", 0) == 1
    p = float(attrs.get("p", 2))
    starts = [_starts(spatial[a], kernel[a], strides[a], dilations[a], begin[a], end[a], rounding) for a in range(rank)]
    out_shape = (n, c) + tuple(len(s) for s in starts)
    y = np.zeros(out_shape, dtype=np.float64)
    idx = np.zeros(out_shape, dtype=np.int64)
    counts = np.zeros(out_shape, dtype=np.int64)
    padded_any = any(begin) or any(end)
    for b, ch in itertools.product(range(n), range(c)):
        for pos in itertools.product(*[range(len(s)) for s in starts]):
            best, best_at, total, count, norm = None, None, 0.0, 0, 0.0
            for tap in itertools.product(*[range(k) for k in kernel]):
                coords = [starts[a][pos[a]] + tap[a] * dilations[a] for a in range(rank)]
                inside = all(0 <= coords[a] < spatial[a] for a in range(rank))
                in_pads = all(-begin[a] <= coords[a] < spatial[a] + end[a] for a in range(rank))
                if divisor == "include" and in_pads:
                    count += 1
                if not inside:
                    continue
                if divisor == "exclude":
                    count += 1
                v = float(x[(b, ch) + tuple(coords)])
                total += v
                norm += abs(v) ** p
                if best is None or v > best or (math.isnan(v) and not math.isnan(best)):
                    best, best_at = v, coords
            if op == "lp":
                y[(b, ch) + pos] = norm ** (1.0 / p)
            elif op in ("avg", "sum"):
                if divisor == "full_if_padded":
                    count = (
                        math.prod(kernel)
                        if padded_any
                        else sum(
                            1
                            for tap in itertools.product(*[range(k) for k in kernel])
                            if all(0 <= starts[a][pos[a]] + tap[a] * dilations[a] < spatial[a] for a in range(rank))
                        )
                    )
                y[(b, ch) + pos] = total / count if op == "avg" else total
                counts[(b, ch) + pos] = count
            else:
                if best is None:
                    raise ValueError(f"window {pos} lies wholly in padding")
                y[(b, ch) + pos] = best
                if column_major:
                    flat = sum(best_at[a] * math.prod(spatial[:a]) for a in range(rank))
                else:
                    flat = sum(best_at[a] * math.prod(spatial[a + 1 :]) for a in range(rank))
                plane = math.prod(spatial)
                base = {0: (b * c + ch) * plane, 1: ch * plane, 2: 0}[index_axis]
                idx[(b, ch) + pos] = base + flat
    if op in ("avg", "lp"):
        return y
    if op == "sum":
        return y, counts
    return y, idx


def unpool(x, indices, attrs, output_shape=None):
    """Naive MaxUnpool: zeros of the output size, then ``out.flat[indices[i]] = x[i]`` in order."""
    x = np.asarray(x)
    rank = x.ndim - 2
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides", [1] * rank)
    pads = attrs.get("pads", [0] * 2 * rank)
    if output_shape is None:
        output_shape = list(x.shape[:2]) + [
            (x.shape[2 + a] - 1) * strides[a] + kernel[a] - pads[a] - pads[rank + a] for a in range(rank)
        ]
    out = np.zeros(int(np.prod(output_shape)), dtype=x.dtype)
    for value, where in zip(x.ravel(), np.asarray(indices).ravel()):
        out[int(where)] = value
    return out.reshape(output_shape)

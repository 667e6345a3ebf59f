"""NonMaxSuppression and RoiAlign: the detection heads' operators.

NonMaxSuppression-10/11 (one meaning): for each batch and class, the boxes whose score is strictly
greater than ``score_threshold`` are visited by descending score (equal scores: lower box index
first); a box is selected unless its IoU with an already selected box of that class is strictly
greater than ``iou_threshold``, until ``max_output_boxes_per_class`` are selected. With boxes
``[0,0,1,1]``, ``[0,0,1,1.1]``, ``[5,5,6,6]``, scores ``0.5, 0.9, 0.3``, iou_threshold 0.5 and
no score threshold, box 1 is selected first, box 0 is suppressed (IoU 1/1.1 > 0.5) and box 2 is
kept: ``[[0,0,1], [0,0,2]]``. A box of zero area has IoU 0 with everything.

RoiAlign pools each region of interest ``[x1, y1, x2, y2]`` (scaled by ``spatial_scale``) into an
``output_height x output_width`` grid; each bin averages (or takes the maximum of) the bilinear
interpolations of ``sampling_ratio x sampling_ratio`` points spread evenly in the bin (adaptive:
``ceil(roi_size / output_size)`` points per axis when ``sampling_ratio`` is 0). RoiAlign-10 has no
``coordinate_transformation_mode``: it is ``output_half_pixel`` (no shift, and a region narrower than
one cell is widened to one cell); RoiAlign-16 adds the attribute, default ``half_pixel`` (coordinates
shifted by -0.5, no widening). On a 5x5 ramp ``X[h, w] = 5h + w``, the region ``[0, 0, 4, 4]`` pooled
to 1x1 with sampling_ratio 2 averages the points (1, 1), (1, 3), (3, 1), (3, 3) to 12 in
output_half_pixel, and (0.5, 0.5) ... (2.5, 2.5) to 9 in half_pixel.
"""

from __future__ import annotations

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, register

# --- NonMaxSuppression -------------------------------------------------------------------------


def _scalar(node: OpNode, value: np.ndarray | None, name: str, default: float) -> float:
    """An optional scalar input (0-d or one element), ``default`` when omitted."""
    if value is None:
        return default
    array = np.asarray(value)
    if array.size != 1:
        raise node.fail(f"input '{name}' has shape {list(array.shape)}; it must hold one value")
    return array.reshape(()).item()


def _corners(boxes: np.ndarray, center_point_box: int) -> tuple[np.ndarray, ...]:
    """``(a_lo, b_lo, a_hi, b_hi, area)`` of boxes ``[..., 4]`` in float32: diagonal corners in either
    order (format 0) or centre and size (format 1)."""
    b = boxes.astype(np.float32, copy=False)
    if center_point_box:
        half_w, half_h = b[..., 2] / 2, b[..., 3] / 2
        lo_a, lo_b, hi_a, hi_b = b[..., 0] - half_w, b[..., 1] - half_h, b[..., 0] + half_w, b[..., 1] + half_h
    else:
        lo_a, hi_a = np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
        lo_b, hi_b = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3])
    return lo_a, lo_b, hi_a, hi_b, (hi_a - lo_a) * (hi_b - lo_b)


def _rank(scores: np.ndarray, passing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box indices of each row of ``scores`` by descending score, equal scores by lower index, the
    passing ones first; and how many pass. One sort of unique 64-bit keys ``(descending score bits,
    index)``: the float32 bits mapped to an order-preserving unsigned integer (-0.0 taken as 0.0),
    failing boxes given the largest key."""
    bits = (scores + np.float32(0)).view(np.uint32)
    ascending = np.where(bits >> 31, ~bits, bits | np.uint32(0x80000000))
    high = np.where(passing, ~ascending, np.uint32(0xFFFFFFFF)).astype(np.uint64) << np.uint64(32)
    keys = np.sort(high | np.arange(scores.shape[1], dtype=np.uint64), axis=1)
    return (keys & np.uint64(0xFFFFFFFF)).astype(np.int64), passing.sum(axis=1)


def _suppresses(first: tuple[np.ndarray, ...], second: tuple[np.ndarray, ...], threshold: np.float32) -> np.ndarray:
    """IoU(first, second) > threshold, elementwise with broadcasting (callers add the axes). Boxes
    that do not overlap, or have no area, have IoU 0 (never suppress); a NaN coordinate never
    suppresses. Run under ``np.errstate(divide="ignore", invalid="ignore")``."""
    inter = np.maximum(np.minimum(first[2], second[2]) - np.maximum(first[0], second[0]), 0) * np.maximum(
        np.minimum(first[3], second[3]) - np.maximum(first[1], second[1]), 0
    )
    return inter / (first[4] + second[4] - inter) > threshold


_BLOCK_WORK = 1 << 17  # pairs x block^2: the size of one block's IoU matrices


def _greedy(boxes: tuple[np.ndarray, ...], candidate: np.ndarray, limit: int, threshold: np.float32) -> tuple[np.ndarray, ...]:
    """Greedy NMS of every pair at once: ``boxes`` are ``[pairs, width]`` arrays in rank order,
    ``candidate[p, k]`` whether rank ``k`` passed the score threshold. Returns (pair, rank) of the
    selections, by pair then rank (a pair's selections come in rank order).

    Ranks are taken in blocks (about ``sqrt(_BLOCK_WORK / pairs)`` ranks, 16 to 256, and no more than
    twice ``limit``: 40 ranks for 80 pairs, 256 for one pair): a block's candidates are first suppressed by the boxes
    already selected, then among themselves. Inside a block, "kept = candidate and not suppressed by
    an earlier kept box" is iterated from "all kept" to its fixed point, which is the greedy answer:
    after ``i`` iterations the first ``i`` ranks are final, and it usually settles in a few.
    """
    pairs, width = candidate.shape
    room = min(limit, width)
    chosen = [np.zeros((pairs, room), np.float32) for _ in boxes]  # selected boxes, area 0 beyond the count
    count = np.zeros(pairs, np.int64)
    found_rows, found_ranks = [], []
    rows = np.flatnonzero(candidate.any(axis=1))
    step = int(np.clip(np.sqrt(_BLOCK_WORK / max(rows.size, 1)), 16, 256))
    step = min(step, max(16, 2 * limit))
    for start in range(0, width, step):
        if not rows.size:
            break
        stop = min(start + step, width)
        block = tuple(part[rows, start:stop] for part in boxes)
        alive = candidate[rows, start:stop].copy()
        used = int(count[rows].max())
        if used:
            prior = tuple(part[rows, :used, None] for part in chosen)
            alive &= ~_suppresses(prior, tuple(part[:, None, :] for part in block), threshold).any(axis=1)
        later = np.triu(np.ones((stop - start, stop - start), bool), 1)
        beats = (_suppresses(tuple(p[:, :, None] for p in block), tuple(p[:, None, :] for p in block), threshold) & later).astype(
            np.float32
        )
        kept = alive
        while True:
            again = alive & ~(np.matmul(kept.astype(np.float32)[:, None, :], beats)[:, 0, :] > 0)
            if np.array_equal(again, kept):
                break
            kept = again
        kept &= count[rows, None] + np.cumsum(kept, axis=1) <= limit
        r, k = np.nonzero(kept)
        slot = count[rows][r] + (np.cumsum(kept, axis=1) - 1)[r, k]
        for part, source in zip(chosen, block):
            part[rows[r], slot] = source[r, k]
        found_rows.append(rows[r])
        found_ranks.append(start + k)
        count[rows] += kept.sum(axis=1)
        rows = rows[count[rows] < limit]
    if not found_rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    row, rank = np.concatenate(found_rows), np.concatenate(found_ranks)
    sequence = np.lexsort((rank, row))
    return row[sequence], rank[sequence]


@register("NonMaxSuppression", 10)
def non_max_suppression(node: OpNode) -> Kernel:
    """NonMaxSuppression-10 and -11 (the same rule).

    Output ``[num_selected, 3]`` int64 rows ``[batch, class, box]``, by batch, then class, then order
    of selection. Omitted ``max_output_boxes_per_class`` (or 0, or negative) selects nothing; omitted
    ``iou_threshold`` is 0 (any overlap suppresses); omitted ``score_threshold`` keeps every score
    (a NaN score is never selected). All (batch, class) pairs advance together, a block of ranks at
    a time (see :func:`_greedy`).
    """
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        raise node.fail(f"{center} is not 0 (corners) or 1 (centre and size)", "center_point_box")

    def kernel(
        boxes: np.ndarray,
        scores: np.ndarray,
        max_output: np.ndarray | None = None,
        iou_threshold: np.ndarray | None = None,
        score_threshold: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        if boxes.ndim != 3 or boxes.shape[2] != 4:
            raise node.fail(f"boxes have shape {list(boxes.shape)}; expected [batches, boxes, 4]")
        if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
            raise node.fail(f"scores have shape {list(scores.shape)}; expected [{boxes.shape[0]}, classes, {boxes.shape[1]}]")
        limit = int(_scalar(node, max_output, "max_output_boxes_per_class", 0))
        iou_limit = float(_scalar(node, iou_threshold, "iou_threshold", 0.0))
        if not 0.0 <= iou_limit <= 1.0:
            raise node.fail(f"iou_threshold {iou_limit} is outside [0, 1]")
        batches, classes, n = scores.shape
        pairs = batches * classes
        if limit <= 0 or pairs == 0 or n == 0:
            return (np.zeros((0, 3), np.int64),)

        flat = scores.reshape(pairs, n).astype(np.float32, copy=False)
        if score_threshold is None:
            passing = ~np.isnan(flat)
        else:
            passing = flat > np.float32(_scalar(node, score_threshold, "score_threshold", 0.0))
        order, count = _rank(flat, passing)
        width = int(count.max())
        order = order[:, :width]
        candidate = np.arange(width) < count[:, None]

        batch_of_pair = np.arange(pairs) // classes
        boxes_ranked = _corners(boxes[batch_of_pair[:, None], order], center)
        with np.errstate(divide="ignore", invalid="ignore"):
            row, rank = _greedy(boxes_ranked, candidate, limit, np.float32(iou_limit))
        selected = np.stack([row // classes, row % classes, order[row, rank]], axis=1)
        return (selected.astype(np.int64),)

    return kernel


# --- RoiAlign ----------------------------------------------------------------------------------

_GATHER_BUDGET = 1 << 22  # gathered feature values per chunk of regions (16 MB of float32)


def _axis_samples(start: np.ndarray, size: np.ndarray, bins: int, grid: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Bilinear taps of the sample points along one axis for regions sharing one ``grid``.

    Sample ``i`` of bin ``p`` lies at ``start + p*bin + (i + 0.5)*bin/grid`` (``bin = size/bins``).
    Returns tap indices and weights, both ``[regions, bins, grid, 2]`` (low and high neighbour);
    a point below -1 or beyond ``length`` has zero weights (it samples 0), a point in [-1, 0] reads
    cell 0 and one at or beyond ``length - 1`` reads the last cell.
    """
    dtype = start.dtype
    bin_size = (size / bins)[:, None, None]
    p: np.ndarray = np.arange(bins, dtype=dtype)[:, None]
    i: np.ndarray = np.arange(grid, dtype=dtype)[None, :]
    pos = start[:, None, None] + p * bin_size + (i + 0.5) * bin_size / grid
    inside = (pos >= -1) & (pos <= length)
    pos = np.where(inside, np.maximum(pos, 0), 0).astype(dtype, copy=False)
    low = pos.astype(np.int64)
    at_end = low >= length - 1
    low = np.where(at_end, length - 1, low)
    high = np.where(at_end, length - 1, low + 1)
    frac = np.where(at_end | ~inside, 0, pos - low.astype(dtype)).astype(dtype, copy=False)
    weights = np.stack([np.where(inside, 1 - frac, 0).astype(dtype, copy=False), frac], axis=-1)
    return np.stack([low, high], axis=-1), weights


def _adaptive_grid(cells_per_bin: np.ndarray) -> np.ndarray:
    """``ceil(roi_size / output_size)`` sample points per bin: 2.3 cells per bin gives 3; an empty or
    inverted region (or a NaN coordinate) gives 0 points."""
    finite = np.isfinite(cells_per_bin) & (cells_per_bin > 0)
    return np.where(finite, np.ceil(np.where(finite, cells_per_bin, 0)), 0).astype(np.int64)


def _roi_align_kernel(node: OpNode, half_pixel: bool) -> Kernel:
    mode = node.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise node.fail(f"'{mode}' is not 'avg' or 'max'", "mode")
    out_h = int(node.attr("output_height", 1))
    out_w = int(node.attr("output_width", 1))
    for name, value in (("output_height", out_h), ("output_width", out_w)):
        if value < 1:
            raise node.fail(f"{value} must be >= 1", name)
    ratio = int(node.attr("sampling_ratio", 0))
    if ratio < 0:
        raise node.fail(f"{ratio} must be >= 0 (0: adaptive)", "sampling_ratio")
    scale = float(node.attr("spatial_scale", 1.0))
    offset = 0.5 if half_pixel else 0.0

    def kernel(x: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.ndim != 4:
            raise node.fail(f"X has shape {list(x.shape)}; expected [N, C, H, W]")
        if rois.ndim != 2 or rois.shape[1] != 4:
            raise node.fail(f"rois have shape {list(rois.shape)}; expected [num_rois, 4]")
        if batch_indices.shape != (rois.shape[0],):
            raise node.fail(f"batch_indices have shape {list(batch_indices.shape)}; expected [{rois.shape[0]}]")
        n, channels, height, width = x.shape
        batch = batch_indices.astype(np.int64)
        if batch.size and (batch.min() < 0 or batch.max() >= n):
            raise node.fail(f"batch_indices {batch[(batch < 0) | (batch >= n)][:3].tolist()} are outside [0, {n})")
        work = np.float64 if x.dtype == np.float64 else np.float32
        num = rois.shape[0]
        result = np.zeros((num, out_h, out_w, channels), work)
        if num == 0 or channels == 0 or height == 0 or width == 0:
            return (result.transpose(0, 3, 1, 2).astype(x.dtype),)

        r: np.ndarray = rois.astype(work, copy=False)
        start_x, start_y = r[:, 0] * scale - offset, r[:, 1] * scale - offset
        size_x, size_y = r[:, 2] * scale - offset - start_x, r[:, 3] * scale - offset - start_y
        if not half_pixel:
            size_x, size_y = np.maximum(size_x, 1.0), np.maximum(size_y, 1.0)
        if ratio > 0:
            grid_y = grid_x = np.full(num, ratio, np.int64)
        else:
            grid_y, grid_x = _adaptive_grid(size_y / out_h), _adaptive_grid(size_x / out_w)

        pixels = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).astype(work, copy=False)  # [N, H, W, C]
        groups, group_of = np.unique(np.stack([grid_y, grid_x], axis=1), axis=0, return_inverse=True)
        for g, (gy, gx) in enumerate(groups.tolist()):
            if gy == 0 or gx == 0:
                continue  # no sample point: the bins stay 0
            members = np.flatnonzero(group_of.ravel() == g)
            per_region = out_h * out_w * gy * gx * 4 * channels
            step = max(1, _GATHER_BUDGET // per_region)
            for first in range(0, members.size, step):
                chunk = members[first : first + step]
                rows, wy = _axis_samples(start_y[chunk], size_y[chunk], out_h, gy, height)
                cols, wx = _axis_samples(start_x[chunk], size_x[chunk], out_w, gx, width)
                # values [regions, out_h, out_w, gy, 2, gx, 2, C]: the four neighbours of every sample point
                values = pixels[
                    batch[chunk][:, None, None, None, None, None, None],
                    rows[:, :, None, :, :, None, None],
                    cols[:, None, :, None, None, :, :],
                ]
                weights = wy[:, :, None, :, :, None, None] * wx[:, None, :, None, None, :, :]
                if mode == "avg":
                    m = len(chunk) * out_h * out_w
                    flat_w = (weights / (gy * gx)).reshape(m, 1, gy * 2 * gx * 2)
                    pooled = np.matmul(flat_w, values.reshape(m, gy * 2 * gx * 2, channels)).reshape(
                        len(chunk), out_h, out_w, channels
                    )
                else:
                    points = np.einsum("rpqiajbc,rpqiajb->rpqijc", values, weights, optimize=True)
                    pooled = points.max(axis=(3, 4))
                result[chunk] = pooled
        return (np.ascontiguousarray(result.transpose(0, 3, 1, 2)).astype(x.dtype, copy=False),)

    return kernel


# RoiAlign gathers 16 MB of float32 values at a time (values, weights and products: 48 MiB; one
# region of more sample points than that is beyond the rule).
ALIGNING = Traits(work=Rule(2.0, 3.0, fixed=48 << 20))


@register("RoiAlign", 10, 15, traits=ALIGNING)
def roi_align_10(node: OpNode) -> Kernel:
    """RoiAlign-10: always ``output_half_pixel`` (it has no coordinate_transformation_mode).

    A region ``[1, 1, 1, 1]`` (zero size) is widened to one cell: pooled to 2x2 it samples the
    points 1.25 and 1.75 on each axis.
    """
    if "coordinate_transformation_mode" in node.attrs:
        raise node.fail("RoiAlign-10 has no such attribute (it came with RoiAlign-16)", "coordinate_transformation_mode")
    return _roi_align_kernel(node, half_pixel=False)


@register("RoiAlign", 16, traits=ALIGNING)
def roi_align_16(node: OpNode) -> Kernel:
    """RoiAlign-16 and -22: ``coordinate_transformation_mode`` ``half_pixel`` (default: shift by -0.5,
    no widening; a zero-size region has no sample point when sampling_ratio is 0 and pools to 0) or
    ``output_half_pixel`` (RoiAlign-10's rule)."""
    transform = node.attr("coordinate_transformation_mode", "half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        raise node.fail(f"'{transform}' is not 'half_pixel' or 'output_half_pixel'", "coordinate_transformation_mode")
    return _roi_align_kernel(node, half_pixel=transform == "half_pixel")

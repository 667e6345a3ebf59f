"""Detection IR layers: ROIAlign-3/9 and NonMaxSuppression-1/3/4/5/9.

- ROIAlign pools each region ``[x1, y1, x2, y2]`` of ``rois`` (times ``spatial_scale``) of image
  ``batch_indices[r]`` into ``pooled_h x pooled_w`` bins of ``sampling_ratio`` squared bilinear
  samples (``ceil(bin size)`` per axis when 0). ``aligned_mode`` (9): ``asymmetric`` (3's only
  mode: no shift, a region narrower than one cell widened to one), ``half_pixel_for_nn`` (shifted
  by -0.5, no widening), ``half_pixel`` (``(x + 0.5) * spatial_scale - 0.5``, no widening).
  ``mode="avg"`` averages the samples; ``mode="max"`` takes the largest sample, starting from 0
  (OpenVINO's reference implementation): a bin whose samples are all negative pools to 0. A sample
  more than one cell outside the image counts as 0.
- NonMaxSuppression-5/9 visits, per batch and class, the boxes scoring above ``score_threshold``
  by descending score (equal scores: lower index first) and selects up to
  ``max_output_boxes_per_class``; with ``soft_nms_sigma`` 0 a box is dropped when its IoU with a
  selected box is above ``iou_threshold`` (5: at or above); with a sigma > 0 (Soft-NMS) each
  selected box multiplies its score by ``exp(-0.5 * IoU^2 / sigma)`` and it goes back in line
  (5 still drops it at IoU >= ``iou_threshold``). Boxes are ``[y1, x1, y2, x2]`` in either corner
  order (``box_encoding="corner"``) or ``[x_center, y_center, width, height]`` (``center``); a box
  of no area has IoU 0. Outputs: ``[batch, class, box]`` rows and ``[batch, class, score]`` rows,
  in batch, class, selection order, or by descending score (``sort_result_descending``), and the
  row count.
- NonMaxSuppression-1/3/4 select as 9 without Soft-NMS and output only the ``[batch, class, box]``
  rows, as many as their output shape says when ``max_output_boxes_per_class`` is a constant
  (``min(boxes, max * classes)`` in 1 and 3, ``min(boxes, max) * classes * batches`` in 4), the
  rows past the selected ones -1 and the selected ones past the count dropped: 4 boxes, 2 classes,
  max 3 give 4 rows in 1 and 3, 6 in 4.
"""

from __future__ import annotations

import heapq

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, layer
from ovpool.engine.ops.base import Kernel


@layer("ROIAlign", 3, 9)
def roi_align(node: LayerNode) -> Kernel:
    """ROIAlign-3/9 on ONNX RoiAlign-16: ``asymmetric`` is ``output_half_pixel``,
    ``half_pixel_for_nn`` is ``half_pixel``, ``half_pixel`` is ``half_pixel`` on ``rois + 0.5``;
    ``max`` is RoiAlign's max floored at 0 (see the module text)."""
    aligned = "asymmetric"
    if node.layer.version == "opset9":
        aligned = node.choice("aligned_mode", "asymmetric", ("asymmetric", "half_pixel_for_nn", "half_pixel"))
    mode = node.choice("mode", "avg", ("avg", "max"))
    attrs = {
        "output_height": node.integer("pooled_h"),
        "output_width": node.integer("pooled_w"),
        "sampling_ratio": node.integer("sampling_ratio"),
        "spatial_scale": node.number("spatial_scale"),
        "mode": mode,
        "coordinate_transformation_mode": "output_half_pixel" if aligned == "asymmetric" else "half_pixel",
    }
    onnx_roi_align = node.onnx("RoiAlign", 16, attrs)

    def kernel(x: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray) -> tuple[np.ndarray, ...]:
        if aligned == "half_pixel":
            rois = rois + rois.dtype.type(0.5)
        (out,) = onnx_roi_align(x, rois, batch_indices.astype(np.int64, copy=False))
        return (np.maximum(out, out.dtype.type(0)) if mode == "max" else out,)

    return kernel


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """Boxes ``[n, 4]`` as float32 ``[n, 4]`` of (low a, low b, high a, high b)."""
    b = boxes.astype(np.float32)
    if center:
        half_w, half_h = b[:, 2] / 2, b[:, 3] / 2
        return np.stack([b[:, 1] - half_h, b[:, 0] - half_w, b[:, 1] + half_h, b[:, 0] + half_w], axis=1)
    return np.stack(
        [np.minimum(b[:, 0], b[:, 2]), np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 0], b[:, 2]), np.maximum(b[:, 1], b[:, 3])],
        axis=1,
    )


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU in float32 of one box with each of ``others`` (0 where either has no area)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    high = np.minimum(box[2:], others[:, 2:])
    low = np.maximum(box[:2], others[:, :2])
    inter = np.maximum(high[:, 0] - low[:, 0], np.float32(0)) * np.maximum(high[:, 1] - low[:, 1], np.float32(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / (area + areas - inter)
    return np.where((area <= 0) | (areas <= 0), np.float32(0), iou).astype(np.float32)


def _select(
    boxes: np.ndarray,
    scores: np.ndarray,
    limit: int,
    iou_limit: np.float32,
    score_limit: np.float32,
    sigma: np.float32,
    v5: bool,
) -> list[tuple[int, float]]:
    """One batch and class: the selected (box index, score) in selection order."""
    scale = np.float32(-0.5 / sigma) if sigma > 0 else np.float32(0)
    soft = sigma > 0
    queue = [(-float(s), int(i), 0) for i, s in enumerate(scores) if s > score_limit]  # (-score, index, checked)
    heapq.heapify(queue)
    selected: list[tuple[int, float]] = []
    while queue and len(selected) < limit:
        negative, index, checked = heapq.heappop(queue)
        original = score = np.float32(-negative)
        suppressed = False
        if len(selected) > checked:
            ious = _iou(boxes[index], boxes[[i for i, _ in selected[checked:]]])
            for iou in ious[::-1]:  # the latest selected first, as OpenVINO's reference
                weight = np.exp(scale * iou * iou) if (soft and not v5) or iou <= iou_limit else np.float32(0)
                score = np.float32(score * weight)
                if (iou >= iou_limit) if v5 else (iou > iou_limit and not soft):
                    suppressed = True
                    break
                if score <= score_limit:
                    break
        if suppressed:
            continue
        if score == original:
            selected.append((index, float(score)))
        elif score > score_limit:
            heapq.heappush(queue, (-float(score), index, len(selected)))
    return selected


def _scalar_input(value: np.ndarray | None, default: float) -> float:
    return default if value is None else float(np.asarray(value).reshape(-1)[0])


@layer("NonMaxSuppression", 5, 9)
def non_max_suppression(node: LayerNode) -> Kernel:
    """NonMaxSuppression-5/9: inputs boxes ``[batches, boxes, 4]``, scores ``[batches, classes,
    boxes]``, then optional max_output_boxes_per_class (0), iou_threshold (0), score_threshold (0),
    soft_nms_sigma (0); the rules are in the module text."""
    v5 = node.layer.version == "opset5"
    center = node.choice("box_encoding", "corner", ("corner", "center")) == "center"
    by_score = node.flag("sort_result_descending", True)
    index_type = node.element_type("output_type", "i64")

    def kernel(boxes: np.ndarray, scores: np.ndarray, *limits: np.ndarray) -> tuple[np.ndarray, ...]:
        if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[::2] != boxes.shape[:2]:
            raise node.fail(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} are not [N, B, 4] and [N, C, B]")
        given = list(limits) + [None] * (4 - len(limits))
        limit = int(_scalar_input(given[0], 0))
        iou_limit = np.float32(_scalar_input(given[1], 0))
        score_limit = np.float32(_scalar_input(given[2], 0))
        sigma = np.float32(_scalar_input(given[3], 0))
        rows: list[tuple[int, int, int, float]] = []
        for b in range(boxes.shape[0]):
            corners = _corners(boxes[b], center)
            for c in range(scores.shape[1]):
                picked = _select(corners, scores[b, c].astype(np.float32), limit, iou_limit, score_limit, sigma, v5)
                rows.extend((b, c, i, s) for i, s in picked)
        if by_score:
            rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
        indices = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3).astype(index_type)
        chosen = np.array([(r[0], r[1], r[3]) for r in rows], np.float64).reshape(-1, 3).astype(scores.dtype)
        return indices, chosen, np.array([len(rows)], index_type)

    return kernel


@layer("NonMaxSuppression", 1, 3, 4)
def non_max_suppression_legacy(node: LayerNode) -> Kernel:
    """NonMaxSuppression-1/3/4: NonMaxSuppression-9's selection without Soft-NMS, one output of
    ``[batch, class, box]`` rows (i64 in 1, ``output_type`` in 3 and 4), -1 past the selected ones
    up to the static row count (see the module text)."""
    version = node.layer.version
    center = node.choice("box_encoding", "corner", ("corner", "center")) == "center"
    by_score = node.flag("sort_result_descending", True)
    index_type = node.element_type("output_type", "i64") if version != "opset1" else np.dtype(np.int64)
    limit_constant = node.constant(2)

    def rows_for(boxes: int, batches: int, classes: int) -> int | None:
        if limit_constant is None:
            return None
        most = int(np.asarray(limit_constant).reshape(-1)[0])
        return min(boxes, most) * classes * batches if version == "opset4" else min(boxes, most * classes)

    def kernel(boxes: np.ndarray, scores: np.ndarray, *limits: np.ndarray) -> tuple[np.ndarray, ...]:
        if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[::2] != boxes.shape[:2]:
            raise node.fail(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} are not [N, B, 4] and [N, C, B]")
        given = list(limits) + [None] * (3 - len(limits))
        limit = int(_scalar_input(given[0], 0))
        iou_limit, score_limit = np.float32(_scalar_input(given[1], 0)), np.float32(_scalar_input(given[2], 0))
        rows: list[tuple[int, int, int, float]] = []
        for b in range(boxes.shape[0]):
            corners = _corners(boxes[b], center)
            for c in range(scores.shape[1]):
                picked = _select(corners, scores[b, c].astype(np.float32), limit, iou_limit, score_limit, np.float32(0), False)
                rows.extend((b, c, i, s) for i, s in picked)
        if by_score:
            rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
        selected = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)
        count = rows_for(boxes.shape[1], boxes.shape[0], scores.shape[1])
        if count is not None:
            padded = np.full((count, 3), -1, np.int64)
            padded[: min(count, len(selected))] = selected[:count]
            selected = padded
        return (selected.astype(index_type),)

    return kernel

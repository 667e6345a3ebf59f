"""NonMaxSuppression and RoiAlign against onnxruntime at every since-version; RoiAlign's max mode,
RoiAlign-22 (no onnxruntime kernel) and the edge cases onnxruntime refuses against the schema
computed here in loops; ONNX's own node test cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from harness import check, check_node_case, drawn_rng, make_model, node_case_params, run_ovpool, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.errors import ModelError

OPS = ("NonMaxSuppression", "RoiAlign")


# --- NonMaxSuppression ---------------------------------------------------------------------------


@st.composite
def _nms_inputs(draw: st.DrawFn) -> tuple[list[np.ndarray | None], dict[str, int]]:
    batches, classes, n = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 12))
    rng = drawn_rng(draw)
    center = draw(st.sampled_from([0, 1]))
    if draw(st.booleans()):  # a coarse grid: equal boxes, touching edges, IoU exactly at thresholds
        boxes = rng.integers(0, 5, (batches, n, 4)).astype(np.float32)
    else:
        boxes = rng.uniform(-2, 8, (batches, n, 4)).astype(np.float32)
    if center:
        boxes[..., 2:] = np.abs(boxes[..., 2:])
    if draw(st.booleans()):  # ties in score: lower box index first
        scores = rng.choice(np.array([0.1, 0.3, 0.5, 0.9], np.float32), (batches, classes, n))
    else:
        scores = rng.uniform(0, 1, (batches, classes, n)).astype(np.float32)
    shape = draw(st.sampled_from([(), (1,)]))
    limit = draw(st.none() | st.integers(0, 6))
    iou = draw(st.none() | st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 0.7, 1.0]))
    score = draw(st.none() | st.sampled_from([0.0, 0.1, 0.3, 0.5]))
    inputs: list[np.ndarray | None] = [
        boxes,
        scores,
        None if limit is None else np.full(shape, limit, np.int64),
        None if iou is None else np.full(shape, iou, np.float32),
        None if score is None else np.full(shape, score, np.float32),
    ]
    while inputs[-1] is None:
        inputs.pop()
    return inputs, ({"center_point_box": center} if center or draw(st.booleans()) else {})


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
@settings(max_examples=25)
@given(case=_nms_inputs())
def test_nms_matches_onnxruntime(opset: int, case: tuple[list[np.ndarray | None], dict[str, int]]) -> None:
    inputs, attrs = case
    check("NonMaxSuppression", opset, inputs, attrs)


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
def test_nms_order_and_score_threshold(opset: int) -> None:
    """Selections come by batch, class, then descending score (ties: lower index); a score equal to
    score_threshold is dropped, as onnxruntime does (the schema text only says scores *less than* the
    threshold are removed)."""
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 1.1], [5, 5, 6, 6], [9, 9, 10, 10]]], np.float32)
    scores = np.array([[[0.5, 0.9, 0.3, 0.9], [0.2, 0.2, 0.8, 0.2]]], np.float32)
    inputs = [boxes, scores, np.array([10], np.int64), np.array([0.5], np.float32), np.array([0.3], np.float32)]
    (selected,) = check("NonMaxSuppression", opset, inputs)
    np.testing.assert_array_equal(selected, [[0, 0, 1], [0, 0, 3], [0, 1, 2]])


def test_nms_negative_zero_ties_with_zero() -> None:
    """Scores -0.0 and 0.0 are equal: the lower box index comes first."""
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5]]], np.float32)
    scores = np.array([[[-0.0, 0.0, -0.0]]], np.float32)
    (selected,) = check("NonMaxSuppression", 11, [boxes, scores, np.array([3], np.int64)])
    np.testing.assert_array_equal(selected[:, 2], [0, 1, 2])


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
def test_nms_without_limit_selects_nothing(opset: int) -> None:
    boxes = np.array([[[0, 0, 1, 1], [2, 2, 3, 3]]], np.float32)
    scores = np.array([[[0.5, 0.9]]], np.float32)
    (selected,) = check("NonMaxSuppression", opset, [boxes, scores])
    assert selected.shape == (0, 3) and selected.dtype == np.int64
    check("NonMaxSuppression", opset, [boxes, scores, np.array(-1, np.int64)])


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
@pytest.mark.parametrize("center", [0, 1])
def test_nms_iou_exactly_at_threshold_is_kept(opset: int, center: int) -> None:
    """Suppression needs IoU strictly greater than iou_threshold: boxes 2x3 overlapping by 2x2 have
    IoU 4/8 = 0.5, identical boxes IoU 1; both are kept at thresholds 0.5 and 1."""
    corners = np.array([[0, 0, 2, 3], [0, 1, 2, 4], [0, 1, 2, 4]], np.float32)
    boxes = (
        corners if center == 0 else np.concatenate([(corners[:, :2] + corners[:, 2:]) / 2, corners[:, 2:] - corners[:, :2]], 1)
    )
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    for threshold, expected in ((0.5, [0, 1]), (1.0, [0, 1, 2]), (0.49, [0])):
        inputs = [boxes[None], scores, np.array([5], np.int64), np.array([threshold], np.float32)]
        (selected,) = check("NonMaxSuppression", opset, inputs, {"center_point_box": center})
        np.testing.assert_array_equal(selected[:, 2], expected)


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
@settings(max_examples=10)
@given(seed=st.integers(0, 2**16), n=st.integers(20, 300), limit=st.integers(1, 400), iou=st.sampled_from([0.1, 0.3, 0.5, 0.8]))
def test_nms_many_ranks(opset: int, seed: int, n: int, limit: int, iou: float) -> None:
    """More ranks than one block: candidates decided block by block, against earlier blocks' selections
    (boxes on a coarse grid, so chains of overlapping boxes and exact ties occur)."""
    rng = np.random.default_rng(seed)
    corner = rng.integers(0, 20, (1, n, 2))
    boxes = np.concatenate([corner, corner + rng.integers(1, 6, (1, n, 2))], axis=2).astype(np.float32)
    scores = np.round(rng.uniform(0, 1, (1, 3, n)), 2).astype(np.float32)
    check("NonMaxSuppression", opset, [boxes, scores, np.array([limit], np.int64), np.array([iou], np.float32)])


def test_nms_chain_of_overlaps() -> None:
    """Boxes sliding by one unit overlap only their neighbours (IoU 0.8): the greedy answer alternates
    kept / suppressed along the chain of 300, the longest fixed-point iteration."""
    boxes = np.stack([np.arange(300), np.zeros(300), np.arange(300) + 9, np.ones(300)], axis=1)[None].astype(np.float32)
    scores = np.linspace(1, 0.5, 300, dtype=np.float32)[None, None]
    (selected,) = check("NonMaxSuppression", 11, [boxes, scores, np.array([300], np.int64), np.array([0.7], np.float32)])
    np.testing.assert_array_equal(selected[:, 2], np.arange(0, 300, 2))


def test_nms_many_boxes() -> None:
    """A realistic size (2 x 5 classes x 500 boxes) against onnxruntime."""
    rng = np.random.default_rng(5)
    corner = rng.uniform(0, 100, (2, 500, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(1, 30, (2, 500, 2))], axis=2).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 5, 500)).astype(np.float32)
    limits = [np.array([50], np.int64), np.array([0.45], np.float32), np.array([0.05], np.float32)]
    check("NonMaxSuppression", 11, [boxes, scores, *limits])


@pytest.mark.parametrize(
    ("attrs", "inputs", "match"),
    [
        ({"center_point_box": 2}, [], "center_point_box"),
        ({}, [np.array(5, np.int64), np.array(1.5, np.float32)], "iou_threshold 1.5"),
        ({}, [np.array([5, 6], np.int64)], "max_output_boxes_per_class"),
    ],
)
def test_nms_bad_node_is_a_model_error(attrs: dict[str, int], inputs: list[np.ndarray], match: str) -> None:
    boxes, scores = np.zeros((1, 2, 4), np.float32), np.zeros((1, 1, 2), np.float32)
    model = make_model("NonMaxSuppression", 11, [boxes, scores, *inputs], attrs)
    with pytest.raises(ModelError, match=match):
        run_ovpool(model, {f"x{i}": v for i, v in enumerate([boxes, scores, *inputs])})


def test_nms_bad_shapes_are_a_model_error() -> None:
    boxes, scores = np.zeros((1, 3, 4), np.float32), np.zeros((1, 1, 2), np.float32)
    model = make_model("NonMaxSuppression", 11, [boxes, scores])
    with pytest.raises(ModelError, match="scores have shape"):
        run_ovpool(model, {"x0": boxes, "x1": scores})


# --- RoiAlign ------------------------------------------------------------------------------------


def _roi_align_schema(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    mode: str,
    out_h: int,
    out_w: int,
    ratio: int,
    scale: float,
    half_pixel: bool,
) -> np.ndarray:
    """The schema, one output value at a time in Python floats: each bin pools (average or maximum)
    the bilinear interpolations at its grid of sample points; a point beyond one cell outside the map
    samples 0; output_half_pixel widens regions to at least one cell, half_pixel shifts by -0.5."""
    _, c, height, width = x.shape
    offset = 0.5 if half_pixel else 0.0

    def bilinear(image: np.ndarray, y: float, xx: float) -> float:
        if y < -1 or y > height or xx < -1 or xx > width:
            return 0.0
        y, xx = max(y, 0.0), max(xx, 0.0)
        y0, x0 = min(int(y), height - 1), min(int(xx), width - 1)
        y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
        dy = y - y0 if y0 < height - 1 else 0.0
        dx = xx - x0 if x0 < width - 1 else 0.0
        top = image[y0, x0] * (1 - dx) + image[y0, x1] * dx
        bottom = image[y1, x0] * (1 - dx) + image[y1, x1] * dx
        return float(top * (1 - dy) + bottom * dy)

    out = np.zeros((len(rois), c, out_h, out_w))
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sx, sy = x1 * scale - offset, y1 * scale - offset
        rw, rh = x2 * scale - offset - sx, y2 * scale - offset - sy
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gy = ratio or max(math.ceil(rh / out_h), 0)
        gx = ratio or max(math.ceil(rw / out_w), 0)
        for ch in range(c):
            image = x[batch_indices[r], ch].astype(np.float64)
            for i in range(out_h):
                for j in range(out_w):
                    values = [
                        bilinear(image, sy + (i + (a + 0.5) / gy) * rh / out_h, sx + (j + (b + 0.5) / gx) * rw / out_w)
                        for a in range(gy)
                        for b in range(gx)
                    ]
                    if values:
                        out[r, ch, i, j] = max(values) if mode == "max" else sum(values) / len(values)
    return out


@st.composite
def _roi_inputs(draw: st.DrawFn, dtypes: tuple[type, ...] = (np.float32,)) -> tuple[list[np.ndarray], dict]:
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    height, width = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    rng = drawn_rng(draw)
    dtype = draw(st.sampled_from(dtypes))
    num = draw(st.integers(1, 4))
    scale = draw(st.sampled_from([1.0, 0.5, 0.25, 2.0]))
    corners = rng.uniform(-2, max(height, width) / scale + 2, (num, 4))
    if draw(st.booleans()):
        corners = np.round(corners * 4) / 4  # on the quarter grid: exact in float16, sample points on cells
    rois = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
    attrs = {
        "output_height": draw(st.integers(1, 3)),
        "output_width": draw(st.integers(1, 3)),
        "sampling_ratio": draw(st.integers(0, 3)),
        "spatial_scale": scale,
    }
    x = rng.standard_normal((n, c, height, width))
    return [x.astype(dtype), rois.astype(dtype), rng.integers(0, n, num).astype(np.int64)], attrs


def _transform(draw: st.DrawFn, opset: int) -> dict[str, str]:
    if opset < 16:
        return {}
    return draw(
        st.sampled_from(
            [{}, {"coordinate_transformation_mode": "half_pixel"}, {"coordinate_transformation_mode": "output_half_pixel"}]
        )
    )


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
@settings(max_examples=25)
@given(data=st.data())
def test_roi_align_avg_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    inputs, attrs = data.draw(_roi_inputs((np.float32, np.float64, np.float16)))
    attrs.update(_transform(data.draw, opset))
    tol = 1e-2 if inputs[0].dtype == np.float16 else 1e-5
    check("RoiAlign", opset, inputs, attrs, rtol=tol, atol=tol)


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
@pytest.mark.parametrize("mode", ["avg", "max"])
@settings(max_examples=15)
@given(data=st.data())
def test_roi_align_matches_the_schema(opset: int, mode: str, data: st.DataObject) -> None:
    """Every version and both modes against the schema computed in loops (RoiAlign-10 is
    output_half_pixel; 16 and 22 default to half_pixel). This is the oracle for max mode, where
    onnxruntime (and ONNX's reference outputs) take the largest *weighted corner value* of each sample
    point instead of the maximum of the bilinear samples, and for RoiAlign-22, which onnxruntime lacks."""
    inputs, attrs = data.draw(_roi_inputs((np.float32, np.float64)))
    attrs.update(_transform(data.draw, opset), mode=mode)
    model = make_model("RoiAlign", opset, inputs, attrs)
    (actual,) = run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs)})
    half_pixel = opset >= 16 and attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    expected = _roi_align_schema(
        *inputs, mode, attrs["output_height"], attrs["output_width"], attrs["sampling_ratio"], attrs["spatial_scale"], half_pixel
    )
    assert actual.dtype == inputs[0].dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
def test_roi_align_max_agrees_with_onnxruntime_on_whole_cells(opset: int) -> None:
    """Where every sample point falls on a cell (weights 1 and 0) and X >= 0, onnxruntime's
    weighted-corner maximum is the maximum of the samples: both agree."""
    x = np.abs(np.random.default_rng(2).standard_normal((1, 2, 9, 10))).astype(np.float32)
    rois = np.array([[0, 0, 4, 6], [2, 1, 6, 7], [5, 3, 9, 9]], np.float32)  # 4 x 6: bins of 2 x 2 cells
    attrs = {"mode": "max", "output_height": 3, "output_width": 2, "sampling_ratio": 1, "spatial_scale": 1.0}
    if opset >= 16:
        attrs["coordinate_transformation_mode"] = "output_half_pixel"
    check("RoiAlign", opset, [x, rois, np.zeros(3, np.int64)], attrs)


def test_roi_align_10_is_output_half_pixel() -> None:
    """RoiAlign-10 has no coordinate_transformation_mode: its meaning is 16's output_half_pixel, not
    16's default. On the ramp X[h, w] = 5h + w, region [0, 0, 4, 4] at 1x1 averages to 12 (sample
    points 1 and 3) in version 10 and to 9 in version 16 (points 0.5 ... 2.5 after the -0.5 shift)."""
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    inputs = [x, np.array([[0, 0, 4, 4]], np.float32), np.zeros(1, np.int64)]
    (y10,) = check("RoiAlign", 10, inputs, {"sampling_ratio": 2})
    (y16,) = check("RoiAlign", 16, inputs, {"sampling_ratio": 2})
    (y16_old,) = check("RoiAlign", 16, inputs, {"sampling_ratio": 2, "coordinate_transformation_mode": "output_half_pixel"})
    assert y10.item() == y16_old.item() == 12.0 and y16.item() == 9.0


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
def test_roi_align_degenerate_regions(opset: int) -> None:
    """Schema (onnxruntime fails on these with an integer overflow): an inverted region with adaptive
    sampling has no sample point in half_pixel and pools to 0; no region at all gives an empty output;
    output_half_pixel widens it to one cell."""
    x = np.arange(50, dtype=np.float32).reshape(1, 2, 5, 5)
    rois = np.array([[3, 3, 1, 1], [1, 1, 1, 1]], np.float32)
    for half_pixel in (False, True) if opset >= 16 else (False,):
        attrs = {"coordinate_transformation_mode": "half_pixel" if half_pixel else "output_half_pixel"} if opset >= 16 else {}
        inputs = [x, rois, np.zeros(2, np.int64)]
        (y,) = run_ovpool(make_model("RoiAlign", opset, inputs, attrs), {"x0": x, "x1": rois, "x2": inputs[2]})
        np.testing.assert_allclose(y, _roi_align_schema(x, rois, inputs[2], "avg", 1, 1, 0, 1.0, half_pixel), rtol=1e-6)
        empty = [x, np.zeros((0, 4), np.float32), np.zeros(0, np.int64)]
        (y,) = run_ovpool(make_model("RoiAlign", opset, empty, attrs), {f"x{i}": v for i, v in enumerate(empty)})
        assert y.shape == (0, 2, 1, 1) and y.dtype == np.float32


def test_roi_align_bfloat16() -> None:
    """RoiAlign-22 adds bfloat16 (onnxruntime has no kernel): computed in float32, returned as bfloat16."""
    import ml_dtypes

    inputs = [
        np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4),
        np.array([[0.5, 0.5, 3, 2.5]], np.float32),
        np.zeros(1, np.int64),
    ]
    attrs = {"output_height": 2, "output_width": 2}
    expected = _roi_align_schema(*inputs, "avg", 2, 2, 0, 1.0, True)
    narrow = [inputs[0].astype(ml_dtypes.bfloat16), inputs[1].astype(ml_dtypes.bfloat16), inputs[2]]
    (y,) = run_ovpool(make_model("RoiAlign", 22, narrow, attrs), {f"x{i}": v for i, v in enumerate(narrow)})
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(y.astype(np.float32), expected, rtol=1e-2)


def test_roi_align_realistic_size() -> None:
    """A detection head's size (200 regions, 32 channels, 7x7, sampling_ratio 2) against onnxruntime."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 32, 25, 34)).astype(np.float32)
    corner = rng.uniform(0, 30, (200, 2))
    rois = np.concatenate([corner, corner + rng.uniform(1, 20, (200, 2))], axis=1).astype(np.float32)
    attrs = {"output_height": 7, "output_width": 7, "sampling_ratio": 2, "spatial_scale": 0.5}
    check("RoiAlign", 16, [x, rois, rng.integers(0, 2, 200).astype(np.int64)], attrs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("opset", "attrs", "match"),
    [
        (16, {"mode": "MAX"}, "'mode'"),
        (16, {"sampling_ratio": -1}, "'sampling_ratio'"),
        (16, {"output_height": 0}, "'output_height'"),
        (16, {"coordinate_transformation_mode": "asymmetric"}, "'coordinate_transformation_mode'"),
        (10, {"coordinate_transformation_mode": "half_pixel"}, "RoiAlign-10 has no such attribute"),
    ],
)
def test_roi_align_bad_attribute_is_a_model_error(opset: int, attrs: dict, match: str) -> None:
    inputs = [np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 4), np.float32), np.zeros(1, np.int64)]
    model = make_model("RoiAlign", opset, inputs, attrs)
    with pytest.raises(ModelError, match=match):
        run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs)})


def test_roi_align_batch_index_out_of_range_is_a_model_error() -> None:
    inputs = [np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 4), np.float32), np.array([1], np.int64)]
    model = make_model("RoiAlign", 16, inputs)
    with pytest.raises(ModelError, match=r"batch_indices \[1\]"):
        run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs)})


# --- ONNX's node test cases ----------------------------------------------------------------------

# Cases whose expected output is not the schema's meaning (they are generated by onnx's reference code).
WRONG_EXPECTATIONS = {
    "test_roialign_mode_max": "expected values are the largest weighted corner value of each sample point (onnx.reference, "
    "as onnxruntime), not the maximum of the bilinear samples; max mode is tested against the schema above",
}


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_onnx_node_cases(case: Any) -> None:
    # the RoiAlign cases list their expected values to 4 decimals
    atol = 1e-4 if case.model.graph.node[0].op_type == "RoiAlign" else 1e-6
    check_node_case(case, atol=atol, skip=WRONG_EXPECTATIONS)

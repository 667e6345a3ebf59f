"""IR layers OpenVINO's ONNX frontend writes (and opset-1 layers of older IRs) on the numpy
executor, against OpenVINO's CPU plugin at ``INFERENCE_PRECISION_HINT=f32``.

Each layer is built with OpenVINO's own opset API (``NodeFactory`` where Python has no builder),
saved as IR with f32 weights, and run both ways over hypothesis-drawn attributes (a few examples
in CI, ``HYPOTHESIS_PROFILE=deep`` for many). One-node ONNX models of the operators that produce
these layers are converted by ovpool (``onnx_to_ir``) at every since-version in opsets 7-22 and
their IR run on numpy, on the CPU plugin and compared with onnxruntime on the ONNX model.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from ovpool.engine.graph import GraphSession
from ovpool.engine.ir_executor import IrGraph

ov = pytest.importorskip("openvino")
from openvino import (  # noqa: E402
    opset1,
    opset2,
    opset3,
    opset4,
    opset5,
    opset6,
    opset7,
    opset8,
    opset9,
    opset10,
    opset12,
    opset13,
    opset15,
    opset16,
)
from openvino.utils.node_factory import NodeFactory  # noqa: E402

pytestmark = pytest.mark.openvino
RTOL = 1e-5
# Each example compiles a model on the CPU plugin: 5 in CI, many more with HYPOTHESIS_PROFILE=deep.
EXAMPLES = max(5, settings.default.max_examples // 12)
F32 = ov.Type.f32


def cpu(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return [np.asarray(result[o]) for o in compiled.outputs]


def assert_close(got: np.ndarray, want: np.ndarray, what: str, rtol: float = RTOL) -> None:
    """Same shape and type; integers and booleans equal, floats within ``rtol`` of the largest magnitude."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        assert np.array_equal(got, want), f"{what}: {got.tolist()} != {want.tolist()}"
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), what
    finite = ~np.isnan(w)
    scale = max(float(np.max(np.abs(w[finite]), initial=0)), 1e-30)
    error = float(np.max(np.abs(g[finite] - w[finite]), initial=0))
    assert error <= rtol * scale, f"{what}: max error {error:.3g} > {rtol} * {scale:.3g}"


def check_ir(xml: Path, feeds: dict[str, np.ndarray], rtol: float = RTOL) -> list[np.ndarray]:
    """numpy's outputs of ``xml`` against the CPU plugin's; numpy's returned in output order."""
    got = list(IrGraph.read(xml).run(feeds).values())
    want = cpu(xml, feeds)
    assert len(got) == len(want)
    for i, (value, expected) in enumerate(zip(got, want)):
        assert_close(value, expected, f"output {i}", rtol)
    return got


def check_model(outputs: Sequence, params: Sequence, feeds: dict[str, np.ndarray], rtol: float = RTOL) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "m.xml"
        ov.save_model(ov.Model(list(outputs), list(params)), str(xml), compress_to_fp16=False)
        return check_ir(xml, feeds, rtol)


def param(name: str, shape: Sequence[int], dtype=F32):
    return opset1.parameter(list(shape), dtype, name=name)


def const(value) -> object:
    return opset1.constant(np.asarray(value))


def factory(version: int, layer_type: str, inputs: Sequence, attrs: dict) -> object:
    """A layer Python has no builder for (Reverse-1, NonMaxSuppression-4...), made by OpenVINO's node factory."""
    return NodeFactory(f"opset{version}").create(layer_type, [node.output(0) for node in inputs], attrs)


# ---------------------------------------------------------------------------------------------
# ROIAlign


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([3, 9]),
    aligned=st.sampled_from(["asymmetric", "half_pixel_for_nn", "half_pixel"]),
    mode=st.sampled_from(["avg", "max"]),
    pooled=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    ratio=st.integers(0, 3),
    scale=st.sampled_from([1.0, 0.5, 0.25]),
    seed=st.integers(0, 2**16),
)
def test_roi_align(version, aligned, mode, pooled, ratio, scale, seed):
    rng = np.random.default_rng(seed)
    x = param("x", [2, 3, 7, 8])
    start = rng.uniform(-2, 12, (5, 2))
    rois = np.concatenate([start, start + rng.uniform(0, 8, (5, 2))], axis=1).astype(np.float32)
    batch = const(rng.integers(0, 2, 5).astype(np.int32))
    if version == 3:
        node = opset3.roi_align(x, const(rois), batch, *pooled, ratio, scale, mode)
    else:
        node = opset9.roi_align(x, const(rois), batch, *pooled, ratio, scale, mode, aligned)
    check_model([node], [x], {"x": rng.standard_normal((2, 3, 7, 8)).astype(np.float32)})


def test_roi_align_max_starts_from_zero():
    """A bin whose samples are all negative pools to 0 in ``max`` mode (OpenVINO's reference and CPU)."""
    x = param("x", [1, 1, 4, 4])
    node = opset9.roi_align(x, const(np.float32([[0, 0, 3, 3]])), const(np.int32([0])), 1, 1, 2, 1.0, "max", "asymmetric")
    assert check_model([node], [x], {"x": -np.ones((1, 1, 4, 4), np.float32)})[0].item() == 0


# ---------------------------------------------------------------------------------------------
# OneHot, CumSum, Reverse, ReverseSequence, GatherElements, GatherND


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([1, 16]),
    normalize=st.booleans(),
    axis=st.integers(-3, 2),
    depth=st.integers(1, 5),
    values=st.tuples(st.sampled_from([1.0, 5.5, -2.0]), st.sampled_from([0.0, -1.0])),
    seed=st.integers(0, 2**16),
)
def test_one_hot(version, normalize, axis, depth, values, seed):
    indices = np.random.default_rng(seed).integers(-depth - 1, depth + 2, (3, 4)).astype(np.int32)
    i = param("i", [3, 4], ov.Type.i32)
    on, off = const(np.float32(values[0])), const(np.float32(values[1]))
    if version == 1:
        node = opset1.one_hot(i, const(np.int32(depth)), on, off, axis)
    else:
        node = opset16.one_hot(i, const(np.int64(depth)), on, off, axis, "normalize" if normalize else "ignore_negative")
    check_model([node], [i], {"i": indices})


def test_one_hot_of_run_time_depth_and_values():
    """Depth, on and off given at run time give what constants give (the kernel takes constants
    as its own once): indices [0, 2, -1], depth 3, on 5.5, off -1."""
    i, depth = param("i", [3], ov.Type.i64), param("d", [], ov.Type.i64)
    on, off = param("on", []), param("off", [])
    feeds = {"i": np.int64([0, 2, -1]), "d": np.int64(3), "on": np.float32(5.5), "off": np.float32(-1)}
    (run_time,) = check_model([opset16.one_hot(i, depth, on, off, -1, "normalize")], [i, depth, on, off], feeds)
    constants = (const(np.int64(3)), const(np.float32(5.5)), const(np.float32(-1)))
    (constant,) = check_model([opset16.one_hot(i, *constants, -1, "normalize")], [i], {"i": feeds["i"]})
    assert run_time.tobytes() == constant.tobytes() and run_time.tolist() == [[5.5, -1, -1], [-1, -1, 5.5], [-1, -1, 5.5]]


def test_one_hot_rule_by_example():
    """Indices [0, 2, -1], depth 3: rows 100, 001, 000; -16's ``normalize`` makes the last 001."""
    i = param("i", [3], ov.Type.i64)
    args = (i, const(np.int64(3)), const(np.float32(1)), const(np.float32(0)), -1)
    indices = {"i": np.int64([0, 2, -1])}
    assert check_model([opset1.one_hot(*args)], [i], indices)[0].tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    assert check_model([opset16.one_hot(*args, "normalize")], [i], indices)[0][2].tolist() == [0, 0, 1]


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, -1, 1])
def test_cumsum(exclusive, reverse, axis):
    x = param("x", [3, 4, 2])
    node = opset3.cumsum(x, const(np.int64(axis)), exclusive=exclusive, reverse=reverse)
    check_model([node], [x], {"x": np.random.default_rng(1).standard_normal((3, 4, 2)).astype(np.float32)})


@pytest.mark.parametrize(
    "mode, axes",
    [
        ("index", np.int64([0, 2])),
        ("index", np.int64([-1])),
        ("mask", np.array([False, True, True])),
        ("mask", np.array([False] * 3)),
    ],
)
def test_reverse(mode, axes):
    x = param("x", [2, 3, 4])
    node = factory(1, "Reverse", [x, const(axes)], {"mode": mode})
    check_model([node], [x], {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})


@pytest.mark.parametrize("batch_axis, seq_axis", [(0, 1), (2, 0), (1, 2)])
def test_reverse_sequence(batch_axis, seq_axis):
    shape = [3, 4, 5]
    x = param("x", shape)
    lengths = np.int32([1, 3, 2, 4, 0][: shape[batch_axis]])
    lengths = np.minimum(lengths, shape[seq_axis])
    node = opset1.reverse_sequence(x, const(lengths), batch_axis, seq_axis)
    check_model([node], [x], {"x": np.arange(60, dtype=np.float32).reshape(shape)})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    rng = np.random.default_rng(2)
    x = param("x", [3, 4, 5])
    shape = [3, 4, 5]
    shape[axis] = 2
    indices = rng.integers(-3, 3, shape).astype(np.int32)
    check_model([opset6.gather_elements(x, const(indices), axis)], [x], {"x": rng.standard_normal((3, 4, 5)).astype(np.float32)})


@pytest.mark.parametrize("version", [5, 8])
@pytest.mark.parametrize("batch_dims, indices_shape", [(0, [2, 2]), (1, [2, 3, 1]), (2, [2, 3, 1])])
def test_gather_nd(version, batch_dims, indices_shape):
    rng = np.random.default_rng(3)
    x = param("x", [2, 3, 4])
    k = indices_shape[-1]
    dims = [2, 3, 4][batch_dims : batch_dims + k]
    indices = np.stack([rng.integers(-d, d, indices_shape[:-1]) for d in dims], axis=-1).astype(np.int32)
    build = opset5.gather_nd if version == 5 else opset8.gather_nd
    check_model([build(x, const(indices), batch_dims)], [x], {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)})


# ---------------------------------------------------------------------------------------------
# Scatters


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([4, 15]),
    reduction=st.sampled_from(["none", "sum", "sub", "prod", "min", "max"]),
    dtype=st.sampled_from([np.float32, np.int32]),
    k=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_scatter_nd_update(version, reduction, dtype, k, seed):
    rng = np.random.default_rng(seed)
    shape = [3, 4, 2]
    indices = np.stack([rng.integers(-d, d, 5) for d in shape[:k]], axis=-1).astype(np.int32)
    if reduction == "none":  # a repeated index keeps the last update on OpenVINO; spelled out once here
        _, first = np.unique(np.ravel_multi_index(tuple((indices % shape[:k]).T), shape[:k]), return_index=True)
        indices = indices[np.sort(first)]
    updates = rng.integers(-3, 4, (len(indices), *shape[k:])).astype(dtype)
    x = param("x", shape, ov.Type(dtype))
    if version == 4:
        node = opset4.scatter_nd_update(x, const(indices), const(updates))
    else:
        node = opset15.scatter_nd_update(x, const(indices), const(updates), reduction)
    check_model([node], [x], {"x": rng.integers(-5, 6, shape).astype(dtype)})


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([3, 12]),
    reduction=st.sampled_from(["none", "sum", "prod", "min", "max", "mean"]),
    use_init=st.booleans(),
    dtype=st.sampled_from([np.float32, np.int32]),
    axis=st.integers(-2, 1),
    seed=st.integers(0, 2**16),
)
def test_scatter_elements_update(version, reduction, use_init, dtype, axis, seed):
    rng = np.random.default_rng(seed)
    shape, ishape = [4, 5], [3, 4]
    indices = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int32)
    if reduction == "none" or version == 3:  # no repeated target: OpenVINO's order of writes is its own business
        indices = np.stack([rng.permutation(shape[axis])[: ishape[axis]] for _ in range(ishape[1 - axis % 2])], axis=1 - axis % 2)
        indices = indices.astype(np.int32)
    low = 0 if reduction == "mean" and dtype == np.int32 else -4  # a negative integer mean: the CPU plugin truncates
    updates = rng.integers(low, 5, ishape).astype(dtype)
    x = param("x", shape, ov.Type(dtype))
    args = (x, const(indices), const(updates), const(np.int64(axis)))
    node = opset3.scatter_elements_update(*args) if version == 3 else opset12.scatter_elements_update(*args, reduction, use_init)
    check_model([node], [x], {"x": rng.integers(low, 7, shape).astype(dtype)})


def test_scatter_elements_mean_rounds_integers_down():
    """Data 1 with updates 2 and 4 at one element: mean 7/3 = 2.33 in f32, 2 in i32; without the
    data value 3."""
    for dtype, init, want in ((np.float32, True, 7 / 3), (np.int32, True, 2), (np.int32, False, 3)):
        x = param("x", [2], ov.Type(dtype))
        node = opset12.scatter_elements_update(
            x, const(np.int32([0, 0])), const(np.array([2, 4], dtype)), const(np.int64(0)), "mean", init
        )
        got = check_model([node], [x], {"x": np.array([1, 1], dtype)})[0]
        assert got[0] == pytest.approx(want, rel=1e-6)


def test_scatter_elements_negative_integer_mean_floors(tmp_path):
    """Data -1 with updates -2 and -4: the mean -7/3 rounds down to -3, as OpenVINO's reference
    implementation does; the CPU plugin 2026.4.1 truncates (-2), so numpy is checked alone."""
    x = param("x", [2], ov.Type.i32)
    node = opset12.scatter_elements_update(x, const(np.int32([0, 0])), const(np.int32([-2, -4])), const(np.int64(0)), "mean")
    ov.save_model(ov.Model([node], [x]), str(tmp_path / "m.xml"))
    assert next(iter(IrGraph.read(tmp_path / "m.xml").run({"x": np.int32([-1, -1])}).values())).tolist() == [-3, -1]


def test_scatter_update():
    x = param("x", [3, 4])
    updates = np.arange(8, dtype=np.float32).reshape(2, 4) + 10
    check_model(
        [opset3.scatter_update(x, const(np.int32([2, 0])), const(updates), const(np.int64(0)))],
        [x],
        {"x": np.zeros((3, 4), np.float32)},
    )


# ---------------------------------------------------------------------------------------------
# Einsum, LRN, GRN, unary layers


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [[2, 3], [3, 4]]),
        ("bij,bjk->bik", [[2, 2, 3], [2, 3, 2]]),
        ("ii->i", [[3, 3]]),
        ("...ij->...ji", [[2, 3, 4]]),
        ("ij,ij", [[2, 3], [2, 3]]),
    ],
)
def test_einsum(equation, shapes):
    rng = np.random.default_rng(4)
    params = [param(f"x{i}", s) for i, s in enumerate(shapes)]
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    check_model([opset7.einsum(params, equation)], params, feeds)


LRN_AXES = st.sampled_from([[1], [2, 3]])  # the axes the CPU plugin runs (it refuses [3] alone and [1, 2, 3])


def lrn_by_the_spec(x: np.ndarray, axes: Sequence[int], alpha: float, beta: float, bias: float, size: int) -> np.ndarray:
    """LRN-1 element by element in plain Python: the squares summed over the window i - (size - 1) // 2
    .. i + (size - 1) // 2 of each axis in ``axes``, clipped to the axis."""
    half = (size - 1) // 2
    out = np.empty(x.shape, np.float64)
    for index in np.ndindex(*x.shape):
        window = [
            range(max(0, i - half), min(n, i + half + 1)) if a in axes else range(i, i + 1)
            for a, (i, n) in enumerate(zip(index, x.shape))
        ]
        total = 0.0
        for offsets in np.ndindex(*[len(r) for r in window]):
            total += float(x[tuple(r[k] for r, k in zip(window, offsets))]) ** 2
        out[index] = float(x[index]) / (bias + alpha / size ** len(axes) * total) ** beta
    return out


@settings(max_examples=EXAMPLES)
@given(
    axes=LRN_AXES,
    size=st.integers(1, 6),
    alpha=st.sampled_from([1e-4, 0.5, 2.0]),
    beta=st.sampled_from([0.75, 0.5, 1.0]),
    bias=st.sampled_from([1.0, 2.0]),
    seed=st.integers(0, 2**16),
)
def test_lrn(axes, size, alpha, beta, bias, seed):
    """LRN-1 against the CPU plugin and the specification in plain Python."""
    x = param("x", [2, 5, 4, 3])
    value = np.random.default_rng(seed).standard_normal((2, 5, 4, 3)).astype(np.float32)
    got = check_model([opset1.lrn(x, const(np.int64(axes)), alpha, beta, bias, size)], [x], {"x": value})[0]
    assert_close(got, lrn_by_the_spec(value, axes, alpha, beta, bias, size).astype(np.float32), "the spec's LRN")


@pytest.mark.parametrize("axes, bias", [([3], 1.0), ([1, 2, 3], 2.0), ([1], 0.5), ([2, 3], 0.25)])
def test_lrn_where_the_cpu_plugin_differs(tmp_path, axes, bias):
    """Axes the CPU plugin refuses ([3] alone, [1, 2, 3]) and a bias below 1 (which the CPU plugin
    2026.4.1 computes as if it were 0): numpy against the specification in plain Python."""
    x = param("x", [1, 4, 3, 3])
    value = np.random.default_rng(7).standard_normal((1, 4, 3, 3)).astype(np.float32)
    ov.save_model(ov.Model([opset1.lrn(x, const(np.int64(axes)), 0.5, 0.75, bias, 3)], [x]), str(tmp_path / "lrn.xml"))
    got = next(iter(IrGraph.read(tmp_path / "lrn.xml").run({"x": value}).values()))
    assert_close(got, lrn_by_the_spec(value, axes, 0.5, 0.75, bias, 3).astype(np.float32), "the spec's LRN")


def test_lrn_rule_by_example():
    """Channels 1, 2, 3, size 3, alpha 3, beta 1, bias 1: the middle one is 2 / (1 + 3 / 3 * 14) =
    0.133; an even size 4 sums the same 3 channels (with alpha 4: 0.133 again)."""
    x = param("x", [1, 3, 1, 1])
    feeds = {"x": np.float32([1, 2, 3]).reshape(1, 3, 1, 1)}
    for size, alpha in ((3, 3.0), (4, 4.0)):
        got = check_model([opset1.lrn(x, const(np.int64([1])), alpha, 1.0, 1.0, size)], [x], feeds)[0]
        assert got[0, 1, 0, 0] == pytest.approx(2 / 15, rel=1e-6)


@pytest.mark.parametrize("bias", [1e-6, 0.5])
def test_grn(bias):
    x = param("x", [2, 4, 3, 2])
    check_model([opset1.grn(x, bias)], [x], {"x": np.random.default_rng(5).standard_normal((2, 4, 3, 2)).astype(np.float32)})


UNARY = {
    "Tan": (opset1.tan, -1.2, 1.2),
    "Asin": (opset1.asin, -1, 1),
    "Acos": (opset1.acos, -1, 1),
    "Atan": (opset1.atan, -5, 5),
    "Sinh": (opset1.sinh, -3, 3),
    "Cosh": (opset1.cosh, -3, 3),
    "Asinh": (opset4.asinh, -5, 5),
    "Acosh": (opset4.acosh, 1, 5),
    "Atanh": (opset4.atanh, -0.99, 0.99),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_layers(name):
    build, low, high = UNARY[name]
    x = param("x", [3, 7])
    check_model([build(x)], [x], {"x": np.random.default_rng(6).uniform(low, high, (3, 7)).astype(np.float32)})


def test_is_nan_inf_finite():
    x = param("x", [6])
    value = np.float32([1, np.nan, np.inf, -np.inf, 0, -2])
    nodes = [
        opset1.convert(n, "f32")
        for n in (opset10.is_nan(x), opset10.is_finite(x), opset10.is_inf(x), opset10.is_inf(x, {"detect_negative": False}))
    ]
    check_model(nodes, [x], {"x": value})


# ---------------------------------------------------------------------------------------------
# NonMaxSuppression


def _nms_inputs(rng: np.random.Generator, batches: int, classes: int, boxes: int) -> tuple[np.ndarray, np.ndarray]:
    low = rng.uniform(0, 6, (batches, boxes, 2))
    corners = np.concatenate([low, low + rng.uniform(0.5, 4, (batches, boxes, 2))], axis=-1).astype(np.float32)
    scores = rng.permutation(batches * classes * boxes).reshape(batches, classes, boxes).astype(np.float32)
    return corners, scores / scores.size  # distinct scores: the order of equal scores is not tested here


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([5, 9]),
    center=st.booleans(),
    by_score=st.booleans(),
    limit=st.integers(1, 6),
    iou=st.sampled_from([0.3, 0.5, 0.9]),
    score=st.sampled_from([0.0, 0.2, 0.6]),
    sigma=st.sampled_from([0.0, 0.0, 0.5]),
    seed=st.integers(0, 2**16),
)
def test_non_max_suppression(version, center, by_score, limit, iou, score, sigma, seed):
    """Against the CPU plugin, away from where it departs from the reference implementation (the
    tests below): iou_threshold 0 (disjoint boxes sit at the threshold) and -5's Soft-NMS below an
    iou_threshold of 1 (the reference still drops a box at IoU >= iou_threshold there)."""
    if version == 5 and sigma > 0:
        iou = 1.0
    rng = np.random.default_rng(seed)
    corners, scores = _nms_inputs(rng, 2, 3, 8)
    boxes = param("boxes", [2, 8, 4])
    s = param("scores", [2, 3, 8])
    build = opset5.non_max_suppression if version == 5 else opset9.non_max_suppression
    limits = [const(np.int64(limit)), const(np.float32(iou)), const(np.float32(score)), const(np.float32(sigma))]
    node = build(boxes, s, *limits, "center" if center else "corner", by_score, "i32")
    check_model(node.outputs(), [boxes, s], {"boxes": corners, "scores": scores})


@pytest.mark.parametrize("version", [5, 9])
def test_non_max_suppression_of_no_box_counts_zero(tmp_path, version):
    """max_output_boxes_per_class 0 selects nothing: no rows and a count of 0 (the CPU plugin
    2026.4.1 reports an uninitialised count there, so numpy is checked alone)."""
    boxes, s = param("boxes", [1, 3, 4]), param("scores", [1, 1, 3])
    build = opset5.non_max_suppression if version == 5 else opset9.non_max_suppression
    ov.save_model(ov.Model(build(boxes, s, const(np.int64(0))).outputs(), [boxes, s]), str(tmp_path / "nms.xml"))
    corners, scores = _nms_inputs(np.random.default_rng(0), 1, 1, 3)
    indices, chosen, count = IrGraph.read(tmp_path / "nms.xml").run({"boxes": corners, "scores": scores}).values()
    assert indices.shape == (0, 3) and chosen.shape == (0, 3) and count.tolist() == [0]


# ---------------------------------------------------------------------------------------------
# One-node ONNX models converted by ovpool: their IR on numpy, on the CPU plugin, and onnxruntime


def since_opsets(op_type: str) -> list[int]:
    """One opset per since-version of ``op_type`` in force somewhere in opsets 7-22."""
    versions = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op_type and s.domain == ""})
    return [max(since, 7) for since, following in zip(versions, versions[1:] + [23]) if following > 7 and since <= 22]


def onnx_case(
    op_type: str, opset: int, inputs: dict[str, np.ndarray], constants: dict[str, np.ndarray], attrs: dict, n_outputs: int = 1
):
    names = [*inputs, *constants]
    node = helper.make_node(op_type, [n if n else "" for n in names], [f"y{i}" for i in range(n_outputs)], **attrs)
    graph = helper.make_graph(
        [node],
        "case",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in inputs.items()],
        [onnx.ValueInfoProto(name=f"y{i}") for i in range(n_outputs)],
        [numpy_helper.from_array(v, n) for n, v in constants.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def check_converted(
    tmp_path: Path, model, feeds: dict[str, np.ndarray], with_onnxruntime: bool = True, onnxruntime_opset: int | None = None
) -> set[str]:
    """ovpool's IR of ``model`` runs on numpy and agrees with the CPU plugin at f32 and (unless
    told otherwise) with onnxruntime on the ONNX model (stamped ``onnxruntime_opset`` where
    onnxruntime lacks the version and the older one means the same). Returns the IR's layer types."""
    from ovpool.ov.from_onnx import onnx_to_ir

    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    xml = tmp_path / "m.xml"
    for suffix, data in onnx_to_ir(src).items():
        xml.with_suffix(suffix).write_bytes(data)
    got = check_ir(xml, feeds)
    if with_onnxruntime:
        if onnxruntime_opset is not None:
            model.opset_import[0].version = onnxruntime_opset
            onnx.save(model, str(src))
        want = onnxruntime.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, feeds)
        for i, (value, expected) in enumerate(zip(got, want)):
            assert_close(value, np.asarray(expected), f"onnxruntime output {i}")
    return set(re.findall(r'type="([A-Za-z]+)"', xml.read_text()))


onnxruntime = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("opset", since_opsets("RoiAlign"))
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_onnx_roi_align(tmp_path, opset, mode):
    """avg against onnxruntime too; max is the IR's meaning (OpenVINO's frontend writes ROIAlign's max,
    not the schema's: the converter's business), so numpy against the CPU plugin only."""
    rng = np.random.default_rng(opset)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    rois = np.float32([[0, 0, 3, 4], [1.5, 0.5, 5, 5.5], [2, 2, 2.5, 3]])
    attrs = {"output_height": 2, "output_width": 3, "sampling_ratio": 2, "spatial_scale": 0.5, "mode": mode}
    model = onnx_case("RoiAlign", opset, {"x": x}, {"rois": rois, "batch": np.int64([0, 1, 1])}, attrs)
    older = 16 if opset == 22 else None  # onnxruntime has no RoiAlign-22 (16 with bfloat16 added)
    assert "ROIAlign" in check_converted(tmp_path, model, {"x": x}, with_onnxruntime=mode == "avg", onnxruntime_opset=older)


@pytest.mark.parametrize("opset", since_opsets("OneHot"))
def test_onnx_one_hot(tmp_path, opset):
    """Negative indices from OneHot-11 (onnxruntime counts them from the end in OneHot-9 too)."""
    indices = np.int64([[0, 3, -1], [2, -4, 5]]) if opset >= 11 else np.int64([[0, 3, 1], [2, 4, 5]])
    model = onnx_case("OneHot", opset, {"i": indices}, {"depth": np.int64(4), "values": np.float32([-1, 2])}, {"axis": 1})
    assert "OneHot" in check_converted(tmp_path, model, {"i": indices})


@pytest.mark.parametrize("opset", since_opsets("NonMaxSuppression"))
@pytest.mark.parametrize("center", [0, 1])
def test_onnx_non_max_suppression(tmp_path, opset, center):
    boxes, scores = _nms_inputs(np.random.default_rng(opset + center), 2, 2, 6)
    limits = {"limit": np.int64(3), "iou": np.float32(0.3), "score": np.float32(0.1)}
    model = onnx_case("NonMaxSuppression", opset, {"boxes": boxes, "scores": scores}, limits, {"center_point_box": center})
    assert "NonMaxSuppression" in check_converted(tmp_path, model, {"boxes": boxes, "scores": scores})


@pytest.mark.parametrize("opset", since_opsets("CumSum"))
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 1)])
def test_onnx_cumsum(tmp_path, opset, exclusive, reverse):
    x = np.random.default_rng(8).standard_normal((3, 4)).astype(np.float32)
    model = onnx_case("CumSum", opset, {"x": x}, {"axis": np.int64(-1)}, {"exclusive": exclusive, "reverse": reverse})
    assert "CumSum" in check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("opset", since_opsets("GatherElements"))
def test_onnx_gather_elements(tmp_path, opset):
    x = np.random.default_rng(9).standard_normal((3, 4)).astype(np.float32)
    model = onnx_case("GatherElements", opset, {"x": x}, {"i": np.int64([[2, -1, 0, 1], [0, 0, -3, 2]])}, {"axis": 0})
    assert "GatherElements" in check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("opset", since_opsets("ScatterND"))
def test_onnx_scatter_nd(tmp_path, opset):
    x = np.random.default_rng(10).standard_normal((4, 3)).astype(np.float32)
    attrs = {"reduction": "add"} if opset >= 16 else {}
    constants = {"i": np.int64([[1], [3]]), "u": np.float32([[1, 2, 3], [4, 5, 6]])}
    assert "ScatterNDUpdate" in check_converted(tmp_path, onnx_case("ScatterND", opset, {"x": x}, constants, attrs), {"x": x})


@pytest.mark.parametrize("opset", since_opsets("ScatterElements"))
def test_onnx_scatter_elements(tmp_path, opset):
    x = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)
    attrs = {"axis": 1, **({"reduction": "mul"} if opset >= 16 else {})}
    constants = {"i": np.int64([[0, -1], [2, 2]]), "u": np.float32([[1.5, 2], [3, -4]])}
    if opset < 16:
        constants["i"] = np.int64([[0, -1], [2, 1]])
    model = onnx_case("ScatterElements", opset, {"x": x}, constants, attrs)
    assert "ScatterElementsUpdate" in check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("opset", since_opsets("Einsum"))
@pytest.mark.parametrize("equation", ["bij,bjk->bik", "ij->ji"])
def test_onnx_einsum(tmp_path, opset, equation):
    rng = np.random.default_rng(12)
    shapes = [[2, 3, 4], [2, 4, 2]] if "," in equation else [[3, 5]]
    feeds = {f"x{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    types = check_converted(tmp_path, onnx_case("Einsum", opset, feeds, {}, {"equation": equation}), feeds)
    assert types & {"Einsum", "MatMul", "Transpose"}


@pytest.mark.parametrize("opset", since_opsets("LRN"))
@pytest.mark.parametrize("size", [3, 5])
def test_onnx_lrn(tmp_path, opset, size):
    """Odd sizes: ONNX's window (c - (size - 1) // 2 .. c + ceil((size - 1) / 2)) is the IR's there."""
    x = np.random.default_rng(13).standard_normal((2, 7, 4, 4)).astype(np.float32)
    model = onnx_case("LRN", opset, {"x": x}, {}, {"size": size, "alpha": 0.001, "beta": 0.75, "bias": 1.0})
    assert "LRN" in check_converted(tmp_path, model, {"x": x})


# ---------------------------------------------------------------------------------------------
# A GoogLeNet-style model with LRN, converted with `ovpool convert`


@pytest.mark.parametrize("opset", [7, 13])
def test_lrn_model_converts_and_runs_on_numpy(tmp_path, capsys, opset):
    """``ovpool convert`` writes the model as IR with its two LRN layers; the IR on numpy agrees
    with the CPU plugin at f32 and with onnxruntime on the ONNX model (1e-5 of the largest value),
    on the probabilities and on the LRN outputs themselves; so does the ONNX model on the numpy
    executor."""
    from lrn_model import googlenet_style_lrn_model
    from runtime_support import invoke

    model = googlenet_style_lrn_model(opset)
    for name in ("norm1", "norm2"):  # the LRN outputs are model outputs too
        model.graph.output.append(onnx.ValueInfoProto(name=name))
    src, xml = tmp_path / "lrn_net.onnx", tmp_path / "lrn_net.xml"
    onnx.save(model, str(src))
    code, _, err = invoke(capsys, "convert", src, "-o", xml)
    assert code == 0, err
    assert xml.read_text().count('type="LRN"') == 2
    feeds = {"data": np.random.default_rng(14).uniform(0, 255, (1, 3, 64, 64)).astype(np.float32)}
    got = check_ir(xml, feeds)
    want = onnxruntime.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, feeds)
    source = list(GraphSession(model).run(feeds).values())  # the ONNX model on the numpy executor
    for i, (value, on_numpy, expected) in enumerate(zip(got, source, want)):
        assert_close(value, np.asarray(expected), f"onnxruntime output {i}")
        assert_close(np.asarray(on_numpy), np.asarray(expected), f"numpy executor against onnxruntime, output {i}")


def test_onnx_lrn_of_even_size_sums_the_odd_window(tmp_path):
    """ONNX LRN size 4 sums channels c-1 .. c+2 (its schema; onnxruntime refuses even sizes);
    OpenVINO's frontend writes LRN-1 size 4, which sums c-1 .. c+1 (the reference and the CPU
    plugin alike): the converted model computes size 3 with alpha scaled by 3/4 (docs/semantics.md)."""
    x = np.random.default_rng(15).uniform(0, 4, (1, 6, 2, 2)).astype(np.float32)
    model = onnx_case("LRN", 13, {"x": x}, {}, {"size": 4, "alpha": 0.4, "beta": 0.75, "bias": 1.0})
    check_converted(tmp_path, model, {"x": x}, with_onnxruntime=False)
    got = next(iter(IrGraph.read(tmp_path / "m.xml").run({"x": x}).values()))
    assert_close(got, lrn_by_the_spec(x, [1], 0.4 * 3 / 4, 0.75, 1.0, 3).astype(np.float32), "LRN-1 size 4 as size 3")
    schema = np.empty(x.shape, np.float64)  # ONNX: square_sum over c - 1 .. c + 2, alpha / size
    for c in range(6):
        total = sum(x[:, j].astype(np.float64) ** 2 for j in range(max(0, c - 1), min(6, c + 3)))
        schema[:, c] = x[:, c] / (1.0 + 0.4 / 4 * total) ** 0.75
    assert not np.allclose(got, schema, rtol=1e-3)


@pytest.mark.parametrize("python_division, want", [(True, [-4, 3, 3, -4]), (False, [-3, 3, 3, -3])])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_divide_by_m_pythondiv(tmp_path, python_division, want, dtype):
    """Divide-1 of integers: ``m_pythondiv="true"`` floors (-7 / 2 = -4), ``"false"`` truncates
    (-3), on numpy as the specification says. The CPU plugin 2026.4.1 truncates for both: it is
    compared where it agrees, and its -3 under ``true`` is asserted so that a plugin that starts
    flooring shows up here (and docs/semantics.md's line on it can go)."""
    a, b = param("a", [4], ov.Type(dtype)), param("b", [4], ov.Type(dtype))
    node = factory(1, "Divide", [a, b], {"m_pythondiv": python_division, "auto_broadcast": "numpy"})
    xml = tmp_path / "div.xml"
    ov.save_model(ov.Model([node], [a, b]), str(xml))
    assert f'm_pythondiv="{str(python_division).lower()}"' in xml.read_text()
    feeds = {"a": np.array([-7, 7, -7, 7], dtype), "b": np.array([2, 2, -2, -2], dtype)}
    assert next(iter(IrGraph.read(xml).run(feeds).values())).tolist() == want
    assert cpu(xml, feeds)[0].tolist() == [-3, 3, 3, -3]


def test_onnx_non_max_suppression_keeps_boxes_at_the_iou_threshold(tmp_path):
    """ONNX NonMaxSuppression and NonMaxSuppression-9 suppress a box whose IoU is above
    ``iou_threshold``: with threshold 0 two disjoint boxes (IoU 0) are both kept, on numpy and
    onnxruntime; the CPU plugin 2026.4.1 suppresses at IoU >= threshold and keeps one."""
    boxes = np.float32([[[0, 0, 1, 1], [2, 2, 3, 3], [0, 0, 1, 1.1]]])
    scores = np.float32([[[0.9, 0.8, 0.7]]])
    limits = {"limit": np.int64(5), "iou": np.float32(0.0)}
    model = onnx_case("NonMaxSuppression", 11, {"boxes": boxes, "scores": scores}, limits, {})
    src, xml = tmp_path / "m.onnx", tmp_path / "m.xml"
    onnx.save(model, str(src))
    from ovpool.ov.from_onnx import onnx_to_ir

    for suffix, data in onnx_to_ir(src).items():
        xml.with_suffix(suffix).write_bytes(data)
    feeds = {"boxes": boxes, "scores": scores}
    got = next(iter(IrGraph.read(xml).run(feeds).values()))
    want = onnxruntime.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.tolist() == want.tolist() == [[0, 0, 0], [0, 0, 1]]
    assert cpu(xml, feeds)[0].tolist() == [[0, 0, 0]]


@settings(max_examples=EXAMPLES)
@given(
    version=st.sampled_from([1, 3, 4]),
    center=st.booleans(),
    by_score=st.booleans(),
    limit=st.integers(1, 9),
    iou=st.sampled_from([0.3, 0.5, 0.9]),
    score=st.sampled_from([0.0, 0.2, 0.6]),
    batches=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_non_max_suppression_legacy(version, center, by_score, limit, iou, score, batches, seed):
    """NonMaxSuppression-1/3/4: one output with a static row count, -1 past the selected rows."""
    corners, scores = _nms_inputs(np.random.default_rng(seed), batches, 3, 8)
    boxes, s = param("boxes", [batches, 8, 4]), param("scores", [batches, 3, 8])
    attrs = {"box_encoding": "center" if center else "corner", "sort_result_descending": by_score}
    if version != 1:
        attrs["output_type"] = "i32"
    limits = [const(np.int64(limit)), const(np.float32(iou)), const(np.float32(score))]
    node = factory(version, "NonMaxSuppression", [boxes, s, *limits], attrs)
    rows = node.get_output_partial_shape(0)[0].get_length()  # the static row count OpenVINO declares
    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "m.xml"
        ov.save_model(ov.Model([node], [boxes, s]), str(xml))
        feeds = {"boxes": corners, "scores": scores}
        (got,) = IrGraph.read(xml).run(feeds).values()
        (want,) = cpu(xml, feeds)
    # The CPU plugin returns the selected rows only, however many: compared up to the row count
    assert got.shape == (rows, 3) and got.dtype == want.dtype
    n = min(rows, len(want))
    assert got[:n].tolist() == want[:n].tolist()
    assert (got[n:] == -1).all()


@pytest.mark.parametrize(
    "version, sigma, iou, want",
    [
        (9, 0.0, 0.0, [[0, 0, 0], [0, 0, 1]]),  # kept: IoU 0 is not above 0 (the plugin drops it)
        (5, 0.5, 0.1, [[0, 0, 0]]),  # Soft-NMS -5 still drops at IoU 1/7 >= 0.1 (the plugin keeps it)
    ],
)
def test_non_max_suppression_where_the_cpu_plugin_departs(tmp_path, version, sigma, iou, want):
    """NonMaxSuppression-9 drops a box whose IoU is above iou_threshold, never under Soft-NMS;
    NonMaxSuppression-5 (TensorFlow's NonMaxSuppressionV5) drops at IoU >= iou_threshold, Soft-NMS
    or not. The reference implementation and numpy say so; the CPU plugin 2026.4.1 drops at an IoU
    equal to -9's threshold and never drops under -5's Soft-NMS. Boxes [0, 0, 1, 1] and [2, 2, 3, 3]
    are disjoint (IoU 0), [0, 0, 1, 1] and [0, 0.75, 1, 1.75] overlap with IoU 1/7."""
    second = [2, 2, 3, 3] if iou == 0.0 else [0, 0.75, 1, 1.75]
    boxes, scores = np.float32([[[0, 0, 1, 1], second]]), np.float32([[[0.9, 0.8]]])
    b, s = param("boxes", [1, 2, 4]), param("scores", [1, 1, 2])
    build = opset5.non_max_suppression if version == 5 else opset9.non_max_suppression
    limits = [const(np.int64(5)), const(np.float32(iou)), const(np.float32(0)), const(np.float32(sigma))]
    ov.save_model(ov.Model(build(b, s, *limits).outputs(), [b, s]), str(tmp_path / "nms.xml"))
    feeds = {"boxes": boxes, "scores": scores}
    assert next(iter(IrGraph.read(tmp_path / "nms.xml").run(feeds).values())).tolist() == want
    assert cpu(tmp_path / "nms.xml", feeds)[0].tolist() != want


@pytest.mark.parametrize(
    "build, old, new, what",
    [
        (
            lambda x: opset9.roi_align(
                x, const(np.float32([[0, 0, 3, 3]])), const(np.int32([0])), 2, 2, 2, 1.0, "avg", "half_pixel"
            ),
            'aligned_mode="half_pixel"',
            'aligned_mode="quarter_pixel"',
            "attribute 'aligned_mode': 'quarter_pixel' is not one of",
        ),
        (
            lambda x: opset1.lrn(x, const(np.int64([1])), 1e-4, 0.75, 1.0, 3),
            'size="3"',
            'size="0"',
            "attribute 'size': 0 is below 1",
        ),
        (
            lambda x: opset12.scatter_elements_update(x, const(np.zeros((1, 2, 4, 4), np.int32)), x, const(np.int64(1)), "sum"),
            'reduction="sum"',
            'reduction="median"',
            "attribute 'reduction': 'median' is not one of",
        ),
        (
            lambda x: opset1.convert(
                opset16.one_hot(
                    const(np.int32([0, 1])), const(np.int32(3)), const(np.float32(1)), const(np.float32(0)), -1, "normalize"
                ),
                "f32",
            ),
            'negative_indices_mode="normalize"',
            'negative_indices_mode="wrap"',
            "attribute 'negative_indices_mode'",
        ),
    ],
    ids=["ROIAlign", "LRN", "ScatterElementsUpdate", "OneHot"],
)
def test_bad_attributes_are_one_line_errors_naming_the_layer(tmp_path, capsys, build, old, new, what):
    from runtime_support import invoke

    x = param("x", [1, 2, 4, 4])
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([build(x)], [x]), str(xml))
    xml.write_text(xml.read_text().replace(old, new, 1))
    code, out, err = invoke(capsys, "run", xml, "--random-inputs", "--device", "numpy")
    assert code == 1 and out == ""
    assert err.startswith(f"error: {xml}: layer '") and what in err and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------
# NonZero, Unique, GroupNormalization (what the frontend writes for NonZero, Compress, Unique,
# GroupNormalization)


@pytest.mark.parametrize("output_type", ["i64", "i32"])
def test_non_zero(output_type):
    x = param("x", [3, 4, 2])
    value = np.random.default_rng(16).integers(0, 3, (3, 4, 2)).astype(np.float32)
    check_model([opset3.non_zero(x, output_type)], [x], {"x": value})


@pytest.mark.parametrize("keep_sorted", [True, False])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("index_type", ["i64", "i32"])
def test_unique(keep_sorted, axis, index_type):
    x = param("x", [4, 3])
    value = np.float32([[2, 1, 2], [0, 5, 0], [2, 1, 2], [7, 5, 0]])
    node = opset10.unique(x, None if axis is None else const(np.int64(axis)), keep_sorted, index_type, "i32")
    check_model(node.outputs(), [x], {"x": value})


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_normalization(groups):
    rng = np.random.default_rng(17)
    x = param("x", [2, 4, 3, 3])
    scale, bias = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    node = opset12.group_normalization(x, const(scale), const(bias), groups, 1e-5)
    check_model([node], [x], {"x": rng.standard_normal((2, 4, 3, 3)).astype(np.float32)})


@pytest.mark.parametrize("opset", since_opsets("NonZero"))
def test_onnx_non_zero(tmp_path, opset):
    x = np.random.default_rng(18).integers(0, 2, (3, 4)).astype(np.float32)
    assert "NonZero" in check_converted(tmp_path, onnx_case("NonZero", opset, {"x": x}, {}, {}), {"x": x})


@pytest.mark.parametrize("opset", since_opsets("Compress"))
def test_onnx_compress(tmp_path, opset):
    x = np.random.default_rng(19).standard_normal((3, 4)).astype(np.float32)
    model = onnx_case("Compress", opset, {"x": x}, {"c": np.array([True, False, True, True])}, {"axis": 1})
    check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("opset", since_opsets("Unique"))
@pytest.mark.parametrize("keep_sorted", [0, 1])
def test_onnx_unique(tmp_path, opset, keep_sorted):
    x = np.float32([2, 1, 1, 3, 4, 3])
    model = onnx_case("Unique", opset, {"x": x}, {}, {"sorted": keep_sorted}, n_outputs=4)
    assert "Unique" in check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("opset", since_opsets("GroupNormalization"))
def test_onnx_group_normalization(tmp_path, opset):
    rng = np.random.default_rng(20)
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    n = 4 if opset >= 21 else 2  # scale and bias per channel from 21, per group before
    params = {"s": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32)}
    model = onnx_case("GroupNormalization", opset, {"x": x}, params, {"num_groups": 2, "epsilon": 1e-5})
    check_converted(tmp_path, model, {"x": x})


# ---------------------------------------------------------------------------------------------
# Older IRs' layers: ShuffleChannels, SpaceToBatch, BatchToSpace, Roll, Eye, Bitwise*, Bucketize


@pytest.mark.parametrize("axis, group", [(1, 2), (1, 3), (-1, 2), (2, 1)])
def test_shuffle_channels(axis, group):
    x = param("x", [2, 6, 3, 4])
    check_model([opset3.shuffle_channels(x, axis, group)], [x], {"x": np.arange(144, dtype=np.float32).reshape(2, 6, 3, 4)})


@pytest.mark.parametrize(
    "shape, block, begin, end",
    [([1, 2, 4, 6], [1, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0]), ([2, 1, 3, 5], [1, 1, 2, 2], [0, 0, 1, 0], [0, 0, 0, 1])],
)
def test_space_to_batch_and_back(shape, block, begin, end):
    x = param("x", shape)
    value = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    to_batch = opset2.space_to_batch(x, const(np.int64(block)), const(np.int64(begin)), const(np.int64(end)))
    back = opset2.batch_to_space(to_batch, const(np.int64(block)), const(np.int64(begin)), const(np.int64(end)))
    got = check_model([to_batch, back], [x], {"x": value})
    assert np.array_equal(got[1], value)


@pytest.mark.parametrize("shift, axes", [([1], [0]), ([2, -1], [1, -1]), ([3, -5], [0, 2]), ([7], [2])])
def test_roll(shift, axes):
    x = param("x", [3, 4, 5])
    check_model(
        [opset7.roll(x, const(np.int64(shift)), const(np.int64(axes)))],
        [x],
        {"x": np.arange(60, dtype=np.float32).reshape(3, 4, 5)},
    )


@pytest.mark.parametrize("rows, columns, diagonal, batch", [(3, 3, 0, None), (2, 4, 1, None), (4, 2, -1, [2]), (3, 3, 5, [2, 1])])
def test_eye(rows, columns, diagonal, batch):
    x = param("x", [1])
    args = [const(np.int64(rows)), const(np.int64(columns)), const(np.int64(diagonal))]
    node = opset9.eye(*args, "f32", None if batch is None else const(np.int64(batch)))
    check_model([opset1.add(node, x)], [x], {"x": np.zeros(1, np.float32)})


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_bitwise(name, dtype):
    rng = np.random.default_rng(21)
    a, b = param("a", [3, 4], ov.Type(dtype)), param("b", [4], ov.Type(dtype))
    feeds = {"a": rng.integers(-50 if dtype == np.int32 else 0, 2 if dtype == np.bool_ else 200, (3, 4)).astype(dtype)}
    feeds["b"] = rng.integers(0, 2 if dtype == np.bool_ else 100, 4).astype(dtype)
    check_model([getattr(opset13, name)(a, b), opset13.bitwise_not(a)], [a, b], feeds)


@pytest.mark.parametrize("right", [True, False])
def test_bucketize(right):
    x = param("x", [8])
    node = opset3.bucketize(x, const(np.float32([-1, 0, 0.5, 3])), "i32", right)
    check_model([node], [x], {"x": np.float32([-2, -1, -0.5, 0, 0.5, 1, 3, 4])})


# ---------------------------------------------------------------------------------------------
# Layers on the inputs the one-node suite found (rank 0, no elements, unsigned and integer types)


def reference(layer, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """OpenVINO's reference implementation of ``layer`` (its core ``evaluate``) on ``inputs``: the
    specification's meaning where the CPU plugin departs from it."""
    out = ov.Tensor(layer.get_output_element_type(0), layer.get_output_shape(0))
    assert layer.evaluate([out], [ov.Tensor(np.ascontiguousarray(v)) for v in inputs])
    return np.array(out.data)


def test_rank_0_hswish_and_prelu():
    """HSwish-4 of a 0-d 0.5 gives 0.2917; PReLU-1 with a [1] slope 0.01 of a 0-d -0.5 gives 0-d -0.005."""
    x = param("x", [])
    got = check_model([opset4.hswish(x), opset1.prelu(x, const(np.float32([0.01])))], [x], {"x": np.float32(-0.5)})
    assert got[1].shape == () and math.isclose(float(got[1]), -0.005, rel_tol=1e-6)
    check_model([opset4.hswish(x)], [x], {"x": np.float32(0.5)})


@pytest.mark.parametrize(
    "shape, pattern, special_zero",
    [
        ((0, 3), [0, -1], True),
        ((2, 0, 3), [0, -1], True),
        ((0, 6), [0, 2, -1], True),
        ((0, 0, 6), [0, -1], True),
        ((4, 0, 6), [0, 0, -1], True),
        ((0, 3, 4), [-1, 0], True),
        ((2, 0, 3), [-1, 6], True),
        ((0, 3), [0, -1], False),
        ((0, 5), [3, 0, -1], False),
    ],
)
def test_reshape_of_no_elements(shape, pattern, special_zero):
    """Reshape-1's -1 on an input of no elements, as OpenVINO infers it: (0, 3) to [0, -1] is (0, 3)."""
    x = param("x", shape)
    (got,) = check_model([opset1.reshape(x, const(np.int64(pattern)), special_zero)], [x], {"x": np.zeros(shape, np.float32)})
    assert 0 in got.shape


def test_const_of_no_elements(tmp_path):
    """OpenVINO saves a Const of no elements with size 1 (an ONNX Transpose of a 0-d value has an
    empty perm); numpy reads it as empty."""
    x = np.array(1.5, np.float32)
    xml_types = check_converted(tmp_path, onnx_case("Transpose", 13, {"x": x}, {}, {}), {"x": x})
    assert "Const" in xml_types and 'shape="0"' in (tmp_path / "m.xml").read_text()


@pytest.mark.parametrize(
    "dtype, element", [(np.uint32, ov.Type.u32), (np.uint64, ov.Type.u64), (np.uint8, ov.Type.u8), (np.uint16, ov.Type.u16)]
)
def test_power_of_unsigned_integers(dtype, element):
    """Power-1 of unsigned integers: against the CPU plugin within range; past it against the
    reference for u32 and u64 (in double, then converted: u32 2 ** 32 is 0 where the plugin gives
    2147483648) and against the plugin for u8 and u16, which the reference does not run (2 ** 8
    saturates to 255, 3 ** 40 is 0)."""
    a, b = param("a", [4], element), param("b", [4], element)
    layer = opset1.power(a, b)
    small = {"a": np.array([2, 3, 0, 5], dtype), "b": np.array([7, 4, 3, 0], dtype)}
    check_model([layer], [a, b], small)
    big = {"a": np.array([2, 2, 3, 3], dtype), "b": np.array([31, 32, 21, 40], dtype)}
    if dtype in (np.uint8, np.uint16):
        check_model([layer], [a, b], big)
        return
    got = list(_numpy_of([layer], [a, b], big))
    np.testing.assert_array_equal(got[0], reference(layer, list(big.values())))


def test_log_of_integers():
    """Log-1 of integers converts the logarithm toward zero by the reference: 1, 2, 20, 100 give
    0, 0, 2, 4 (the CPU plugin rounds: docs/semantics.md)."""
    x = param("x", [4], ov.Type.i32)
    layer = opset1.log(x)
    feeds = {"x": np.int32([1, 2, 20, 100])}
    (got,) = _numpy_of([layer], [x], feeds)
    np.testing.assert_array_equal(got, reference(layer, [feeds["x"]]))
    assert got.tolist() == [0, 0, 2, 4]


@pytest.mark.parametrize("element", [ov.Type.i32, ov.Type.i8, ov.Type.u8, ov.Type.i16, ov.Type.i64])
def test_convert_of_floats_out_of_range(element):
    """Convert-1 of infinities, NaN and values past the target's range as the reference gives them
    (inf -> -2147483648 in i32, 0 in u8; 300.5 -> 44 in u8), and as the CPU plugin does but in i64,
    which it computes in i32."""
    x = param("x", [8])
    layer = opset1.convert(x, element)
    values = np.float32([np.inf, -np.inf, np.nan, 3e9, -3e9, 300.5, 2.0**31, -7.9])
    (got,) = _numpy_of([layer], [x], {"x": values})
    np.testing.assert_array_equal(got, reference(layer, [values]))
    if element != ov.Type.i64:
        check_model([layer], [x], {"x": values})


@pytest.mark.parametrize("source", [ov.Type.f32, ov.Type.f64])
@pytest.mark.parametrize("element", [ov.Type.u64, ov.Type.u32, ov.Type.i64, ov.Type.i32, ov.Type.u16, ov.Type.i8, ov.Type.u8])
def test_convert_of_floats_in_range(source, element):
    """Convert-1 of floats all inside int32 (int64 for i64, u32 and u64), as the reference gives
    them: numpy's own cast, no NaN or bound to look after (-2.5 -> -2; 300.5 -> 44 in u8;
    -2147483648 -> 2147483648 in u32)."""
    x = param("x", [8], source)
    layer = opset1.convert(x, element)
    values = np.array([-2.5, 2.5, -0.0, 300.5, 2.0**31 - 128, -(2.0**31), 1e9, -7.9], source.to_dtype())
    (got,) = _numpy_of([layer], [x], {"x": values})
    np.testing.assert_array_equal(got, reference(layer, [values]))
    assert got.dtype == reference(layer, [values]).dtype


@pytest.mark.parametrize("element", [ov.Type.u64, ov.Type.u32, ov.Type.i64, ov.Type.i32, ov.Type.u16])
def test_convert_of_doubles_out_of_range(element):
    """Convert-1 of f64 past the target's range as the reference gives it: u64 keeps [2**63, 2**64)
    (1.5e19 stays) and gives 0 for inf; u32 takes the low bits of the int64 (5e18 -> 1156841472)."""
    x = param("x", [11], ov.Type.f64)
    layer = opset1.convert(x, element)
    values = np.array([np.inf, -np.inf, np.nan, 3e9, -3e9, 300.5, 2.0**31, 5e18, 1.5e19, 2.0**64, -1.0])
    (got,) = _numpy_of([layer], [x], {"x": values})
    np.testing.assert_array_equal(got, reference(layer, [values]))


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
def test_onnx_bidirectional_sequence_activations(tmp_path, op_type):
    """The frontend writes ONNX's per-direction activations list into the *Sequence layer (Relu,
    Relu for a bidirectional RNN); OpenVINO reads one function per gate kind, the same both ways."""
    gates, functions = {"RNN": (1, ["Relu"]), "GRU": (3, ["Sigmoid", "Relu"]), "LSTM": (4, ["Sigmoid", "Relu", "Tanh"])}[op_type]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    w = (rng.standard_normal((2, gates * 5, 4)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((2, gates * 5, 5)) * 0.5).astype(np.float32)
    attrs = {"hidden_size": 5, "direction": "bidirectional", "activations": functions * 2}
    model = onnx_case(op_type, 14, {"x": x}, {"w": w, "r": r}, attrs, n_outputs=2)
    assert f"{op_type}Sequence" in check_converted(tmp_path, model, {"x": x})


@pytest.mark.parametrize("value", [False, True])
def test_non_zero_of_rank_0(value):
    """NonZero-3 of a 0-d value counts it as shape [1]: true gives [[0]], false an empty [1, 0]."""
    x = param("x", [], ov.Type.boolean)
    (got,) = check_model([opset3.non_zero(x, "i64")], [x], {"x": np.array(value)})
    assert got.shape == (1, int(value))


def test_is_inf_of_float16():
    x = param("x", [5], ov.Type.f16)
    feeds = {"x": np.float16([np.inf, -np.inf, np.nan, 65504, -1])}
    check_model([opset10.is_inf(x, {"detect_negative": False}), opset10.is_inf(x)], [x], feeds)


def _numpy_of(outputs: Sequence, params: Sequence, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "m.xml"
        ov.save_model(ov.Model(list(outputs), list(params)), str(xml), compress_to_fp16=False)
        return list(IrGraph.read(xml).run(feeds).values())

"""GridSample (16, 20, 22) against onnxruntime at every since-version, against the schema computed
here in loops (``schema_grid_sample``) where onnxruntime cannot run the case, and ONNX's own node
test cases; AffineGrid-20 against onnxruntime, its schema function body run on onnxruntime, and its
node cases (the ``_expanded`` ones too).

onnxruntime 1.31.1 runs 4-D and 5-D float32 inputs (float64 from GridSample-20) with X and grid of
one type, and no cubic in 5-D; a single pixel with ``align_corners=1`` and ``reflection`` makes it divide by zero and
read outside the image. Those cases (rank 3, 5-D cubic, float16, bfloat16, integer X, mixed types,
single-pixel reflection, NaN positions) are held to the loop below, which is written from the
schema text and shares no code with ovpool: per output element, per spatial axis, the pixel
coordinate, the pixels read, each padded as the text says, and the weighted sum.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from bodies import expanded, expanded_case_params
from harness import (
    assert_node_error,
    check,
    check_node_case,
    drawn_rng,
    examples,
    feeds_of,
    make_model,
    node_case_params,
    ort_of,
    ovpool_of,
    run_ort,
    since_opsets,
)
from hypothesis import given
from hypothesis import strategies as st

from ovpool.dtypes import np_dtype

VERSIONS = since_opsets("GridSample")  # [16, 20, 22]
PADDINGS = ("zeros", "border", "reflection")


def modes(opset: int) -> tuple[str, str, str]:
    """The mode names of the version in force: (linear, nearest, cubic)."""
    return ("bilinear", "nearest", "bicubic") if opset < 20 else ("linear", "nearest", "cubic")


# --- the schema, element by element ----------------------------------------------------------------


def _keys_weight(distance: float) -> float:
    """Keys' cubic convolution kernel at ``distance`` with a = -0.75."""
    a, d = -0.75, abs(distance)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    if d < 2:
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
    return 0.0


def _pixel(length: int, i: int, padding: str, align_corners: bool) -> int | None:
    """The pixel index read for index ``i`` of an axis of ``length`` pixels, None for a zero. Reflection
    mirrors at the image's edge (-0.5 and length - 0.5, or the end pixels' centres with
    align_corners) again and again until the index is inside."""
    if 0 <= i < length:
        return i
    if padding == "zeros":
        return None
    if padding == "border":
        return min(max(i, 0), length - 1)
    low, high = (0.0, length - 1.0) if align_corners else (-0.5, length - 0.5)
    if high == low:
        return 0
    position = float(i)
    while not low <= position <= high:
        position = 2 * low - position if position < low else 2 * high - position
    return int(position)


def schema_grid_sample(x: np.ndarray, grid: np.ndarray, mode: str, padding: str, align_corners: int) -> np.ndarray:
    """GridSample from the schema text, one output element at a time (tiny inputs only). Coordinates
    in float32 (float64 for a float64 grid), sums in float64."""
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    r = x.ndim - 2
    spatial = x.shape[2:]
    ctype = np.float64 if grid.dtype == np.float64 else np.float32
    floating = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    y = np.zeros((x.shape[0], x.shape[1], *grid.shape[1:-1]), np.float64 if floating else x.dtype)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        image = x[n, c].astype(np.float64) if floating else x[n, c]
        for out in itertools.product(*(range(d) for d in grid.shape[1:-1])):
            g = grid[(n, *out)].astype(ctype)
            if not np.all(np.isfinite(g)):
                y[(n, c, *out)] = math.nan if floating else 0
                continue
            taps_per_axis = []
            for axis in range(r):
                length = spatial[axis]
                v = g[r - 1 - axis]  # grid lists the innermost axis first
                if align_corners:
                    coordinate = (v + ctype(1)) / ctype(2) * ctype(length - 1)
                else:
                    coordinate = ((v + ctype(1)) * ctype(length) - ctype(1)) / ctype(2)
                base = math.floor(coordinate)
                t = float(coordinate) - base
                if mode == "nearest":
                    taps = [(int(np.rint(coordinate)), 1.0)]
                elif mode == "linear":
                    taps = [(base, 1 - t), (base + 1, t)]
                else:
                    taps = [(base + k, _keys_weight(t - k)) for k in (-1, 0, 1, 2)]
                taps_per_axis.append([(_pixel(length, i, padding, bool(align_corners)), w) for i, w in taps])
            total: Any = 0.0
            for combo in itertools.product(*taps_per_axis):
                indices = [i for i, _ in combo]
                weight = math.prod(w for _, w in combo)
                value = 0 if None in indices else image[tuple(indices)]
                if mode == "nearest":
                    total = value
                else:
                    total += weight * float(value)
            y[(n, c, *out)] = total
    return y.astype(x.dtype)


# --- drawn cases -----------------------------------------------------------------------------------


def _grid(draw: st.DrawFn, rng: np.random.Generator, shape: tuple[int, ...], spatial: tuple[int, ...], align: int) -> np.ndarray:
    """Normalized positions: uniform over [-1.3, 1.3], exactly on pixel centres, edges and ties
    (half-pixel steps), or far outside the image (beyond +-3)."""
    r = len(spatial)
    kind = draw(st.sampled_from(["uniform", "lattice", "far", "mixed"]))
    grid = rng.uniform(-1.3, 1.3, (*shape, r))
    if kind in ("lattice", "mixed"):
        lattice = np.empty((*shape, r))
        for k in range(r):
            length = spatial[r - 1 - k]
            pixel = rng.integers(-2 * length - 3, 4 * length + 3, shape) / 2.0  # half-pixel steps
            if align:
                lattice[..., k] = -1.0 if length == 1 else pixel * 2.0 / (length - 1) - 1.0
            else:
                lattice[..., k] = (2.0 * pixel + 1.0) / length - 1.0
        grid = lattice if kind == "lattice" else np.where(rng.random((*shape, r)) < 0.5, lattice, grid)
    if kind == "far":
        grid = rng.uniform(3, 9, (*shape, r)) * rng.choice([-1.0, 1.0], (*shape, r))
    return grid


@st.composite
def cases(draw: st.DrawFn, opset: int, ranks: tuple[int, ...] = (4, 5), dtype: Any = np.float32) -> dict[str, Any]:
    rank = draw(st.sampled_from(ranks))
    linear, nearest, cubic = modes(opset)
    mode = draw(st.sampled_from([linear, nearest] + ([cubic] if rank == 4 else [])))
    padding = draw(st.sampled_from(PADDINGS))
    align = draw(st.integers(0, 1))
    rng = drawn_rng(draw)
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    spatial = tuple(draw(st.integers(1, 5)) for _ in range(rank - 2))
    out = tuple(draw(st.integers(1, 4)) for _ in range(rank - 2))
    x = rng.standard_normal((n, c, *spatial)).astype(dtype)
    grid = _grid(draw, rng, (n, *out), spatial, align).astype(dtype)
    return {"x": x, "grid": grid, "attrs": {"mode": mode, "padding_mode": padding, "align_corners": align}}


def _onnxruntime_runs(case: dict[str, Any]) -> bool:
    """Whether onnxruntime computes the case as the schema says: not one pixel with align_corners
    and reflection, where it divides by zero and reads outside the image."""
    attrs = case["attrs"]
    single = 1 in case["x"].shape[2:]
    return not (single and attrs["align_corners"] and attrs["padding_mode"] == "reflection")


@pytest.mark.parametrize(
    ("opset", "dtype"), [(16, np.float32), (20, np.float32), (20, np.float64), (22, np.float32), (22, np.float64)]
)
@examples(15)
@given(data=st.data())
def test_matches_onnxruntime(opset: int, dtype: Any, data: st.DataObject) -> None:
    case = data.draw(cases(opset, (4,) if opset < 20 else (4, 5), dtype))
    if not _onnxruntime_runs(case):
        case["x"] = np.concatenate([case["x"]] * 2, axis=-1)  # two pixels wide: no single-pixel axis there
        case["x"] = np.concatenate([case["x"]] * 2, axis=-2)
        if 1 in case["x"].shape[2:]:
            case["attrs"]["padding_mode"] = "border"
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    check("GridSample", opset, [case["x"], case["grid"]], case["attrs"], rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("opset", VERSIONS)
@examples(10)
@given(data=st.data())
def test_schema_loop_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    """The loop oracle itself agrees with onnxruntime where onnxruntime follows the schema."""
    from harness import ort_of

    case = data.draw(cases(opset, (4,) if opset < 20 else (4, 5)))
    if not _onnxruntime_runs(case):
        return
    expected = ort_of("GridSample", opset, [case["x"], case["grid"]], case["attrs"])[0]
    np.testing.assert_allclose(schema_grid_sample(case["x"], case["grid"], **_loop_args(case)), expected, rtol=1e-5, atol=1e-5)


def _loop_args(case: dict[str, Any]) -> dict[str, Any]:
    attrs = case["attrs"]
    return {"mode": attrs["mode"], "padding": attrs["padding_mode"], "align_corners": attrs["align_corners"]}


def _assert_schema(opset: int, case: dict[str, Any], rtol: float = 1e-5, atol: float = 1e-5) -> None:
    actual = ovpool_of("GridSample", opset, [case["x"], case["grid"]], case["attrs"])[0]
    expected = schema_grid_sample(case["x"], case["grid"], **_loop_args(case))
    assert actual.dtype == case["x"].dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("opset", [20, 22])
@examples(15)
@given(data=st.data())
def test_ranks_onnxruntime_refuses_match_the_schema(opset: int, data: st.DataObject) -> None:
    """Rank 3 (one spatial axis), 5-D cubic (N-cubic: the schema allows it) and rank 6."""
    rank = data.draw(st.sampled_from([3, 5, 6]))
    case = data.draw(cases(opset, (rank,)))
    if rank == 5:
        case["attrs"]["mode"] = "cubic"
    _assert_schema(opset, case)


@pytest.mark.parametrize("opset", VERSIONS)
@examples(10)
@given(data=st.data())
def test_single_pixel_reflection_matches_the_schema(opset: int, data: st.DataObject) -> None:
    """One pixel, align_corners=1, reflection: every index reads that pixel."""
    case = data.draw(cases(opset, (4,)))
    case["x"] = case["x"][:, :, :1, :]
    case["attrs"].update(padding_mode="reflection", align_corners=1)
    _assert_schema(opset, case)


@pytest.mark.parametrize(("opset", "dtype"), [(16, np.float16), (20, np.float16), (22, "bfloat16")])
@examples(8)
@given(data=st.data())
def test_half_precision_matches_the_schema(opset: int, dtype: Any, data: st.DataObject) -> None:
    """float16 (and bfloat16 from 22), which onnxruntime has no kernel for: computed wide, rounded once."""
    import ml_dtypes

    wanted = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    case = data.draw(cases(opset, (4,)))
    case["x"], case["grid"] = case["x"].astype(wanted), case["grid"].astype(wanted)
    _assert_schema(opset, case, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("opset", VERSIONS)
@examples(8)
@given(data=st.data())
def test_other_types_match_the_schema(opset: int, data: st.DataObject) -> None:
    """float64 (which onnxruntime runs from GridSample-20 only), X and grid of different float types
    (T1 and T2 are separate), integer and boolean X with nearest."""
    case = data.draw(cases(opset, (4,)))
    pick = data.draw(st.sampled_from(["f64", "f64 X, f32 grid", "int32", "uint8", "bool", "int64"]))
    if pick.startswith("f64"):
        case["x"] = case["x"].astype(np.float64)
        case["grid"] = case["grid"].astype(np.float64 if pick == "f64" else np.float32)
    else:
        scaled = np.round(case["x"] * 50)
        case["x"] = (scaled > 0) if pick == "bool" else np.abs(scaled).astype(pick)
        case["attrs"]["mode"] = "nearest"
    _assert_schema(opset, case, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("opset", VERSIONS)
def test_non_finite_positions_give_nan(opset: int) -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.0], [0.0, -np.inf], [0.0, 0.0]]]], np.float32)
    for mode in modes(opset):
        for padding in PADDINGS:
            y = ovpool_of("GridSample", opset, [x, grid], {"mode": mode, "padding_mode": padding})[0]
            assert np.isnan(y[0, 0, 0, :3]).all() and np.isfinite(y[0, 0, 0, 3])


@pytest.mark.parametrize("padding", PADDINGS)
def test_far_positions(padding: str) -> None:
    """Positions 1e30 pixels away: zeros reads 0, border the end pixel, reflection some pixel; no
    overflow, no warning."""
    x = np.array([[[[10.0, 20.0, 40.0]]]], np.float32)
    grid = np.array([[[[-1e30, 0.0], [1e30, 0.0], [3e9, 0.0]]]], np.float32)
    for mode in modes(20):
        y = ovpool_of("GridSample", 20, [x, grid], {"mode": mode, "padding_mode": padding})[0].reshape(-1)
        if padding == "zeros":
            assert y.tolist() == [0.0, 0.0, 0.0]
        elif padding == "border":
            assert np.allclose(y, [10.0, 40.0, 40.0])
        else:
            assert np.isfinite(y).all() and np.all((y >= 10.0 - 5) & (y <= 40.0 + 5))


# --- worked numbers --------------------------------------------------------------------------------


def test_documented_numbers() -> None:
    """The module docstring's: [10, 20] at g = 0 (pixel 0.5); reflection of indices on 3 pixels."""
    from ovpool.engine.ops.gridsample import reflected

    x = np.array([[[[10.0, 20.0]]]], np.float32)
    grid = np.zeros((1, 1, 1, 2), np.float32)
    for mode, expected in (("linear", 15.0), ("nearest", 10.0), ("cubic", 15.0)):
        assert ovpool_of("GridSample", 20, [x, grid], {"mode": mode, "padding_mode": "border"})[0].item() == expected
    assert reflected(np.array([-1, 3, 4, 7]), 3, False).tolist() == [0, 2, 1, 1]
    assert reflected(np.array([-1, 3, 5]), 3, True).tolist() == [1, 1, 1]


def test_nearest_ties_round_to_even() -> None:
    """Pixel coordinates 0.5, 1.5, 2.5 read pixels 0, 2, 2 (4 pixels, align_corners=0: g = (2p + 1)/4 - 1)."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    pixels = np.array([0.5, 1.5, 2.5])
    grid = np.stack([(2 * pixels + 1) / 4 - 1, np.zeros(3)], axis=-1).reshape(1, 1, 3, 2).astype(np.float32)
    y = check("GridSample", 20, [x, grid], {"mode": "nearest"})[0]
    assert y.reshape(-1).tolist() == [0.0, 2.0, 2.0]


# --- errors ----------------------------------------------------------------------------------------

X4 = np.zeros((1, 1, 2, 2), np.float32)
G4 = np.zeros((1, 1, 1, 2), np.float32)


@pytest.mark.parametrize(
    ("opset", "inputs", "attrs", "match"),
    [
        (16, [X4, G4], {"mode": "linear"}, "attribute 'mode': 'linear' is not one of bilinear"),
        (20, [X4, G4], {"mode": "bilinear"}, "attribute 'mode': 'bilinear' is not one of linear"),
        (22, [X4, G4], {"padding_mode": "wrap"}, "attribute 'padding_mode'"),
        (20, [X4, G4], {"align_corners": 2}, "attribute 'align_corners': 2 is neither 0 nor 1"),
        (16, [np.zeros((1, 1, 2, 2, 2), np.float32), np.zeros((1, 1, 1, 1, 3), np.float32)], {}, "4-D inputs only"),
        (20, [X4, np.zeros((1, 1, 1, 3), np.float32)], {}, "does not fit X"),
        (20, [X4, np.zeros((2, 1, 1, 2), np.float32)], {}, "does not fit X"),
        (20, [X4.astype(np.int32), G4], {}, "mode linear needs a float X"),
        (20, [np.zeros((1, 1, 0, 2), np.float32), G4], {"padding_mode": "border"}, "no pixel to read"),
    ],
)
def test_bad_node_is_a_model_error(opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("GridSample", opset, inputs, attrs, match=f"gridsample_node.*{match}")


def test_output_over_the_memory_budget_names_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    from ovpool.memory import MEMORY_ENV, MemoryBudgetError

    monkeypatch.setenv(MEMORY_ENV, "1K")
    grid = np.zeros((1, 20, 20, 2), np.float32)
    with pytest.raises(MemoryBudgetError, match=r"node 'gridsample_node' \(GridSample-20\): output \[1, 1, 20, 20\] float32"):
        ovpool_of("GridSample", 20, [X4, grid])


def test_empty_image_with_zeros_reads_zeros() -> None:
    y = ovpool_of("GridSample", 20, [np.zeros((1, 2, 0, 3), np.float32), np.zeros((1, 2, 2, 2), np.float32)])[0]
    assert y.shape == (1, 2, 2, 2) and not y.any()


@pytest.mark.parametrize("case", node_case_params(["GridSample"]))
def test_onnx_node_cases(case: Any) -> None:
    # the expected values of test_gridsample_bicubic are written to 4 decimals
    check_node_case(case, rtol=1e-4, atol=1e-4)


# --- AffineGrid-20 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", node_case_params(["AffineGrid"]) + expanded_case_params(["AffineGrid"]))
def test_affine_grid_node_cases(case: Any) -> None:
    """The node cases, and the function body's ops on ovpool (the ``_expanded`` cases)."""
    check_node_case(case, rtol=1e-6, atol=1e-6)


def _theta(rng: np.random.Generator, n: int, r: int, dtype: Any) -> np.ndarray:
    return rng.standard_normal((n, r, r + 1)).astype(dtype)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [[2, 1, 3, 4], [3, 2, 5, 2], [1, 1, 2, 2], [2, 1, 2, 3, 4], [1, 3, 4, 2, 3], [2, 1, 3, 1, 2]])
def test_affine_grid_against_onnxruntime(align: int, dtype: Any, size: list[int]) -> None:
    """onnxruntime's kernel (its positions from float32 linspace, ovpool's in theta's type); axes of
    one pixel with align_corners=1 are left to the body test (onnxruntime's kernel puts them at 1)."""
    if align and 1 in size[2:]:
        pytest.skip("one pixel with align_corners=1: the body's -1 (depth) or NaN, onnxruntime's 1")
    theta = _theta(np.random.default_rng(sum(size)), size[0], len(size) - 2, dtype)
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-7, "atol": 1e-7}
    check("AffineGrid", 20, [theta, np.array(size, np.int64)], {"align_corners": align}, **tol)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize(
    "size", [[2, 1, 3, 4], [2, 1, 1, 5], [3, 2, 4, 1], [2, 1, 1, 1], [1, 1, 2, 3, 4], [2, 2, 1, 3, 2], [1, 1, 3, 1, 1]]
)
def test_affine_grid_is_its_function_body(align: int, dtype: Any, size: list[int]) -> None:
    """The schema's function body run on onnxruntime, one pixel per axis included (-1 on the depth axis
    and NaN on the others with align_corners=1), float16 too: within a step of the type (the body's
    MatMul rounds its sums in the type, ovpool once). The body fails for N = 1 in 2-D (its Squeeze
    without axes drops the batch axis too), so the 2-D sizes have N >= 2."""
    theta = _theta(np.random.default_rng(len(size) + size[-1]), size[0], len(size) - 2, dtype)
    inputs = [theta, np.array(size, np.int64)]
    model = make_model("AffineGrid", 20, inputs, {"align_corners": align})
    (body,) = run_ort(expanded(model), feeds_of(model, inputs))
    (ours,) = ovpool_of("AffineGrid", 20, inputs, {"align_corners": align})
    assert ours.dtype == body.dtype and ours.shape == body.shape
    step = {np.float16: 2.0**-10, np.float32: 2.0**-23, np.float64: 2.0**-52}[dtype]
    np.testing.assert_allclose(ours.astype(np.float64), body.astype(np.float64), rtol=4 * step, atol=4 * step)


def test_affine_grid_positions() -> None:
    """Identity theta: the pixel centres (align_corners=0) or the corner pixels at -1 and 1 (1)."""
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    (centres,) = ovpool_of("AffineGrid", 20, [theta, np.array([1, 1, 2, 4], np.int64)])
    np.testing.assert_array_equal(centres[0, 0, :, 0], [-0.75, -0.25, 0.25, 0.75])
    np.testing.assert_array_equal(centres[0, :, 0, 1], [-0.5, 0.5])
    (corners,) = ovpool_of("AffineGrid", 20, [theta, np.array([1, 1, 2, 4], np.int64)], {"align_corners": 1})
    # -1 + i * (2 / 3), each operation in float32 as the body computes: -0.3333333, 0.33333337
    np.testing.assert_array_equal(corners[0, 0, :, 0], np.array([-1, -0.3333333, 0.33333337, 1], np.float32))
    np.testing.assert_array_equal(corners[0, :, 0, 1], [-1, 1])


def test_affine_grid_bfloat16() -> None:
    """bfloat16 (onnxruntime has none): theta and positions bfloat16 holds exactly, so the value is
    onnxruntime's float64 grid rounded once (within half a step: its float32 positions leave 1e-16
    where the grid is 0)."""
    bf16 = np_dtype("bfloat16")
    theta = (np.round(_theta(np.random.default_rng(1), 2, 3, np.float64) * 8) / 8).astype(bf16)
    size = np.array([2, 1, 2, 4, 8], np.int64)
    (ours,) = ovpool_of("AffineGrid", 20, [theta, size])
    (wide,) = ort_of("AffineGrid", 20, [theta.astype(np.float64), size])
    assert ours.dtype == bf16
    np.testing.assert_allclose(ours.astype(np.float64), wide, rtol=2.0**-9, atol=1e-12)


@pytest.mark.parametrize(
    ("inputs", "attrs", "match"),
    [
        ([np.zeros((1, 2, 3), np.float32), np.array([1, 1, 2, 2])], {"align_corners": 2}, "attribute 'align_corners'"),
        ([np.zeros((1, 2, 3), np.float32), np.array([1, 1, 2])], {}, "input 'size' has shape \\[3\\]"),
        ([np.zeros((1, 2, 3), np.float32), np.array([1, 1, 2, 2, 2])], {}, "'theta' has shape \\[1, 2, 3\\]; size"),
        ([np.zeros((2, 2, 3), np.float32), np.array([1, 1, 2, 2])], {}, "'theta' has shape \\[2, 2, 3\\]"),
        ([np.zeros((1, 2, 3), np.float32), np.array([1, 1, -2, 2])], {}, "sizes cannot be negative"),
        ([np.zeros((1, 2, 3), np.float32), np.array([1, 1, 2, 2], np.int32)], {}, "input 1 has type int32"),
        ([np.zeros((1, 2, 3), np.int64), np.array([1, 1, 2, 2])], {}, "input 0 has type int64"),
    ],
)
def test_affine_grid_refusals(inputs: list[Any], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("AffineGrid", 20, inputs, attrs, match=f"affinegrid_node.*{match}")

"""Resize (10, 11, 13, 18, 19) and Upsample (7, 9, 10) against onnxruntime and against the schema.

onnxruntime 1.31.1 is the oracle where it follows the schema. It takes shortcuts the schema does not
allow; those cases are checked against ``schema_resize`` below instead, a loop over output elements
written from the schema's formulas (tiny inputs only):

- an output of the input's shape is the input unchanged (asymmetric at scale 1.3 on 2 elements
  reads 0 and 0.77, not 0 and 1);
- nearest leaves an axis of scale 1 alone (tf_half_pixel_for_nn with round_prefer_ceil reads
  element x+1 there, tf_crop_and_resize reads the roi);
- antialias leaves an axis whose length does not change alone and never extrapolates;
- tf_crop_and_resize with scales sizes the output floor(in * scale), without the roi extent;
- half_pixel_symmetric sums its terms in another float32 order, so a coordinate that is an
  integer in exact arithmetic can come out an ulp below it (3 elements to 1: 0.99999994, the floor
  reads element 0; ovpool and the schema loop get 1.0 and read element 1);
- keep_aspect_ratio_policy not_larger/not_smaller leaves negative ``axes`` out (axes (-2, -1)
  of a (1, 1, 2, 1) input to sizes (1, 1), not_larger, gives (1, 1, 2, 1), not (1, 1, 1, 1));
- linear and cubic run on 2-D and 4-D inputs (N, C unscaled) only, linear on 3-D/5-D too; there is
  no float64 kernel and no cubic on integers.

Both compute sizes and coordinates in float32, the type of ``scales``: floor(3 * float32(7/3)) is 7.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from harness import check, feeds_of, make_model, ovpool_of, run_ort, run_ovpool, since_opsets
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ovpool.engine.ops.base import OpNode, lookup
from ovpool.errors import ModelError
from ovpool.memory import MemoryBudgetError

F = np.float32
RESIZE = since_opsets("Resize")
UPSAMPLE = since_opsets("Upsample")
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
SCALES = (0.3, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)


def examples(n: int) -> int:
    """``n`` under the ci profile; a deep profile (HYPOTHESIS_PROFILE=deep) runs its own count."""
    loaded = settings().max_examples
    return loaded if loaded > 100 else n


# --- the schema, element by element ---------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One Resize node: attributes (None: left to the default) and the scales/sizes/roi inputs."""

    mode: str = "nearest"
    transform: str | None = None
    nearest_mode: str | None = None  # "simple": Resize-10/Upsample rounding (with transform asymmetric)
    cubic_a: float | None = None
    exclude_outside: int | None = None
    extrapolation: float | None = None
    antialias: int | None = None
    axes: tuple[int, ...] | None = None
    policy: str | None = None
    scales: tuple[float, ...] | None = None
    sizes: tuple[int, ...] | None = None
    roi: tuple[float, ...] | None = None

    def attrs(self) -> dict[str, Any]:
        simple = self.nearest_mode == "simple"  # Resize-10/Upsample: asymmetric, no attribute says so
        names = {
            "mode": self.mode,
            "coordinate_transformation_mode": None if simple else self.transform,
            "nearest_mode": None if self.nearest_mode == "simple" else self.nearest_mode,
            "cubic_coeff_a": self.cubic_a,
            "exclude_outside": self.exclude_outside,
            "extrapolation_value": self.extrapolation,
            "antialias": self.antialias,
            "axes": None if self.axes is None else list(self.axes),
            "keep_aspect_ratio_policy": self.policy,
        }
        return {k: v for k, v in names.items() if v is not None}

    def inputs(self, x: np.ndarray, opset: int) -> list[np.ndarray | None]:
        scales = None if self.scales is None else np.array(self.scales, F)
        if opset < 11:
            return [x, scales]
        sizes = None if self.sizes is None else np.array(self.sizes, np.int64)
        roi = None if self.roi is None else np.array(self.roi, F)
        if opset < 13:  # roi and scales are required inputs: empty tensors stand for "none"
            roi = np.zeros(0, F) if roi is None else roi
            scales = np.zeros(0, F) if scales is None else scales
        return [x, roi, scales, sizes]


@dataclass(frozen=True)
class Axis:
    n_in: int
    out: int
    scale: np.float32
    start: np.float32
    end: np.float32
    width: np.float32


def schema_axes(shape: tuple[int, ...], case: Case) -> dict[int, Axis]:
    """Output length and scale of every axis ``axes`` names: floor(in * (end - start) * scale) for
    scales (the roi extent counts with tf_crop_and_resize), sizes and keep_aspect_ratio_policy."""
    rank = len(shape)
    axes = [a % rank for a in case.axes] if case.axes is not None else list(range(rank))
    k = len(axes)
    crop = case.transform == "tf_crop_and_resize"
    result = {}
    for i, a in enumerate(axes):
        n = F(shape[a])
        start, end = (F(case.roi[i]), F(case.roi[k + i])) if crop and case.roi else (F(0), F(1))
        if case.scales is not None:
            s = F(case.scales[i])
            out = int(np.floor(n * (end - start) * s))
        else:
            assert case.sizes is not None
            ratios = [F(case.sizes[j]) / F(shape[b]) for j, b in enumerate(axes)]
            if case.policy in (None, "stretch"):
                s, out = ratios[i], int(case.sizes[i])
            else:
                s = min(ratios) if case.policy == "not_larger" else max(ratios)
                out = int(np.floor(s * n + F(0.5)))
        result[a] = Axis(int(n), out, s, start, end, n * s)
    return result


def schema_coordinate(transform: str | None, o: int, ax: Axis) -> np.float32:
    """x_original of output position ``o``, the schema's formulas in float32."""
    x, n_in, n_out, s, half = F(o), F(ax.n_in), F(ax.out), ax.scale, F(0.5)
    if transform in (None, "half_pixel"):
        return (x + half) / s - half
    if transform == "pytorch_half_pixel":
        return (x + half) / s - half if ax.out > 1 else F(0)
    if transform == "half_pixel_symmetric":
        adjustment = n_out / ax.width
        center = n_in / F(2)
        offset = center * (F(1) - adjustment)
        return offset + (x + half) / s - half
    if transform == "align_corners":
        return x * (n_in - F(1)) / (n_out - F(1)) if ax.out > 1 else F(0)
    if transform == "asymmetric":
        return x / s
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / s
    assert transform == "tf_crop_and_resize"
    if ax.out > 1:
        return ax.start * (n_in - F(1)) + x * (ax.end - ax.start) * (n_in - F(1)) / (n_out - F(1))
    return half * (ax.start + ax.end) * (n_in - F(1))


def schema_weight(mode: str, d: float, a: float) -> float:
    """The linear (triangle) or cubic (Keys, coefficient a) filter at distance d."""
    d = abs(d)
    if mode == "linear":
        return max(0.0, 1.0 - d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    if d < 2:
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
    return 0.0


def schema_taps(case: Case, c: float, ax: Axis) -> list[tuple[int, float]]:
    """(input index, weight) pairs for one coordinate. Outside the axis an index takes the edge's
    value, or with exclude_outside drops out and the others are renormalised; antialias below
    scale 1 evaluates the filter at distance * scale and normalises."""
    n = ax.n_in
    if case.mode == "nearest":
        below = math.floor(c)
        rule = case.nearest_mode or "round_prefer_floor"
        if rule == "simple":
            i = math.ceil(c) if ax.scale < 1 else below
        elif rule == "floor":
            i = below
        elif rule == "ceil":
            i = math.ceil(c)
        elif c - below == 0.5:
            i = below if rule == "round_prefer_floor" else below + 1
        else:
            i = math.floor(c + 0.5)
        return [(min(max(i, 0), n - 1), 1.0)]
    stretch = min(float(ax.scale), 1.0) if case.antialias else 1.0
    reach = (1 if case.mode == "linear" else 2) / stretch
    a = -0.75 if case.cubic_a is None else case.cubic_a
    taps = []
    for i in range(math.floor(c - reach) - 1, math.ceil(c + reach) + 2):
        w = schema_weight(case.mode, (i - c) * stretch, a)
        if w != 0 and (0 <= i < n or not case.exclude_outside):
            taps.append((i, w))
    if case.exclude_outside or case.antialias:
        total = sum(w for _, w in taps)
        taps = [(i, w / total) for i, w in taps]
    return [(min(max(i, 0), n - 1), w) for i, w in taps]


def schema_fill(value: float, dtype: np.dtype) -> Any:
    """extrapolation_value in an integer type as a C cast gives it: truncated, wrapped modulo 2**bits."""
    if dtype.kind not in "iu":
        return value
    bits = 8 * dtype.itemsize
    wrapped = int(value) % (1 << bits)
    return wrapped - (1 << bits) if dtype.kind == "i" and wrapped >= 1 << (bits - 1) else wrapped


def schema_resize(x: np.ndarray, case: Case) -> np.ndarray:
    """Resize by the schema, one output element at a time: per axis the coordinate and its taps,
    the element the sum of weight products over every combination of taps; an element with a
    coordinate outside [0, in - 1] under tf_crop_and_resize is extrapolation_value."""
    axes = schema_axes(x.shape, case)
    out_shape = tuple(axes[a].out if a in axes else n for a, n in enumerate(x.shape))
    nearest = case.mode == "nearest"
    y = np.zeros(out_shape, x.dtype if nearest else np.result_type(x.dtype, np.float64))
    extrapolated = []
    for o in np.ndindex(*out_shape):
        per_axis: list[list[tuple[int, float]]] = []
        for d, od in enumerate(o):
            if d not in axes:
                per_axis.append([(od, 1.0)])
                continue
            c = schema_coordinate(case.transform, od, axes[d])
            if case.transform == "tf_crop_and_resize" and not 0 <= c <= axes[d].n_in - 1:
                extrapolated.append(o)
                break
            per_axis.append(schema_taps(case, float(c), axes[d]))
        else:
            if nearest:
                y[o] = x[tuple(taps[0][0] for taps in per_axis)]
            else:
                y[o] = sum(
                    math.prod(w for _, w in combo) * x[tuple(i for i, _ in combo)] for combo in itertools.product(*per_axis)
                )
    if y.dtype != x.dtype:
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            y = np.clip(np.trunc(y), info.min, info.max)
        y = y.astype(x.dtype)
    for o in extrapolated:
        y[o] = schema_fill(case.extrapolation or 0.0, x.dtype)
    return y


def run_case(op: str, opset: int, x: np.ndarray, case: Case, constant: bool = True) -> np.ndarray:
    """ovpool's Resize/Upsample on the case (scales/sizes/roi as initializers or graph inputs)."""
    inputs = case.inputs(x, opset)
    model = make_model(op, opset, inputs, case.attrs(), constant=range(1, len(inputs)) if constant else ())
    return run_ovpool(model, feeds_of(model, inputs))[0]


def assert_schema(op: str, opset: int, x: np.ndarray, case: Case, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    actual = run_case(op, opset, x, case)
    expected = schema_resize(x, case)
    assert actual.dtype == x.dtype
    assert actual.shape == expected.shape
    if x.dtype.kind in "iu" and case.mode != "nearest":
        np.testing.assert_allclose(actual, expected, atol=1)  # truncation of sums computed in another order
    else:
        np.testing.assert_allclose(actual.astype(np.complex128), expected.astype(np.complex128), rtol=rtol, atol=atol)


# --- cases -----------------------------------------------------------------------------------------


def _transforms(opset: int, mode: str) -> tuple[str, ...]:
    extra = ("tf_half_pixel_for_nn",) if mode == "nearest" else ()
    return TRANSFORMS + extra + (("half_pixel_symmetric",) if opset >= 19 else ())


@st.composite
def cases(draw: st.DrawFn, opset: int, shape: tuple[int, ...], resizable: tuple[int, ...], mode: str | None = None) -> Case:
    """A Resize-``opset`` node for an input of ``shape`` that changes the axes in ``resizable``
    (the others get scale 1, size unchanged, roi 0..1)."""
    rank = len(shape)
    mode = mode or draw(st.sampled_from(("nearest", "linear") if opset < 11 else ("nearest", "linear", "cubic")))
    if opset < 11:
        factors = [draw(st.sampled_from(SCALES)) if a in resizable else 1.0 for a in range(rank)]
        return Case(mode=mode, transform="asymmetric", nearest_mode="simple", scales=tuple(factors))
    case = Case(mode=mode, transform=draw(st.sampled_from((None,) + _transforms(opset, mode))))
    if mode == "nearest":
        case = replace(case, nearest_mode=draw(st.sampled_from((None,) + NEAREST_MODES)))
    if mode == "cubic":
        a = draw(st.sampled_from((None, -0.5, -0.6)))
        case = replace(case, cubic_a=a, exclude_outside=draw(st.sampled_from((None, 0, 1))))
    if opset >= 18 and mode != "nearest":
        case = replace(case, antialias=draw(st.sampled_from((None, 0, 1))))
    axes = list(range(rank))
    if opset >= 18 and draw(st.booleans()):
        axes = draw(st.permutations(resizable))
        axes = [a - rank if draw(st.booleans()) else a for a in axes]
        case = replace(case, axes=tuple(axes))
    named = [a % rank for a in axes]
    if draw(st.booleans()):
        factors = [draw(st.sampled_from(SCALES)) if a in resizable else 1.0 for a in named]
        case = replace(case, scales=tuple(factors))
    else:
        sizes = [draw(st.integers(1, 8)) if a in resizable else shape[a] for a in named]
        policy = draw(st.sampled_from((None, "stretch", "not_larger", "not_smaller"))) if opset >= 18 else None
        if policy in ("not_larger", "not_smaller"):
            assume(set(named) <= set(resizable))  # the common scale would resize N and C too
        case = replace(case, sizes=tuple(sizes), policy=policy)
    if case.transform == "tf_crop_and_resize":
        starts = [draw(st.floats(-0.4, 0.7)) if a in resizable else 0.0 for a in named]
        ends = [s + draw(st.floats(0.1, 1.2)) if a in resizable else 1.0 for s, a in zip(starts, named)]
        case = replace(case, roi=tuple(starts + ends), extrapolation=draw(st.sampled_from((None, -1.0, 2.5))))
    out = schema_axes(shape, case)
    assume(all(1 <= ax.out <= 12 for ax in out.values()))
    return case


def onnxruntime_follows_schema(shape: tuple[int, ...], case: Case) -> bool:
    """False for the cases where onnxruntime's shortcuts part from the schema (module docstring)."""
    axes = schema_axes(shape, case)
    if all(ax.out == ax.n_in for ax in axes.values()):
        return False  # the input comes back unchanged
    kept = [ax for ax in axes.values() if ax.out == ax.n_in]
    crop = case.transform == "tf_crop_and_resize"
    if crop and (case.scales is not None or case.antialias or any((ax.start, ax.end) != (0, 1) for ax in kept)):
        return False
    if case.transform == "tf_half_pixel_for_nn" and case.nearest_mode in ("ceil", "round_prefer_ceil"):
        return False
    if case.policy in ("not_larger", "not_smaller") and any(a < 0 for a in case.axes or ()):
        return False
    if case.transform == "half_pixel_symmetric" and case.mode == "nearest" and on_rounding_edge(case, axes):
        return False
    return not (case.antialias and any(ax.scale != 1 for ax in kept))


def on_rounding_edge(case: Case, axes: dict[int, Axis]) -> bool:
    """A coordinate within float32 noise of where its nearest rounding changes (an integer for
    floor/ceil, a half for the round modes)."""
    edge = 0.0 if case.nearest_mode in ("floor", "ceil") else 0.5
    for ax in axes.values():
        for o in range(ax.out):
            c = float(schema_coordinate(case.transform, o, ax))
            if abs((c - edge) - round(c - edge)) < 1e-5 * max(1.0, abs(c)):
                return True
    return False


def compare_with_onnxruntime(op: str, opset: int, x: np.ndarray, case: Case, constant: bool = True, **tolerance: float) -> None:
    inputs = case.inputs(x, opset)
    indices = tuple(range(1, len(inputs))) if constant else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(op, opset, inputs, case.attrs(), constant=indices, **tolerance)


# --- against onnxruntime ---------------------------------------------------------------------------


@pytest.mark.parametrize("opset", RESIZE)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_resize_4d_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    """Every mode, coordinate transformation, nearest rounding, cubic coefficient, exclude_outside,
    antialias, axes and aspect policy of the version, on N x C x H x W with N and C unscaled (what
    onnxruntime's linear and cubic take), scales or sizes, outside onnxruntime's shortcuts."""
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 6)),
        data.draw(st.integers(1, 6)),
    )
    case = data.draw(cases(opset, shape, (2, 3)))
    assume(onnxruntime_follows_schema(shape, case))
    x = np.random.default_rng(0).standard_normal(shape).astype(F)
    compare_with_onnxruntime("Resize", opset, x, case, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", RESIZE)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_resize_nearest_any_rank_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    """Nearest resizes every axis of a rank-1 to rank-5 input (scales or sizes)."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    case = data.draw(cases(opset, shape, tuple(range(len(shape))), mode="nearest"))
    assume(onnxruntime_follows_schema(shape, case))
    x = np.random.default_rng(1).standard_normal(shape).astype(F)
    compare_with_onnxruntime("Resize", opset, x, case)


@pytest.mark.parametrize("opset", RESIZE)
@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8, np.int32])
@settings(max_examples=examples(10))
@given(data=st.data())
def test_resize_types_match_onnxruntime(opset: int, dtype: type, data: st.DataObject) -> None:
    """float16 (computed in float32), int8/uint8/int32 (nearest; linear at scales 0.5, 2 and 4,
    whose weights are exact, so truncation toward zero sees the same sums; int32 values below 2**14,
    which onnxruntime's float32 sums hold exactly)."""
    mode = data.draw(st.sampled_from(("nearest", "linear")))
    shape = (1, data.draw(st.integers(1, 3)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5)))
    rng = np.random.default_rng(2)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        case = data.draw(cases(opset, shape, (2, 3), mode=mode))
        assume(onnxruntime_follows_schema(shape, case))
        compare_with_onnxruntime("Resize", opset, x, case, rtol=2e-3, atol=2e-3)
        return
    info = np.iinfo(dtype)
    bound = min(info.max, 1 << 14)  # onnxruntime sums int32 in float32: 2**14 times 6-bit weights stays exact
    x = rng.integers(max(info.min, -bound), bound, shape, endpoint=True).astype(dtype)
    if mode == "nearest":
        case = data.draw(cases(opset, shape, (2, 3), mode=mode))
    else:
        factors = (1.0, 1.0, data.draw(st.sampled_from((0.5, 2.0, 4.0))), data.draw(st.sampled_from((0.5, 2.0, 4.0))))
        transform = "asymmetric" if opset < 11 else data.draw(st.sampled_from(("half_pixel", "asymmetric", "pytorch_half_pixel")))
        case = Case(mode="linear", transform=transform, nearest_mode="simple" if opset < 11 else None, scales=factors)
    assume(all(ax.out >= 1 for ax in schema_axes(shape, case).values()))
    assume(onnxruntime_follows_schema(shape, case))
    compare_with_onnxruntime("Resize", opset, x, case)


@pytest.mark.parametrize("opset", [o for o in RESIZE if o >= 11])
def test_resize_scales_and_sizes_as_graph_inputs(opset: int) -> None:
    """roi, scales and sizes computed at run time (not initializers) give the same result."""
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 5)).astype(F)
    for case in (
        Case(mode="linear", scales=(1.0, 1.0, 2.0, 1.5)),
        Case(mode="cubic", sizes=(1, 2, 7, 3)),
        Case(mode="nearest", transform="tf_crop_and_resize", roi=(0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7), sizes=(1, 2, 4, 6)),
    ):
        compare_with_onnxruntime("Resize", opset, x, case, constant=False, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_flipped_roi_matches_onnxruntime(mode: str) -> None:
    """tf_crop_and_resize with end < start reads the roi backwards (sizes given)."""
    x = np.random.default_rng(9).standard_normal((1, 1, 3, 5)).astype(F)
    case = Case(mode=mode, transform="tf_crop_and_resize", roi=(0, 0, 0.9, 0.8, 1, 1, 0.1, 0.2), sizes=(1, 1, 4, 6))
    compare_with_onnxruntime("Resize", 13, x, case, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", UPSAMPLE)
@settings(max_examples=examples(20))
@given(data=st.data())
def test_upsample_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    """Upsample-7 (scales attribute) and -9 (scales input), nearest and linear, integer and
    fractional scales >= 1 (1.5 reads rows 0, 0, 1 of 2: floor of x / 1.5); Upsample-10 is the
    deprecated schema: onnxruntime and ovpool both refuse it."""
    mode = data.draw(st.sampled_from(("nearest", "linear")))
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(1, 5)),
    )
    outer = 1.0 if mode == "linear" else data.draw(st.sampled_from((1.0, 2.0)))
    factors = [outer, outer] + [data.draw(st.sampled_from((1.0, 1.25, 1.5, 2.0, 2.5, 3.0))) for _ in range(2)]
    assume(any(math.floor(n * f) != n for n, f in zip(shape, factors)))  # onnxruntime returns an unchanged shape as is
    x = np.random.default_rng(4).standard_normal(shape).astype(F)
    if opset >= 10:
        model = make_model("Upsample", opset, [x, np.array(factors, F)], {"mode": mode}, constant=(1,))
        with pytest.raises(ModelError, match="deprecated"):
            run_ovpool(model, feeds_of(model, [x]))
        return
    if opset < 9:
        check("Upsample", opset, [x], {"mode": mode, "scales": factors}, rtol=1e-5, atol=1e-6)
    else:
        check("Upsample", opset, [x, np.array(factors, F)], {"mode": mode}, constant=(1,), rtol=1e-5, atol=1e-6)


def test_resize_10_rounds_up_when_shrinking() -> None:
    """Resize-10 nearest: 10 elements at 0.6 read 0, 2, 4, 5, 7, 9 (ceil of x / 0.6), at 1.5 read
    0, 0, 1, 2, 2, 3, ... (floor of x / 1.5); linear at 0.6 reads 1.67 as 2/3 of x[1] + 1/3 of x[2]."""
    x = np.arange(10, dtype=F).reshape(1, 1, 1, 10) * 10
    shrunk = check("Resize", 10, [x, np.array([1, 1, 1, 0.6], F)], {"mode": "nearest"}, constant=(1,))[0]
    np.testing.assert_array_equal(shrunk.reshape(-1), [0, 20, 40, 50, 70, 90])
    grown = check("Resize", 10, [x, np.array([1, 1, 1, 1.5], F)], {"mode": "nearest"}, constant=(1,))[0]
    np.testing.assert_array_equal(grown.reshape(-1)[:6], [0, 0, 10, 20, 20, 30])
    linear = check("Resize", 10, [x, np.array([1, 1, 1, 0.6], F)], {"mode": "linear"}, constant=(1,))[0]
    np.testing.assert_allclose(linear.reshape(-1)[1], 100 / 6, rtol=1e-6)


# --- against the schema ----------------------------------------------------------------------------


@pytest.mark.parametrize("opset", RESIZE)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_resize_matches_schema(opset: int, data: st.DataObject) -> None:
    """Every attribute combination on ranks 1 to 4 with any axis resized, including onnxruntime's
    shortcut cases, against the element-by-element schema loop (schema_resize)."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    case = data.draw(cases(opset, shape, tuple(range(len(shape)))))
    if case.antialias:
        assume(math.prod(schema_axes(shape, case)[a].out for a in schema_axes(shape, case)) <= 64)
    x = np.random.default_rng(5).standard_normal(shape).astype(F)
    assert_schema("Resize", opset, x, case)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int16, np.uint16, np.complex64])
@settings(max_examples=examples(10))
@given(data=st.data())
def test_resize_types_onnxruntime_lacks(dtype: type, data: st.DataObject) -> None:
    """float64 (kept float64), int64/int16/uint16 (linear and cubic truncate toward zero, clipped to
    the type), complex64: onnxruntime has no kernel, the schema loop is the oracle."""
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)))
    case = data.draw(cases(19, shape, (0, 1)))
    rng = np.random.default_rng(6)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
    else:
        x = (rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    assert_schema("Resize", 19, x, case, rtol=1e-12 if dtype is np.float64 else 1e-5)


SHORTCUTS = [
    pytest.param(
        (1, 1, 1, 2), Case(mode="linear", transform="asymmetric", scales=(1, 1, 1, 1.3)), 19, id="same-shape-asymmetric"
    ),
    pytest.param(
        (1, 2, 3, 2),
        Case(mode="cubic", transform="pytorch_half_pixel", exclude_outside=1, scales=(1, 1, 1, 1.3)),
        11,
        id="same-shape-cubic",
    ),
    pytest.param(
        (1, 2, 3, 4),
        Case(mode="nearest", transform="tf_half_pixel_for_nn", nearest_mode="ceil", sizes=(1, 2, 1, 4)),
        13,
        id="tf_half_pixel_for_nn-ceil-scale-1",
    ),
    pytest.param(
        (1, 1, 4, 2),
        Case(mode="nearest", transform="tf_crop_and_resize", roi=(0, 0, 0, -0.2, 1, 1, 1, 0.6), sizes=(1, 1, 6, 2)),
        13,
        id="crop-nearest-same-length",
    ),
    pytest.param(
        (1, 1, 5, 4),
        Case(mode="linear", transform="tf_crop_and_resize", roi=(0, 0, 0.2, 0.1, 1, 1, 0.6, 0.9), scales=(1, 1, 1.5, 2)),
        13,
        id="crop-scales-roi-extent",
    ),
    pytest.param(
        (1, 1, 3, 2),
        Case(mode="linear", transform="half_pixel_symmetric", antialias=1, scales=(1, 1, 1.3, 2)),
        19,
        id="antialias-same-length",
    ),
    pytest.param(
        (1, 1, 2, 6),
        Case(
            mode="cubic", antialias=1, transform="tf_crop_and_resize", roi=(0, 0, -0.1, 0.1, 1, 1, 0.9, 0.8), sizes=(1, 1, 1, 3)
        ),
        18,
        id="antialias-crop-extrapolates",
    ),
    pytest.param((1, 1, 2, 1), Case(axes=(-2, -1), sizes=(1, 1), policy="not_larger"), 18, id="policy-negative-axes"),
    pytest.param((1, 3), Case(transform="half_pixel_symmetric", nearest_mode="floor", sizes=(1, 1)), 19, id="symmetric-ulp"),
    pytest.param(
        (1, 1, 3, 4), Case(mode="linear", transform="align_corners", scales=(1, 1, 0.6, 0.6)), 13, id="align-corners-1-row"
    ),
]


@pytest.mark.parametrize(("shape", "case", "opset"), SHORTCUTS)
def test_where_onnxruntime_takes_shortcuts(shape: tuple[int, ...], case: Case, opset: int) -> None:
    """The cases of the module docstring: ovpool follows the schema loop, onnxruntime differs."""
    x = np.random.default_rng(7).standard_normal(shape).astype(F)
    assert_schema("Resize", opset, x, case)


def test_worked_numbers() -> None:
    """The docstrings' numbers: antialias linear at 0.5 weighs 1/8 3/8 3/8 1/8 (edge replicated at
    the border), sizes from float32 products, not_larger keeps the aspect ratio, half_pixel at 0.6."""
    x = np.arange(8, dtype=np.float64)[None, :] ** 2
    y = run_case("Resize", 18, x, Case(mode="linear", antialias=1, scales=(1.0, 0.5)))
    np.testing.assert_allclose(y[0, 1], (x[0, 1] + 3 * x[0, 2] + 3 * x[0, 3] + x[0, 4]) / 8)
    np.testing.assert_allclose(y[0, 0], (4 * x[0, 0] + 3 * x[0, 1] + x[0, 2]) / 8)
    three = np.zeros((1, 3), F)
    assert run_case("Resize", 13, three, Case(scales=(1.0, float(F(7 / 3))))).shape == (1, 7)
    assert run_case("Resize", 18, np.zeros((1, 1, 2, 4), F), Case(axes=(2, 3), sizes=(7, 8), policy="not_larger")).shape == (
        1,
        1,
        4,
        8,
    )
    assert run_case("Resize", 18, np.zeros((1, 1, 2, 4), F), Case(axes=(2, 3), sizes=(7, 8), policy="not_smaller")).shape == (
        1,
        1,
        7,
        14,
    )
    crop = Case(transform="tf_crop_and_resize", roi=(0.2, 0.8), scales=(1.5,))
    assert run_case("Resize", 13, np.zeros(10, F), crop).shape == (9,)
    half = run_case("Resize", 13, np.arange(4, dtype=F), Case(mode="linear", scales=(0.6,)))
    np.testing.assert_allclose(half, [1 / 3, 2.0], rtol=1e-6)


def test_plans_follow_the_input_shape() -> None:
    """One kernel, inputs of several shapes (a dynamic axis): each gets its own tables."""
    node = OpNode("r", "Resize", 13, 13, {"mode": "linear"}, (None, None, np.array([1, 1, 2, 2], F)))
    row = lookup("Resize", 13)
    assert row is not None
    kernel = row.factory(node)
    for shape in [(1, 1, 2, 3), (1, 2, 4, 4), (1, 1, 2, 3)]:
        x = np.random.default_rng(8).standard_normal(shape).astype(F)
        np.testing.assert_allclose(
            kernel(x, None, np.array([1, 1, 2, 2], F))[0],
            schema_resize(x, Case(mode="linear", scales=(1, 1, 2, 2))),
            rtol=1e-5,
            atol=1e-6,
        )


def test_empty_output() -> None:
    """Scale 0.05 on 10 elements gives 0 of them (onnxruntime agrees); sizes 0 likewise."""
    x = np.ones((1, 1, 2, 10), F)
    check("Resize", 13, [x, None, np.array([1, 1, 1, 0.05], F)], {"mode": "linear"}, constant=(2,))
    assert run_case("Resize", 13, x, Case(mode="cubic", sizes=(1, 1, 2, 0))).shape == (1, 1, 2, 0)


X22 = np.ones((1, 1, 2, 2), F)
BIG = np.array([1, 1, 20000, 20000], F)


@pytest.mark.parametrize(
    ("op", "opset", "inputs", "attrs", "match"),
    [
        ("Upsample", 7, [X22], {"scales": BIG.tolist()}, r"output \[1, 1, 40000, 40000\] float32 would need 6\.0 GiB"),
        ("Upsample", 9, [X22, BIG], {}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 10, [X22, BIG], {}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 11, [X22, np.zeros(0, F), BIG], {}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 13, [X22, None, BIG], {"mode": "linear"}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 13, [X22, None, None, np.array([1, 1, 40000, 40000], np.int64)], {}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 18, [X22, None, BIG], {"mode": "cubic"}, r"output \[1, 1, 40000, 40000\] float32"),
        ("Resize", 19, [X22, None, BIG], {}, r"output \[1, 1, 40000, 40000\] float32"),
        # uint8 output of 1.5 GiB, interpolated in float64: 11.9 GiB
        ("Resize", 13, [X22.astype(np.uint8), None, BIG], {"mode": "linear"}, r"float64 work \[1, 1, 40000, 40000\] float64"),
        # an empty output, but 2**40 coordinates along its last axis
        (
            "Resize",
            13,
            [np.ones((1, 0, 2), F), None, None, np.array([1, 0, 2**40], np.int64)],
            {},
            r"axis 2 coordinates \[1099511627776\]",
        ),
    ],
)
def test_sizes_over_the_budget_are_refused_before_any_work(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any], match: str
) -> None:
    """Output dims from the values of scales or sizes (graph inputs shape inference cannot read)
    within the memory budget before any table or array exists, at every version: (1, 1, 2, 2)
    float32 at scales (1, 1, 20000, 20000) would be (1, 1, 40000, 40000), 6.0 GiB."""
    with pytest.raises(MemoryBudgetError, match=f"{op.lower()}_node.*{match}"):
        ovpool_of(op, opset, inputs, attrs)


def test_antialias_taps_over_the_budget_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Antialias below scale 1 weighs every input within 1/scale: 10**5 elements down to one give
    one output of about 2 * 10**5 linear taps, a 1.5 MiB float64 table, over a budget of 1 MiB
    that the input (391 KiB) and the output are well within."""
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "1M")
    x = np.ones((1, 100000), F)
    with pytest.raises(MemoryBudgetError, match=r"resize_node.*axis 1 taps \[1, 20000\d\] float64"):
        run_case("Resize", 18, x, Case(mode="linear", antialias=1, sizes=(1, 1)))


# --- errors ----------------------------------------------------------------------------------------

ERRORS = [
    pytest.param(13, Case(mode="bicubic", scales=(1, 2)), "mode", id="mode"),
    pytest.param(13, Case(transform="half_pixel_symmetric", scales=(1, 2)), "half_pixel_symmetric", id="symmetric-before-19"),
    pytest.param(13, Case(nearest_mode="round", scales=(1, 2)), "nearest_mode", id="nearest_mode"),
    pytest.param(13, Case(axes=(1,), scales=(2,)), "axes", id="axes-before-18"),
    pytest.param(18, Case(axes=(1, 1), scales=(2, 2)), "twice", id="repeated-axes"),
    pytest.param(18, Case(axes=(2,), scales=(2,)), "outside", id="axis-out-of-range"),
    pytest.param(18, Case(policy="keep", sizes=(2, 4)), "keep_aspect_ratio_policy", id="policy"),
    pytest.param(18, Case(antialias=2, mode="linear", scales=(1, 2)), "antialias", id="antialias-flag"),
    pytest.param(13, Case(scales=(1, 2), sizes=(2, 4)), "both", id="scales-and-sizes"),
    pytest.param(13, Case(), "neither", id="no-scales-no-sizes"),
    pytest.param(13, Case(scales=(2,)), "1 values for 2 axes", id="scales-length"),
    pytest.param(13, Case(scales=(1, 0)), "greater than 0", id="zero-scale"),
    pytest.param(13, Case(sizes=(2, -1)), "negative", id="negative-size"),
    pytest.param(13, Case(scales=(1, float("inf"))), "finite", id="infinite-scale"),
    pytest.param(
        13, Case(transform="tf_crop_and_resize", roi=(0, 0.8, 1, 0.2), scales=(1, 2)), "no output length", id="crop-flip-scales"
    ),
    pytest.param(13, Case(transform="tf_crop_and_resize", sizes=(2, 4)), "roi", id="crop-without-roi"),
    pytest.param(10, Case(mode="cubic", scales=(1, 2)), "mode", id="cubic-in-resize-10"),
]


@pytest.mark.parametrize(("opset", "case", "message"), ERRORS)
def test_bad_nodes_are_model_errors(opset: int, case: Case, message: str) -> None:
    with pytest.raises(ModelError, match=message) as error:
        run_case("Resize", opset, np.zeros((2, 2), F), case)
    assert "resize_node" in str(error.value)


def test_upsample_scales_below_one_are_model_errors() -> None:
    with pytest.raises(ModelError, match="at least 1"):
        run_case("Upsample", 9, np.zeros((2, 2), F), Case(scales=(1.0, 0.5)))
    model = make_model("Upsample", 7, [np.zeros((2, 2), F)], {"scales": [1.0, 2.0, 2.0]})
    with pytest.raises(ModelError, match="one value per axis"):
        run_ovpool(model, {"x0": np.zeros((2, 2), F)})


def test_interpolating_strings_is_a_model_error() -> None:
    x = np.array([["a", "b"]], dtype=object)
    assert run_case("Resize", 13, x, Case(scales=(1.0, 2.0))).tolist() == [["a", "a", "b", "b"]]
    with pytest.raises(ModelError, match="linear interpolation"):
        run_case("Resize", 13, x, Case(mode="linear", scales=(1.0, 2.0)))


# --- ONNX's node tests -----------------------------------------------------------------------------

# ONNX's expected values for align_corners when the scale does not divide the length use the
# fractional in * scale as length_resized (2 * 0.6 = 1.2 rows); the schema's length_resized is the
# resized tensor's length (1 row: x_original 0), and onnxruntime agrees with ovpool.
WRONG_EXPECTATIONS = {
    "test_resize_downsample_scales_linear_align_corners": "length_resized taken as in * scale = 2.4, not 2",
    "test_resize_downsample_scales_cubic_align_corners": "length_resized taken as in * scale = 3.2, not 3",
}


@functools.lru_cache(maxsize=1)
def _onnx_cases() -> list[Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = collect_testcases()
    return [c for c in found if c.kind == "node" and c.model.graph.node[0].op_type in ("Resize", "Upsample")]


def _onnx_case_names() -> list[str]:
    return [c.name for c in _onnx_cases()]


@pytest.mark.parametrize("name", _onnx_case_names())
def test_onnx_node_cases(name: str) -> None:
    if name in WRONG_EXPECTATIONS:
        pytest.skip(f"ONNX's expected output is not the schema's: {WRONG_EXPECTATIONS[name]}")
    case = next(c for c in _onnx_cases() if c.name == name)
    for inputs, expected in case.data_sets:
        feeds = {i.name: v for i, v in zip(case.model.graph.input, inputs)}
        actual = run_ovpool(case.model, feeds)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_ort_agrees_where_onnx_expectations_are_wrong() -> None:
    """onnxruntime gives ovpool's answer on the two skipped ONNX cases."""
    for case in _onnx_cases():
        if case.name in WRONG_EXPECTATIONS:
            inputs, _ = case.data_sets[0]
            feeds = {i.name: v for i, v in zip(case.model.graph.input, inputs)}
            np.testing.assert_allclose(run_ovpool(case.model, feeds)[0], run_ort(case.model, feeds)[0], rtol=1e-5, atol=1e-5)

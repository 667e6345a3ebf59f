"""Conv and ConvTranspose (ovpool/engine/ops/conv.py) against onnxruntime and against the schema.

onnxruntime is the oracle wherever it follows the schema text. Where it does not, or has no kernel,
the oracle is a direct definition in this file (``direct_conv``: a gather per output position;
``direct_conv_transpose``: a scatter per input position, both slow Python loops over positions and
taps) with pads and output sizes worked out from each version's text (``same_pads``,
``transpose_crop``). The cases onnxruntime gets wrong or refuses:

- ConvTranspose-1 with output_shape and an odd total padding: the version-1 text crops
  ``total // 2`` at the start, onnxruntime applies version 11's rule (the larger half at the start).
- ConvTranspose SAME with a kernel smaller than the stride: the text says ``out = L * s``,
  onnxruntime clamps the padding at 0 and gives ``L * s - (s - kd)``.
- Conv SAME with dilation: onnxruntime refuses it, the text counts dilation in the kernel.
- output_padding at least the stride but below the dilation (allowed by the text), output_shape
  more than ``stride - 1`` beyond the full output (output_padding not counted): onnxruntime refuses them.
- float64: onnxruntime has no double Conv/ConvTranspose; bfloat16 (version 22): none either.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from harness import check, check_node_case, drawn_rng, examples, node_case_params, ovpool_of, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.engine.native import compiled as compiled_module
from ovpool.engine.ops import conv as conv_module
from ovpool.engine.ops.conv import buffers as conv_buffers
from ovpool.engine.ops.conv import forward as conv_forward
from ovpool.engine.ops.conv import gemm as conv_gemm
from ovpool.engine.ops.conv import taps as conv_taps
from ovpool.errors import ModelError
from ovpool.memory import MemoryBudgetError

CONV_OPSETS = since_opsets("Conv")
TRANSPOSE_OPSETS = since_opsets("ConvTranspose")


def test_opsets_cover_every_version() -> None:
    assert CONV_OPSETS == [7, 11, 22]
    assert TRANSPOSE_OPSETS == [7, 11, 22]


# ---------------------------------------------------------------------- the schema, directly


def same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """Conv SAME: output ceil(L / s); the padding that takes, odd one at the end for SAME_UPPER."""
    out = math.ceil(size / stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)


def transpose_crop(version: int, full: int, out: int, auto_pad: str, output_shape_given: bool) -> int:
    """ConvTranspose: how much of the full output is cut at the start, for an output of ``out``.

    Version 11 text: ``If (auto_pads == SAME_UPPER): pads[start_i] = total_padding[i]/2; ...
    Else: pads[start_i] = total_padding[i] - (total_padding[i]/2)``. Version 1 text, for
    output_shape: ``If (auto_pads != SAME_UPPER): pads[start_i] = total_padding[i]/2 ... Else:
    pads[start_i] = total_padding[i] - (total_padding[i]/2)``; for SAME alone its auto_pad text:
    "the extra padding at the end for SAME_UPPER and at the beginning for SAME_LOWER". A negative
    total would give negative pads, which "pads" cannot be: nothing is cut at the start then, the
    output only grows at the high end (as with output_padding; onnxruntime does the same)."""
    total = full - out
    if total < 0:
        return 0
    half = total // 2
    if version >= 11 or not output_shape_given:
        return half if auto_pad == "SAME_UPPER" else total - half
    return total - half if auto_pad == "SAME_UPPER" else half


def direct_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides, dilations, begin, end, group: int) -> np.ndarray:
    """``y[n, m, o] = B[m] + sum over the input channels c of m's group and taps t of
    x[n, c, o * s + t * d - begin] * W[m, c, t]`` (zero outside x), in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    m = w.shape[0]
    sizes, kernel = x.shape[2:], w.shape[2:]
    out = [(L + p + q - (k - 1) * d - 1) // s + 1 for L, p, q, k, d, s in zip(sizes, begin, end, kernel, dilations, strides)]
    y = np.zeros((n, m, *out))
    for o in itertools.product(*(range(v) for v in out)):
        for t in itertools.product(*(range(v) for v in kernel)):
            pos = [oi * s + ti * d - p for oi, ti, s, d, p in zip(o, t, strides, dilations, begin)]
            if all(0 <= q < L for q, L in zip(pos, sizes)):
                xs = x[(slice(None), slice(None), *pos)].reshape(n, group, c // group)
                ws = w[(slice(None), slice(None), *t)].reshape(group, m // group, c // group)
                y[(slice(None), slice(None), *o)] += np.einsum("ngc,gmc->ngm", xs, ws).reshape(n, m)
    if b is not None:
        y += b.astype(np.float64).reshape((m,) + (1,) * len(out))
    return y


def direct_conv_transpose(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, strides, dilations, crop, out, group: int
) -> np.ndarray:
    """Each input x[n, c, i] adds ``x * W[c, m', t]`` at output position ``i * s + t * d - crop``
    of output channel ``group(c) * M/g + m'`` (kept when inside ``out``), in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    mg = w.shape[1]
    m = mg * group
    y = np.zeros((n, m, *out))
    for i in itertools.product(*(range(v) for v in x.shape[2:])):
        for t in itertools.product(*(range(v) for v in w.shape[2:])):
            pos = [ii * s + ti * d - p for ii, ti, s, d, p in zip(i, t, strides, dilations, crop)]
            if all(0 <= q < o for q, o in zip(pos, out)):
                xs = x[(slice(None), slice(None), *i)].reshape(n, group, c // group)
                ws = w[(slice(None), slice(None), *t)].reshape(group, c // group, mg)
                y[(slice(None), slice(None), *pos)] += np.einsum("ngc,gcm->ngm", xs, ws).reshape(n, m)
    if b is not None:
        y += b.astype(np.float64).reshape((m,) + (1,) * len(out))
    return y


def schema_conv(x, w, b, attrs: dict[str, Any]) -> np.ndarray:
    """The Conv output the schema text gives for these attributes (defaults applied here)."""
    rank = x.ndim - 2
    strides = attrs.get("strides", [1] * rank)
    dilations = attrs.get("dilations", [1] * rank)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad.startswith("SAME"):
        pairs = [
            same_pads(L, k, s, d, auto_pad == "SAME_UPPER") for L, k, s, d in zip(x.shape[2:], w.shape[2:], strides, dilations)
        ]
        begin, end = [p[0] for p in pairs], [p[1] for p in pairs]
    else:
        pads = attrs.get("pads", [0] * 2 * rank)
        begin, end = pads[:rank], pads[rank:]
    return direct_conv(x, w, b, strides, dilations, begin, end, attrs.get("group", 1))


def schema_conv_transpose(version: int, x, w, b, attrs: dict[str, Any]) -> np.ndarray:
    """The ConvTranspose output the schema text of ``version`` gives for these attributes."""
    rank = x.ndim - 2
    strides = attrs.get("strides", [1] * rank)
    dilations = attrs.get("dilations", [1] * rank)
    padding = attrs.get("output_padding", [0] * rank)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    full = [s * (L - 1) + p + (k - 1) * d + 1 for s, L, p, k, d in zip(strides, x.shape[2:], padding, w.shape[2:], dilations)]
    if "output_shape" in attrs or auto_pad.startswith("SAME"):
        out = attrs.get("output_shape") or [L * s for L, s in zip(x.shape[2:], strides)]
        crop = [transpose_crop(version, f, o, auto_pad, "output_shape" in attrs) for f, o in zip(full, out)]
    else:
        pads = attrs.get("pads", [0] * 2 * rank) if auto_pad == "NOTSET" else [0] * 2 * rank
        crop = pads[:rank]
        out = [f - p - q for f, p, q in zip(full, pads[:rank], pads[rank:])]
    return direct_conv_transpose(x, w, b, strides, dilations, crop, out, attrs.get("group", 1))


# --------------------------------------------------------------------------- drawn cases


def _tolerance(dtype: np.dtype) -> dict[str, float]:
    return {"rtol": 2e-2, "atol": 2e-2} if dtype == np.float16 else {"rtol": 1e-4, "atol": 1e-4}


@st.composite
def conv_cases(draw: st.DrawFn, ort_safe: bool) -> tuple[list[np.ndarray | None], dict[str, Any], tuple[int, ...]]:
    """X, W, optional B, attributes and which inputs are initializers. Shapes: 1-3 spatial axes,
    dense, grouped, depthwise (one input channel per group, 1-3 outputs each) or 1x1 kernels.
    ``ort_safe``: no dilation with SAME (onnxruntime refuses it)."""
    rank = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["dense", "grouped", "depthwise", "pointwise"]))
    if kind == "dense":
        group = 1
    elif kind == "grouped":
        group = draw(st.integers(2, 3))
    else:
        group = draw(st.integers(1, 5))
    cg = 1 if kind == "depthwise" else draw(st.integers(1, 3))
    mg = draw(st.integers(1, 3))
    top = 3 if rank < 3 else 2
    kernel = [1] * rank if kind == "pointwise" else draw(st.lists(st.integers(1, top), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    if ort_safe and auto_pad.startswith("SAME"):
        dilations = [1] * rank
    attrs: dict[str, Any] = {}
    pads = [0] * 2 * rank
    if auto_pad == "NOTSET" and draw(st.booleans()):
        pads = draw(st.lists(st.integers(0, 2), min_size=2 * rank, max_size=2 * rank))
        attrs["pads"] = pads
    elif auto_pad != "NOTSET" or draw(st.booleans()):
        attrs["auto_pad"] = auto_pad
    for name, value in (("strides", strides), ("dilations", dilations), ("kernel_shape", kernel)):
        if any(v != 1 for v in value) or draw(st.booleans()):
            attrs[name] = value
    if group != 1 or draw(st.booleans()):
        attrs["group"] = group
    top_size = 7 if rank < 3 else 4
    sizes = [
        max(1, (k - 1) * d + 1 - (0 if auto_pad.startswith("SAME") else pads[i] + pads[rank + i]))
        + draw(st.integers(0, top_size - 2))
        for i, (k, d) in enumerate(zip(kernel, dilations))
    ]
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float32, np.float16])))
    rng = drawn_rng(draw)
    n = draw(st.integers(1, 2))
    x = rng.uniform(-1, 1, (n, cg * group, *sizes)).astype(dtype)
    w = rng.uniform(-1, 1, (mg * group, cg, *kernel)).astype(dtype)
    b = rng.uniform(-1, 1, (mg * group,)).astype(dtype) if draw(st.booleans()) else None
    constant = (1, 2) if draw(st.booleans()) else ()
    return [x, w, b], attrs, constant


@st.composite
def transpose_cases(
    draw: st.DrawFn, ort_safe: bool, opset: int
) -> tuple[list[np.ndarray | None], dict[str, Any], tuple[int, ...]]:
    """X, W (C, M/g, *k), optional B, attributes, initializers. ``ort_safe`` keeps to what
    onnxruntime runs per the text: output_padding < stride, output_shape within stride - 1 beyond
    the full output without output_padding, SAME only with kd + output_padding >= stride, and at
    opset 7 output_shape only with an even total padding (where versions 1 and 11 agree)."""
    rank = draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 1, 2, 3]))
    cg, mg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    top = 3 if rank < 3 else 2
    kernel = draw(st.lists(st.integers(1, top), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    padding = [draw(st.integers(0, max(s, d) - 1)) for s, d in zip(strides, dilations)]
    if ort_safe:
        padding = [min(p, s - 1) for p, s in zip(padding, strides)]
    sizes = draw(st.lists(st.integers(1, 5 if rank < 3 else 3), min_size=rank, max_size=rank))
    full = [s * (L - 1) + p + (k - 1) * d + 1 for s, L, p, k, d in zip(strides, sizes, padding, kernel, dilations)]
    mode = draw(st.sampled_from(["pads", "pads", "output_shape", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    attrs: dict[str, Any] = {}
    for name, value in (("strides", strides), ("dilations", dilations)):
        if any(v != 1 for v in value) or draw(st.booleans()):
            attrs[name] = value
    if any(padding) or draw(st.booleans()):
        attrs["output_padding"] = padding
    if draw(st.booleans()):
        attrs["kernel_shape"] = kernel
    if group != 1 or draw(st.booleans()):
        attrs["group"] = group
    if mode == "pads":
        begin = [min(draw(st.integers(0, 2)), f - 1) for f in full]
        end = [min(draw(st.integers(0, 2)), f - 1 - b) for f, b in zip(full, begin)]
        attrs["pads"] = begin + end
    elif mode == "output_shape":
        out = [draw(st.integers(1, f + s - 1 - (p if ort_safe else 0))) for f, s, p in zip(full, strides, padding)]
        if ort_safe and opset < 11:
            out = [o - ((f - o) % 2) if o > 1 else o + ((f - o) % 2) for o, f in zip(out, full)]
        attrs["output_shape"] = out
        if draw(st.booleans()):
            attrs["auto_pad"] = draw(st.sampled_from(["SAME_UPPER", "SAME_LOWER", "NOTSET"]))
    else:
        attrs["auto_pad"] = mode
        if ort_safe and mode.startswith("SAME"):
            strides = [min(s, (k - 1) * d + 1 + p) for s, k, d, p in zip(strides, kernel, dilations, padding)]
            attrs["strides"] = strides
            padding = [min(p, s - 1) if s > 1 else 0 for p, s in zip(padding, strides)]
            if "output_padding" in attrs:
                attrs["output_padding"] = padding
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float32, np.float16])))
    rng = drawn_rng(draw)
    n = draw(st.integers(1, 2))
    x = rng.uniform(-1, 1, (n, cg * group, *sizes)).astype(dtype)
    w = rng.uniform(-1, 1, (cg * group, mg, *kernel)).astype(dtype)
    b = rng.uniform(-1, 1, (mg * group,)).astype(dtype) if draw(st.booleans()) else None
    constant = (1, 2) if draw(st.booleans()) else ()
    return [x, w, b], attrs, constant


@pytest.mark.parametrize("opset", CONV_OPSETS)
@settings(max_examples=25)
@given(data=st.data())
def test_conv_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    inputs, attrs, constant = data.draw(conv_cases(ort_safe=True))
    check("Conv", opset, inputs, attrs, constant=constant, **_tolerance(inputs[0].dtype))


@pytest.mark.parametrize("opset", TRANSPOSE_OPSETS)
@settings(max_examples=25)
@given(data=st.data())
def test_conv_transpose_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    inputs, attrs, constant = data.draw(transpose_cases(ort_safe=True, opset=opset))
    check("ConvTranspose", opset, inputs, attrs, constant=constant, **_tolerance(inputs[0].dtype))


@pytest.mark.parametrize("opset", CONV_OPSETS)
@settings(max_examples=15)
@given(data=st.data())
def test_conv_matches_the_schema(opset: int, data: st.DataObject) -> None:
    """Against the direct definition, the whole attribute space (SAME with dilation included),
    in float64 (onnxruntime has no double Conv)."""
    inputs, attrs, constant = data.draw(conv_cases(ort_safe=False))
    inputs = [None if v is None else v.astype(np.float64) for v in inputs]
    actual = ovpool_of("Conv", opset, inputs, attrs, constant=constant)[0]
    assert actual.dtype == np.float64
    np.testing.assert_allclose(actual, schema_conv(*inputs, attrs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("opset", TRANSPOSE_OPSETS)
@settings(max_examples=15)
@given(data=st.data())
def test_conv_transpose_matches_the_schema(opset: int, data: st.DataObject) -> None:
    """Against the direct definition with each version's crop rule, the whole attribute space
    (odd output_shape totals at version 1, kernel < stride with SAME, output_padding up to the
    dilation), in float64."""
    inputs, attrs, constant = data.draw(transpose_cases(ort_safe=False, opset=opset))
    inputs = [None if v is None else v.astype(np.float64) for v in inputs]
    version = 1 if opset < 11 else 11
    actual = ovpool_of("ConvTranspose", opset, inputs, attrs, constant=constant)[0]
    assert actual.dtype == np.float64
    np.testing.assert_allclose(actual, schema_conv_transpose(version, *inputs, attrs), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- worked examples


X4 = np.array([[[1, 2, 3, 4]]], dtype=np.float32)
W3 = np.array([[[1, 10, 100]]], dtype=np.float32)
FULL = [1, 10, 102, 20, 203, 30, 304, 40, 400]  # X4 spread by W3 at stride 2


@pytest.mark.parametrize(
    ("opset", "attrs", "expected"),
    [
        (7, {"output_shape": [8]}, FULL[:8]),
        (11, {"output_shape": [8]}, FULL[1:]),
        (22, {"output_shape": [8]}, FULL[1:]),
        (7, {"output_shape": [8], "auto_pad": "SAME_UPPER"}, FULL[1:]),
        (11, {"output_shape": [8], "auto_pad": "SAME_UPPER"}, FULL[:8]),
        (7, {"output_shape": [8], "auto_pad": "SAME_LOWER"}, FULL[:8]),
        (11, {"output_shape": [8], "auto_pad": "SAME_LOWER"}, FULL[1:]),
        (7, {"auto_pad": "SAME_UPPER"}, FULL[:8]),
        (7, {"auto_pad": "SAME_LOWER"}, FULL[1:]),
        (11, {"auto_pad": "SAME_UPPER"}, FULL[:8]),
        (11, {"auto_pad": "SAME_LOWER"}, FULL[1:]),
        (11, {"output_shape": [5]}, FULL[2:7]),
        (11, {"auto_pad": "VALID"}, FULL),
        (11, {"pads": [1, 2]}, FULL[1:7]),
        (11, {"output_padding": [1]}, [*FULL, 0]),
        (11, {"output_shape": [10]}, [*FULL, 0]),
        (7, {"output_shape": [11], "auto_pad": "SAME_UPPER"}, [*FULL, 0, 0]),
    ],
)
def test_conv_transpose_crop_by_version(opset: int, attrs: dict[str, Any], expected: list[int]) -> None:
    """Literal outputs worked out by hand from each version's text for X=[1,2,3,4], W=[1,10,100],
    stride 2 (full output FULL, 9 long): an output_shape of 8 leaves 1 to crop, which version 1 puts
    at the end and version 11 at the start."""
    actual = ovpool_of("ConvTranspose", opset, [X4, W3], {"strides": [2], **attrs})[0]
    np.testing.assert_array_equal(actual, np.array([[expected]], dtype=np.float32))


@pytest.mark.parametrize("opset", TRANSPOSE_OPSETS)
def test_conv_transpose_same_kernel_smaller_than_stride(opset: int) -> None:
    """k=1, s=2, L=4, SAME: the text's ``out = L * s`` is 8 (onnxruntime gives 7). Full output
    [1, 0, 2, 0, 3, 0, 4] is one short: the extra position goes at the high end for both SAME
    modes (a negative pad is no pad)."""
    w = np.ones((1, 1, 1), dtype=np.float32)
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        y = ovpool_of("ConvTranspose", opset, [X4, w], {"strides": [2], "auto_pad": auto_pad})[0]
        np.testing.assert_array_equal(y[0, 0], [1, 0, 2, 0, 3, 0, 4, 0])


@pytest.mark.parametrize("opset", TRANSPOSE_OPSETS)
def test_grouped_conv_transpose_bias_per_output_channel(opset: int) -> None:
    """Group 2, 3 outputs per group: output channel 4 is group 1's channel 1 and gets B[4]
    (onnx.reference adds B[0] to every group)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    b = np.array([1, 2, 3, 40, 50, 60], dtype=np.float32)
    for constant in ((), (1, 2)):
        y = check("ConvTranspose", opset, [x, w, b], {"group": 2, "strides": [2, 1]}, constant=constant, rtol=1e-5, atol=1e-5)[0]
        without = ovpool_of("ConvTranspose", opset, [x, w], {"group": 2, "strides": [2, 1]})[0]
        np.testing.assert_allclose(y - without, np.broadcast_to(b.reshape(1, 6, 1, 1), y.shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", CONV_OPSETS)
def test_conv_same_stride_2(opset: int) -> None:
    """L=7, k=3, s=2 SAME: ceil(7/2) = 4 outputs at every version, pads (1, 1); windows
    [0,1,2] [2,3,4] [4,5,6] [6,7,0] of X=1..7 (Conv-1's "match the input" is not 7 outputs)."""
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    w = np.ones((1, 1, 3), dtype=np.float32)
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        y = check("Conv", opset, [x, w], {"auto_pad": auto_pad, "strides": [2]})[0]
        np.testing.assert_array_equal(y[0, 0], [3, 9, 15, 13])


@pytest.mark.parametrize("opset", CONV_OPSETS)
def test_conv_same_with_dilation(opset: int) -> None:
    """L=6, k=2, d=3 (kd=4), s=1 SAME: total pad 3, UPPER (1, 2), LOWER (2, 1). onnxruntime refuses
    dilation with SAME; X=[1..6], W=[1, 10]: UPPER y[o] = X[o-1] + 10 X[o+2] (0-based, zero outside)."""
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    w = np.array([[[1, 10]]], dtype=np.float32)
    upper = ovpool_of("Conv", opset, [x, w], {"auto_pad": "SAME_UPPER", "dilations": [3]})[0]
    lower = ovpool_of("Conv", opset, [x, w], {"auto_pad": "SAME_LOWER", "dilations": [3]})[0]
    np.testing.assert_array_equal(upper[0, 0], [30, 41, 52, 63, 4, 5])
    np.testing.assert_array_equal(lower[0, 0], [20, 30, 41, 52, 63, 4])


@pytest.mark.parametrize(
    ("op", "x_shape", "w_shape", "attrs"),
    [
        ("Conv", (1, 2, 8, 8), (2, 1, 3, 3), {"group": 2, "strides": [2**32, 2**32], "auto_pad": "SAME_UPPER"}),
        ("Conv", (1, 2, 8, 8), (3, 2, 3, 3), {"strides": [2**32, 2], "pads": [1, 1, 1, 1]}),
        ("Conv", (1, 2, 7, 5), (3, 2, 1, 1), {"strides": [2**32, 2]}),
        ("ConvTranspose", (1, 2, 1, 4), (2, 1, 3, 3), {"group": 2, "strides": [2**32, 2]}),
        ("ConvTranspose", (1, 2, 1, 1), (2, 3, 3, 3), {"strides": [2**40, 2**40], "dilations": [2, 2], "pads": [1, 0, 0, 1]}),
    ],
)
@pytest.mark.parametrize("opset", CONV_OPSETS)  # ConvTranspose's since-versions are the same (asserted above)
def test_a_stride_longer_than_the_axis(
    op: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any], opset: int
) -> None:
    """A Conv axis with one output, or a ConvTranspose axis with one input, never uses its stride:
    stride 2**32 over 8 cells reads one window from cell 0 (SAME: total pad max(0, 0 * 2**32 + 3 - 8)
    = 0), computed at once instead of splitting the axis into 2**32 phases. Against the schema
    text, in float64 (onnxruntime reads SAME from a negative pad here, and takes no 2**32)."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    actual = ovpool_of(op, opset, [x, w], attrs)[0]
    version = 1 if opset < 11 else 11
    expected = schema_conv(x, w, None, attrs) if op == "Conv" else schema_conv_transpose(version, x, w, None, attrs)
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("op", "w_shape", "attrs", "match"),
    [
        ("ConvTranspose", (1, 1, 3, 3), {"strides": [2**20, 2**20]}, r"convtranspose_node.*output \[1, 1, 1048579, 1048579\]"),
        ("Conv", (1, 1, 3, 3), {"pads": [2**20, 2**20, 2**20, 2**20]}, r"conv_node.*output \[1, 1, 2097152, 2097152\]"),
        (
            "Conv",
            (1, 1, 3, 3),
            {"pads": [2**20, 2**20, 2**20, 2**20], "strides": [2**20, 2**20]},
            r"conv_node.*padded input \[1, 1, 2097154, 2097154\] float32 would need 16\.0 TiB",
        ),
    ],
)
@pytest.mark.parametrize("opset", CONV_OPSETS)
def test_sizes_over_the_budget_are_refused_before_any_work(
    op: str, w_shape: tuple[int, ...], attrs: dict[str, Any], match: str, opset: int
) -> None:
    """Sizes the run alone knows (an IR declares the output it likes; a dynamic input hides it
    from shape inference) within the memory budget before any work: ConvTranspose with strides
    2**20 over 2x2 gives 1048579 x 1048579 (4 TiB, and 2**40 phase planes that filled the memory
    first); Conv pads of 2**20 either side give 2097152 x 2097152 outputs, or with strides 2**20
    a 3 x 3 output read from a 16 TiB padded input."""
    x = np.ones((1, 1, 2, 2), dtype=np.float32)
    with pytest.raises(MemoryBudgetError, match=match):
        ovpool_of(op, opset, [x, np.ones(w_shape, dtype=np.float32)], attrs)


def test_bfloat16_at_version_22() -> None:
    """Conv-22 and ConvTranspose-22 allow bfloat16 (onnxruntime has no kernel): computed in float32
    and given back as bfloat16."""
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (1, 2, 5, 5)).astype(bf16)
    w = rng.uniform(-1, 1, (2, 2, 3, 3)).astype(bf16)
    y = ovpool_of("Conv", 22, [x, w], {"pads": [1, 1, 1, 1]})[0]
    assert y.dtype == bf16
    expected = schema_conv(x.astype(np.float32), w.astype(np.float32), None, {"pads": [1, 1, 1, 1]})
    np.testing.assert_allclose(y.astype(np.float32), expected, rtol=2e-2, atol=2e-2)
    t = ovpool_of("ConvTranspose", 22, [x, w], {"strides": [2, 2]})[0]
    assert t.dtype == bf16
    expected = schema_conv_transpose(11, x.astype(np.float32), w.astype(np.float32), None, {"strides": [2, 2]})
    np.testing.assert_allclose(t.astype(np.float32), expected, rtol=2e-2, atol=2e-2)
    with pytest.raises(ModelError, match="bfloat16"):
        ovpool_of("Conv", 11, [x, w], {})


@pytest.mark.parametrize(("method", "tile_bytes"), [("taps", 900), ("taps", 40), ("im2col", 900)])
def test_tiles_and_batch_chunks(method: str, tile_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny tile and column budgets: the depthwise tap loop runs over tiles of 2-3 planes (a last
    short one), or at 40 bytes over one plane at a time in bands of 1 or 3 output rows (a last
    short one), and im2col builds its columns one image at a time; all agree with onnxruntime."""
    monkeypatch.setattr(conv_taps, "TILE_BYTES", tile_bytes)
    monkeypatch.setattr(conv_gemm, "COLS_BYTES", 1)
    rng = np.random.default_rng(3)
    cg = 1 if method == "taps" else 2
    x = rng.standard_normal((3, 5 * cg, 9, 8)).astype(np.float32)
    w = rng.standard_normal((5, cg, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    for attrs in ({"pads": [1, 2, 0, 1]}, {"strides": [2, 3], "dilations": [1, 2]}):
        check("Conv", 13, [x, w, b], {"group": 5, **attrs}, constant=(1,), rtol=1e-4, atol=1e-4)


def _routed(patch: pytest.MonkeyPatch, way: str) -> None:
    """Every im2col Conv of two taps or more (``"shifted"``), or every Conv of 1-3 spatial axes
    but the 1x1 ones (``"compiled"``), sent that way whatever its size and channels; with
    ``"im2col"`` every im2col Conv builds its columns by blocks, however small (no gathered
    columns, ``_conv_gathered``)."""
    if way == "im2col":
        patch.setattr(conv_forward, "SMALL_COLUMNS", 0)
        patch.setattr(conv_forward, "route", lambda x_shape, w_shape, plan: plan.method)
        return

    def route(x_shape: tuple[int, ...], w_shape: tuple[int, ...], plan: Any) -> str:
        if way == "shifted":
            return way if plan.method == "im2col" and math.prod(w_shape[2:]) >= 2 else plan.method
        return way if plan.method != "pointwise" and len(plan.out) <= 3 else plan.method

    patch.setattr(conv_forward, "route", route)


needs_blas = pytest.mark.skipif(conv_forward.gemm_for(np.dtype(np.float32)) is None, reason="numpy has no OpenBLAS here")
needs_compiled_taps = pytest.mark.skipif(
    conv_forward.taps_for(np.dtype(np.float32)) is None, reason="ovpool's compiled tap loop was not built here"
)
WAYS = [pytest.param("shifted", marks=needs_blas), pytest.param("compiled", marks=needs_compiled_taps), "im2col"]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("opset", CONV_OPSETS)
@examples(20)
@given(data=st.data())
def test_each_route_matches_onnxruntime(way: str, opset: int, data: st.DataObject) -> None:
    """The drawn cases (strides, dilations, SAME pads, 1-3 spatial axes, groups, batches of 2)
    with every kernel sent one way: as shifted products, or through the compiled loop (dense and
    grouped ones as a direct convolution, channel by channel)."""
    inputs, attrs, constant = data.draw(conv_cases(ort_safe=True))
    with pytest.MonkeyPatch.context() as patch:
        _routed(patch, way)
        check("Conv", opset, inputs, attrs, constant=constant, **_tolerance(inputs[0].dtype))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("opset", CONV_OPSETS)
@examples(10)
@given(data=st.data())
def test_each_route_matches_the_schema_in_float64(way: str, opset: int, data: st.DataObject) -> None:
    """float64 (OpenBLAS's dgemm, the loop's double form) against the direct definition, SAME
    with dilation included."""
    inputs, attrs, constant = data.draw(conv_cases(ort_safe=False))
    inputs = [None if v is None else v.astype(np.float64) for v in inputs]
    with pytest.MonkeyPatch.context() as patch:
        _routed(patch, way)
        actual = ovpool_of("Conv", opset, inputs, attrs, constant=constant)[0]
    np.testing.assert_allclose(actual, schema_conv(*inputs, attrs), rtol=1e-10, atol=1e-12)


@needs_blas
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs", "shifted"),
    [
        ((1, 16, 80, 80), (16, 16, 3, 3), {"pads": [1, 1, 1, 1]}, True),
        ((1, 16, 160, 160), (16, 16, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, True),
        ((1, 16, 10, 10), (16, 16, 3, 3), {"pads": [1, 1, 1, 1]}, False),  # too small a product
        ((1, 96, 26, 26), (96, 96, 3, 3), {"pads": [1, 1, 1, 1]}, True),  # 728 cells at stride 1
        ((1, 128, 20, 20), (256, 128, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}, False),  # 210 at stride 2
        ((1, 16, 80, 6), (16, 16, 3, 3), {}, False),  # 6 columns a row for 4 outputs
    ],
)
def test_shifted_products_where_they_pay(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any], shifted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sizes past the SHIFT_* bounds take shifted products (at default bounds), and agree with
    onnxruntime either way."""
    calls: list[tuple[int, ...]] = []
    original = conv_module._conv_shifted

    def spy(x: np.ndarray, *rest: Any) -> np.ndarray:
        calls.append(x.shape)
        return original(x, *rest)

    monkeypatch.setattr(conv_forward, "_conv_shifted", spy)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape, w_shape[:1])]
    check("Conv", 11, inputs, attrs, constant=(1, 2), rtol=1e-4, atol=1e-4)
    assert bool(calls) is shifted


@needs_compiled_taps
@examples(40)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_compiled_taps_give_numpys_bits(data: st.DataObject, dtype: type) -> None:
    """The compiled depthwise loop (``_compiled.c``) against the numpy loop it replaces, bit for bit,
    over 1-3 spatial axes, strides, dilations, pads, 1-2 outputs per group (numpy's tap loop
    takes those), batches, with and without bias, and inputs holding NaN, infinities and
    negative zeros; the extension's plain loops, its AVX2 ones and its AVX-512 ones alike."""
    rank = data.draw(st.integers(1, 3))
    channels, mg, n = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    kernel = data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    strides = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = data.draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    pads = data.draw(st.lists(st.integers(0, 2), min_size=2 * rank, max_size=2 * rank))
    sizes = [
        max(1, (k - 1) * d + 1 - pads[i] - pads[rank + i]) + data.draw(st.integers(0, 40 // rank))
        for i, (k, d) in enumerate(zip(kernel, dilations))
    ]
    rng = drawn_rng(data.draw)
    x = rng.standard_normal((n, channels, *sizes)).astype(dtype)
    x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
    w = rng.standard_normal((channels * mg, 1, *kernel)).astype(dtype)
    b = rng.standard_normal(channels * mg).astype(dtype) if data.draw(st.booleans()) else None
    attrs = {"group": channels, "kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads}
    form = data.draw(st.sampled_from(["plain", "avx2", "widest"]))  # the extension's loops; each where there
    compiled_module.plain_only(form == "plain")
    compiled_module.taps_avx2_only(form == "avx2")
    try:
        compiled = ovpool_of("Conv", 11, [x, w, b], attrs, constant=(1, 2))[0]
    finally:
        compiled_module.plain_only(False)
        compiled_module.taps_avx2_only(False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv_forward, "taps_for", lambda dtype: None)
        plain = ovpool_of("Conv", 11, [x, w, b], attrs, constant=(1, 2))[0]
    assert compiled.shape == plain.shape and compiled.tobytes() == plain.tobytes()


@examples(30)
@given(data=st.data())
def test_gathered_columns_give_the_bits_of_im2col(data: st.DataObject) -> None:
    """A small Conv's columns gathered in one indexing (``_conv_gathered``) are the columns
    ``_conv_im2col`` builds: the same product, bit for bit, over the drawn cases."""
    inputs, attrs, constant = data.draw(conv_cases(ort_safe=False))
    gathered = ovpool_of("Conv", 11, inputs, attrs, constant=constant)[0]
    with pytest.MonkeyPatch.context() as patch:
        _routed(patch, "im2col")
        blocks = ovpool_of("Conv", 11, inputs, attrs, constant=constant)[0]
    assert gathered.shape == blocks.shape and gathered.tobytes() == blocks.tobytes()


def test_small_convs_gather_their_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """silero's encoder Conv, (1, 129, 3) by 128x129x3 with pads 1 (387 x 3 column values), takes
    the gathered columns; a (1, 16, 20, 20) 3x3 one (57,600) builds them by blocks."""
    calls: list[tuple[int, ...]] = []
    original = conv_module._conv_gathered
    monkeypatch.setattr(conv_forward, "_conv_gathered", lambda x, *rest: (calls.append(x.shape), original(x, *rest))[1])
    rng = np.random.default_rng(8)
    for x_shape, w_shape in (((1, 129, 3), (128, 129, 3)), ((1, 3, 20, 20), (4, 3, 3, 3))):
        inputs = [rng.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape, w_shape[:1])]
        pads = [1] * (2 * (len(x_shape) - 2))
        check("Conv", 11, inputs, {"pads": pads}, constant=(1, 2), rtol=1e-4, atol=1e-4)
    assert set(calls) == {(1, 129, 3)}


@needs_compiled_taps
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", ["plain", "avx2", "widest"])
def test_compiled_taps_over_thin_planes_give_numpys_bits(dtype: type, form: str) -> None:
    """Thin planes (2-3 rows of 32-161, the rows computed straight into the output), small ones
    (14x14, 28x28: several rows a span of vectors; 7x7) and a 3-D case, 5x5 pads 2 with and
    without stride 2 and a 1-D one of 200, every length of a last span (1-8 vectors, each lane
    count), the extension's every form: numpy's loop's bits."""
    rng = np.random.default_rng(11)
    cases: list[tuple[tuple[int, ...], list[int], list[int]]] = [((3, 2, width), [5, 5], [1, 1]) for width in range(32, 162, 7)]
    cases += [((2, 3, 96), [5, 5], [2, 2]), ((2, 200), [5], [1]), ((2, 2, 3, 40), [3, 3, 3], [1, 1, 1])]
    cases += [((4, 14, 14), [5, 5], [1, 1]), ((3, 28, 28), [3, 3], [1, 1]), ((2, 7, 7), [3, 3], [1, 1])]
    compiled_module.plain_only(form == "plain")
    compiled_module.taps_avx2_only(form == "avx2")
    try:
        for (channels, *sizes), kernel, strides in cases:
            x = rng.standard_normal((1, channels, *sizes)).astype(dtype)
            x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
            w = rng.standard_normal((channels, 1, *kernel)).astype(dtype)
            b = rng.standard_normal(channels).astype(dtype)
            attrs = {"group": channels, "kernel_shape": kernel, "strides": strides, "pads": [k // 2 for k in kernel] * 2}
            compiled = ovpool_of("Conv", 11, [x, w, b], attrs, constant=(1, 2))[0]
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(conv_forward, "taps_for", lambda dtype: None)
                plain = ovpool_of("Conv", 11, [x, w, b], attrs, constant=(1, 2))[0]
            assert compiled.shape == plain.shape and compiled.tobytes() == plain.tobytes(), (x.shape, kernel, strides)
    finally:
        compiled_module.plain_only(False)
        compiled_module.taps_avx2_only(False)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "group"),
    [
        ((2, 6, 5, 7), (4, 3, 1, 1), 2),  # grouped 1x1 (a matmul), two images
        ((1, 8, 300, 120), (8, 8, 1, 1), 1),  # past SMALL_ADD
        ((2, 4, 9, 9), (6, 2, 3, 3), 2),  # grouped im2col in one block
    ],
)
def test_bias_added_compiled_or_by_numpy(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], group: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bias of matmul Convs (1x1, im2col), added by the extension's one pass or by numpy's
    broadcast add, each output channel's own: onnxruntime's values."""
    if not compiled:
        monkeypatch.setattr(conv_buffers, "bias_for", lambda dtype: None)
    monkeypatch.setattr(conv_forward, "route", lambda x_shape, w_shape, plan: plan.method)
    rng = np.random.default_rng(8)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape, w_shape[:1])]
    inputs[2] *= 10  # a bias that dwarfs the products: a channel's wrong bias shows
    check("Conv", 11, inputs, {"group": group}, constant=(1, 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("way", [None, *WAYS])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "group"),
    [
        ((1, 4, 4, 5), (0, 4, 3, 3), 1),
        ((1, 1, 4, 5), (0, 1, 3, 3), 1),  # depthwise-like weights: the tap loop
        ((1, 0, 4, 5), (0, 0, 3, 3), 1),
        ((2, 0, 4, 5), (0, 0, 3, 3), 2),
        ((1, 4, 4, 5), (0, 2, 3, 3), 2),
    ],
)
def test_no_output_channels_give_an_empty_output(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], group: int, way: str | None
) -> None:
    """W of no output channels (and X of none) gives (N, 0, *out), as onnxruntime does, whatever
    the route (its own, shifted products, the compiled loop)."""
    inputs = [np.ones(s, dtype=np.float32) for s in (x_shape, w_shape, w_shape[:1])]
    with pytest.MonkeyPatch.context() as patch:
        if way is not None:
            _routed(patch, way)
        check("Conv", 11, inputs, {"group": group, "pads": [1, 1, 1, 1]}, constant=(1, 2))


@pytest.mark.parametrize(("x_shape", "w_shape"), [((1, 2, 3, 3), (2, 0, 3, 3)), ((1, 0, 3, 3), (0, 2, 3, 3))])
def test_conv_transpose_of_no_channels(x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> None:
    """ConvTranspose with no output channels, or from no input channels (zeros): onnxruntime's."""
    inputs = [np.ones(s, dtype=np.float32) for s in (x_shape, w_shape)]
    check("ConvTranspose", 11, inputs, {}, constant=(1,))


@pytest.mark.parametrize(
    ("w_shape", "group", "way"),
    [
        ((16, 1, 3, 3), 16, "compiled"),  # depthwise
        ((64, 1, 3, 3), 1, "compiled"),  # one input channel
        ((32, 4, 3, 3), 8, "compiled"),  # grouped, 4 channels a group
        ((16, 3, 3, 3), 1, "compiled" if compiled_module.taps_avx512() else "im2col"),  # dense from 3 channels
        ((16, 16, 3, 3), 1, "shifted"),
        ((16, 16, 1, 1), 1, "pointwise"),
    ],
)
def test_routes(w_shape: tuple[int, ...], group: int, way: str) -> None:
    """Which Convs go where (where the compiled code is at hand), on a 1x?x80x80 input, pads 1."""
    x_shape = (1, w_shape[1] * group, 80, 80)
    pads = (1, 1) if w_shape[2] == 3 else (0, 0)
    plan = conv_module.ConvPlan(conv_module.conv_method(w_shape, group, None), group, (1, 1), (1, 1), pads, pads, (80, 80))
    assert conv_module.route(x_shape, w_shape, plan) == way


def test_a_long_kernel_over_few_outputs_stays_a_matmul() -> None:
    """silero's STFT: 256 taps from one channel to 258, stride 128, 4 outputs: im2col's one matmul."""
    plan = conv_module.ConvPlan("im2col", 1, (128,), (1,), (0,), (0,), (4,))
    assert conv_module.route((1, 1, 576), (258, 1, 256), plan) == "im2col"


@pytest.mark.parametrize("abi", [None, compiled_module.ABI + 1])
def test_an_extension_of_another_version_is_not_used(abi: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale build of ``_compiled.c`` (no ABI function, or another number) is left alone: the
    depthwise loop runs in numpy, and the result still agrees with onnxruntime."""

    class Stale:
        def __init__(self, path: str) -> None:
            if abi is not None:
                self.ovpool_compiled_abi = lambda: abi

    caches = (conv_forward.taps_for, compiled_module._library)
    for cache in caches:
        cache.cache_clear()
    monkeypatch.setattr(compiled_module.ctypes, "CDLL", Stale)
    try:
        assert compiled_module._library() is None and conv_forward.taps_for(np.dtype(np.float32)) is None
        rng = np.random.default_rng(7)
        depthwise = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 9, 9), (4, 1, 3, 3), (4,))]
        check("Conv", 11, depthwise, {"pads": [1, 1, 1, 1], "group": 4}, constant=(1,), rtol=1e-4, atol=1e-4)
    finally:
        monkeypatch.undo()
        for cache in caches:
            cache.cache_clear()


def test_address_is_numpy_ctypes_data() -> None:
    """``compiled.address`` (the extension's buffer-protocol read where it is built) gives
    ``a.ctypes.data`` for contiguous, strided, reversed, read-only, 0-d and empty arrays."""
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    frozen = np.ones(3)
    frozen.flags.writeable = False
    for a in (base, base[:, ::2], base[::-1], base.T, frozen, np.zeros((), np.float64), np.zeros((0, 3), np.int64)):
        assert compiled_module.address(a) == a.ctypes.data


def test_without_compiled_code_conv_keeps_numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OVPOOL_COMPILED=0`` (or a numpy without OpenBLAS, an install without a C compiler) leaves
    im2col and the depthwise taps to numpy alone."""
    caches = (conv_forward.gemm_for, conv_forward.taps_for, compiled_module._library)
    for cache in caches:
        cache.cache_clear()
    monkeypatch.setenv("OVPOOL_COMPILED", "0")
    try:
        assert conv_forward.gemm_for(np.dtype(np.float32)) is None
        assert conv_forward.taps_for(np.dtype(np.float32)) is None
        _routed(monkeypatch, "shifted")
        rng = np.random.default_rng(6)
        inputs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 9, 9), (6, 4, 3, 3), (6,))]
        check("Conv", 11, inputs, {"pads": [1, 0, 1, 2]}, constant=(1,), rtol=1e-4, atol=1e-4)
        depthwise = [rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 9, 9), (4, 1, 3, 3), (4,))]
        check("Conv", 11, depthwise, {"pads": [1, 0, 1, 2], "group": 4}, constant=(1,), rtol=1e-4, atol=1e-4)
    finally:
        for cache in caches:
            cache.cache_clear()


@pytest.mark.parametrize(("w_shape", "attrs"), [((4, 1, 3, 3), {"group": 4}), ((4, 4, 3, 3), {}), ((4, 4, 1, 1), {})])
def test_numpy_buffer_size_is_left_as_found(w_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    """The kernels shrink numpy's ufunc buffer while they run (``small_ufunc_buffers``) and give the
    caller's size back, also when they fail."""
    x = np.ones((1, 4, 6, 6), dtype=np.float32)
    old = np.setbufsize(4096)
    try:
        ovpool_of("Conv", 11, [x, np.ones(w_shape, np.float32), np.ones(4, np.float32)], attrs)
        assert np.getbufsize() == 4096
        with pytest.raises(RuntimeError), conv_module.small_ufunc_buffers():
            assert np.getbufsize() == conv_module.UFUNC_BUFFER
            raise RuntimeError
        assert np.getbufsize() == 4096
    finally:
        np.setbufsize(old)


@pytest.mark.parametrize(
    ("w_shape", "attrs"), [((4, 2, 3, 3), {"group": 2}), ((4, 1, 3, 3), {"group": 4}), ((4, 2, 1, 1), {"group": 2})]
)
def test_empty_batch(w_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    """A batch of 0 images gives 0 outputs of the right shape on every method (im2col, taps, 1x1)."""
    x = np.zeros((0, 4, 5, 5), dtype=np.float32)
    check("Conv", 11, [x, np.ones(w_shape, np.float32)], {**attrs, "pads": [1, 1, 1, 1] if w_shape[2] == 3 else [0, 0, 0, 0]})
    check("ConvTranspose", 11, [x, np.ones((4, 2, 3, 3), np.float32)], {"group": 2})


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_constant_weights_run_again_as_the_first_time(dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Conv of constant W and B resolves its route once per X shape and type, then runs it:
    every run of a shape gives the first run's bits (another shape between them), and a run whose
    output no longer fits the budget is still refused naming the node (the (1, 6, 5, 5) float32
    output is 600 bytes)."""
    from harness import make_model

    from ovpool.engine.graph import GraphSession

    rng = np.random.default_rng(5)
    w, b = rng.uniform(-1, 1, (6, 4, 3, 3)).astype(dtype), rng.uniform(-1, 1, 6).astype(dtype)
    x, other = (rng.uniform(-1, 1, s).astype(dtype) for s in ((1, 4, 5, 5), (2, 4, 7, 6)))
    session = GraphSession(make_model("Conv", 11, [x, w, b], {"pads": [1, 1, 1, 1]}, constant=(1, 2)))
    first = session.run({"x0": x})["y0"]
    expected = schema_conv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), {"pads": [1, 1, 1, 1]})
    np.testing.assert_allclose(
        first, expected, **({"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 2e-2, "atol": 2e-2})
    )
    assert first.dtype == dtype
    session.run({"x0": other})
    np.testing.assert_array_equal(session.run({"x0": x})["y0"], first)
    monkeypatch.setenv("OVPOOL_MAX_MEMORY", "100")
    with pytest.raises(MemoryBudgetError, match=r"conv_node.*: output \[1, 6, 5, 5\]"):
        session.run({"x0": x})


# ----------------------------------------------------------------------------------- errors


def _fails(op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any], match: str, constant=()) -> None:
    with pytest.raises(ModelError, match=match):
        ovpool_of(op, opset, inputs, attrs, constant=constant)


@pytest.mark.parametrize("constant", [(), (1,)])
def test_bad_models_are_model_errors(constant: tuple[int, ...]) -> None:
    x = np.zeros((1, 4, 5, 5), dtype=np.float32)
    w = np.zeros((6, 2, 3, 3), dtype=np.float32)
    _fails("Conv", 11, [x, w], {"group": 2, "auto_pad": "SAME_UPPER", "pads": [1, 1, 1, 1]}, "'pads'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "auto_pad": "SAME"}, "'auto_pad'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "kernel_shape": [3, 2]}, "'kernel_shape'", constant)
    _fails("Conv", 11, [x, w], {"group": 3}, "'group'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "strides": [0, 1]}, "'strides'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "strides": [1, 1, 1]}, "'strides'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "pads": [-1, 0, 0, 0]}, "'pads'", constant)
    _fails("Conv", 11, [x, w], {"group": 2, "dilations": [3, 3]}, "smaller than the dilated kernel", constant)
    _fails("Conv", 11, [x, w, np.zeros(5, np.float32)], {"group": 2}, "B has shape", constant)
    _fails("Conv", 11, [x, w, np.zeros(6, np.float64)], {"group": 2}, "B is float64", constant)
    _fails("Conv", 11, [x[0], w], {"group": 2}, "rank", constant)
    wt = np.zeros((4, 3, 3, 3), dtype=np.float32)
    _fails("ConvTranspose", 11, [x, wt], {"strides": [2, 2], "output_padding": [2, 0]}, "'output_padding'", constant)
    _fails("ConvTranspose", 11, [x, wt], {"pads": [5, 0, 5, 0]}, "'pads'", constant)
    _fails("ConvTranspose", 11, [x, wt], {"output_shape": [9]}, "'output_shape'", constant)
    _fails("ConvTranspose", 11, [x, wt], {"group": 3}, "'group'", constant)
    _fails("ConvTranspose", 11, [x, wt.astype(np.float64)], {}, "one type T", constant)
    _fails("ConvTranspose", 11, [x.astype(np.int32), wt.astype(np.int32)], {}, "float types", constant)


def test_output_padding_at_version_1_has_no_limit() -> None:
    """ConvTranspose-1 states no bound on output_padding: 2 with stride 2 adds two empty positions
    (onnxruntime refuses it at every opset)."""
    y = ovpool_of("ConvTranspose", 7, [X4, W3], {"strides": [2], "output_padding": [2]})[0]
    np.testing.assert_array_equal(y[0, 0], [*FULL, 0, 0])


# ------------------------------------------------------------------------- ONNX node cases


@pytest.mark.parametrize("case", node_case_params(("Conv", "ConvTranspose")))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case, atol=1e-5)

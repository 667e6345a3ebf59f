"""DeformConv (19, 22) against onnxruntime at both since-versions (2-D, float32/float64/float16),
against the schema computed here one output value at a time (``schema_deform_conv``) where
onnxruntime cannot run the case (1-D, 3-D, bfloat16), and ONNX's own node test cases.

onnxruntime 1.31.1 computes in the input's type (float32 sums of products: a few float32 steps
from ovpool's float64 sums rounded once) and runs 2-D inputs only.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from harness import assert_node_error, check, check_node_case, drawn_rng, examples, node_case_params, ovpool_of, since_opsets
from hypothesis import given
from hypothesis import strategies as st

from ovpool.dtypes import np_dtype

VERSIONS = since_opsets("DeformConv")  # [19, 22]
F32 = {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize("case", node_case_params(["DeformConv"]))
def test_node_cases(case: Any) -> None:
    check_node_case(case, rtol=1e-5, atol=1e-5)


# --- the schema, one output value at a time -----------------------------------------------------------


def _pixel(image: np.ndarray, position: tuple[float, ...]) -> float:
    """``image`` (spatial only) read N-linearly at ``position``; pixels outside the image are 0."""
    if not all(math.isfinite(p) for p in position):
        return math.nan
    total = 0.0
    for corner in itertools.product((0, 1), repeat=len(position)):
        index = tuple(math.floor(p) + c for p, c in zip(position, corner))
        weight = math.prod((p - math.floor(p)) if c else 1 - (p - math.floor(p)) for p, c in zip(position, corner))
        if all(0 <= i < n for i, n in zip(index, image.shape)):
            total += weight * float(image[index])
    return total


def schema_deform_conv(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    b: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    group: int = 1,
    offset_group: int = 1,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
    dilations: list[int] | None = None,
) -> np.ndarray:
    """DeformConv from the schema text (tiny inputs only), in float64: output o of channel m sums,
    over its group's input channels and the kernel taps t, W[m, c', t] * mask * X[n, c] read at
    o * stride - pad_begin + t * dilation + offset (offset group c // (C / offset_group)), plus B[m]."""
    n, c = x.shape[:2]
    m, kernel = w.shape[0], w.shape[2:]
    r = len(kernel)
    pads = pads or [0] * (2 * r)
    strides = strides or [1] * r
    dilations = dilations or [1] * r
    out = offset.shape[2:]
    taps = list(np.ndindex(*kernel))
    y = np.zeros((n, m, *out))
    for batch, channel in itertools.product(range(n), range(m)):
        g = channel // (m // group)
        for o in np.ndindex(*out):
            total = 0.0 if b is None else float(b[channel])
            for ci in range(c // group):
                cin = g * (c // group) + ci
                og = cin // (c // offset_group)
                for k, t in enumerate(taps):
                    moves = [float(offset[(batch, (og * len(taps) + k) * r + a, *o)]) for a in range(r)]
                    position = tuple(o[a] * strides[a] - pads[a] + t[a] * dilations[a] + moves[a] for a in range(r))
                    scale = 1.0 if mask is None else float(mask[(batch, og * len(taps) + k, *o)])
                    total += float(w[(channel, ci, *t)]) * scale * _pixel(x[batch, cin].astype(np.float64), position)
            y[(batch, channel, *o)] = total
    return y


def _out(size: int, k: int, pad: int, stride: int, dilation: int) -> int:
    """Conv's output length, as the test's own arithmetic."""
    return (size + pad - (k - 1) * dilation - 1) // stride + 1


@st.composite
def deform_cases(draw: Any, rank: int = 2, dtype: Any = np.float32) -> dict[str, Any]:
    """Inputs and attributes of one DeformConv: groups, offset groups, pads, strides, dilations,
    offsets of up to 3 pixels (many positions fall outside), bias and mask or not."""
    rng = drawn_rng(draw)
    group, offset_group = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2]))
    c = group * offset_group * draw(st.integers(1, 2))
    m = group * draw(st.integers(1, 2))
    n = draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 2)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [draw(st.integers(0, 2)) for _ in range(2 * rank)]
    spatial = [(k - 1) * d + 1 + draw(st.integers(0, 3)) for k, d in zip(kernel, dilations)]
    out = [
        _out(s, k, pads[a] + pads[a + rank], st_, d) for a, (s, k, st_, d) in enumerate(zip(spatial, kernel, strides, dilations))
    ]
    taps = math.prod(kernel)
    inputs: list[Any] = [
        rng.standard_normal((n, c, *spatial)).astype(dtype),
        rng.standard_normal((m, c // group, *kernel)).astype(dtype),
        (rng.standard_normal((n, offset_group * taps * rank, *out)) * 1.5).astype(dtype),
        rng.standard_normal(m).astype(dtype) if draw(st.booleans()) else None,
        rng.random((n, offset_group * taps, *out)).astype(dtype) if draw(st.booleans()) else None,
    ]
    attrs = {"group": group, "offset_group": offset_group, "pads": pads, "strides": strides, "dilations": dilations}
    if draw(st.booleans()):
        attrs["kernel_shape"] = kernel
    return {"inputs": inputs, "attrs": attrs}


def _schema_of(case: dict[str, Any]) -> np.ndarray:
    x, w, offset, b, mask = case["inputs"]
    keys = ("group", "offset_group", "pads", "strides", "dilations")
    return schema_deform_conv(x, w, offset, b, mask, **{k: case["attrs"][k] for k in keys})


# --- against onnxruntime ---------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", VERSIONS)
@examples(15)
@given(data=st.data())
def test_matches_onnxruntime(opset: int, data: st.DataObject) -> None:
    case = data.draw(deform_cases())
    check("DeformConv", opset, case["inputs"], case["attrs"], **F32)


@pytest.mark.parametrize("opset", VERSIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_other_types_match_onnxruntime(opset: int, dtype: Any) -> None:
    """float64 to 1e-12; float16: onnxruntime sums in float16 (ovpool once), so within 1e-2."""
    rng = np.random.default_rng(opset)
    x, w = rng.standard_normal((2, 4, 6, 5)).astype(dtype), rng.standard_normal((4, 2, 3, 3)).astype(dtype)
    offset = (rng.standard_normal((2, 2 * 9 * 2, 6, 3)) * 2).astype(dtype)
    mask, b = rng.random((2, 18, 6, 3)).astype(dtype), rng.standard_normal(4).astype(dtype)
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else {"rtol": 1e-2, "atol": 1e-2}
    check("DeformConv", opset, [x, w, offset, b, mask], {"group": 2, "offset_group": 2, "pads": [1, 0, 1, 0]}, **tol)


def test_positions_at_and_beyond_the_edges() -> None:
    """Offsets landing exactly on -1, the last pixel, between it and the outside, and far away."""
    x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 1, 1))
    offset = np.zeros((1, 2, 4, 4))
    offset[0, 0] = [[-1, -0.5, 0, 0.5], [1e9, -1e9, 3.5, np.inf], [0, 0, 0, 0], [0.25, 0.75, -3, 2]]
    offset[0, 1] = [[0, 0, -1, -0.5], [0, 0, 0.5, 0], [0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5]]
    (ours,) = ovpool_of("DeformConv", 19, [x, w, offset])
    offset[0, 0, 1, 3] = 100  # onnxruntime reads an infinite position as outside; ovpool as NaN
    expected = schema_deform_conv(x, w, offset)
    expected[0, 0, 1, 3] = math.nan
    np.testing.assert_allclose(ours, expected, rtol=1e-15, atol=1e-15)
    offset[0, 0, 1, 3] = 100
    check("DeformConv", 19, [x, w, offset], rtol=1e-15, atol=1e-15)


def test_empty_batch() -> None:
    x, w = np.zeros((0, 2, 3, 3), np.float32), np.ones((2, 2, 2, 2), np.float32)
    check("DeformConv", 19, [x, w, np.zeros((0, 8, 2, 2), np.float32)])


# --- against the schema where onnxruntime has no kernel ---------------------------------------------------


@pytest.mark.parametrize("rank", [1, 3])
@pytest.mark.parametrize("opset", VERSIONS)
@examples(6)
@given(data=st.data())
def test_other_ranks_match_the_schema(rank: int, opset: int, data: st.DataObject) -> None:
    case = data.draw(deform_cases(rank=rank, dtype=np.float64))
    (actual,) = ovpool_of("DeformConv", opset, case["inputs"], case["attrs"])
    np.testing.assert_allclose(actual, _schema_of(case), rtol=1e-12, atol=1e-12)


@examples(5)
@given(data=st.data())
def test_bfloat16_matches_the_schema(data: st.DataObject) -> None:
    """DeformConv-22's bfloat16: the float64 value of the schema rounded once."""
    bf16 = np_dtype("bfloat16")
    case = data.draw(deform_cases(dtype=bf16))
    (actual,) = ovpool_of("DeformConv", 22, case["inputs"], case["attrs"])
    assert actual.dtype == bf16
    expected = _schema_of(case)
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=2.0**-8, atol=1e-6 * max(1.0, np.abs(expected).max()))


# --- refusals ---------------------------------------------------------------------------------------------

X = np.zeros((1, 2, 4, 4), np.float32)
W = np.zeros((2, 2, 2, 2), np.float32)
OFF = np.zeros((1, 8, 3, 3), np.float32)


@pytest.mark.parametrize(
    ("inputs", "attrs", "match"),
    [
        ([X, W, OFF[:, :6]], {}, "offset has shape \\[1, 6, 3, 3\\]; .* need \\[1, 8, 3, 3\\]"),
        ([X, W, np.zeros((1, 8, 2, 3), np.float32)], {}, "offset has shape"),
        (
            [X, W, OFF, None, np.zeros((1, 8, 3, 3), np.float32)],
            {},
            "mask has shape \\[1, 8, 3, 3\\]; it must be \\[1, 4, 3, 3\\]",
        ),
        ([X, W, OFF, np.zeros(3, np.float32)], {}, "B has shape \\[3\\]"),
        ([X, W, OFF], {"offset_group": 0}, "attribute 'offset_group': 0 is below 1"),
        ([X, W, np.zeros((1, 24, 3, 3), np.float32)], {"offset_group": 3}, "attribute 'offset_group': X's 2 channels"),
        ([X, W, OFF], {"group": 2}, "attribute 'group'"),
        ([X, W, OFF], {"auto_pad": "SAME_UPPER"}, "attribute 'auto_pad'"),
        ([X, W, OFF], {"kernel_shape": [3, 3]}, "attribute 'kernel_shape'"),
        ([X, W, OFF], {"pads": [1, 1]}, "attribute 'pads'"),
        ([X, W, OFF], {"strides": [0, 1]}, "attribute 'strides'"),
        ([X, W.astype(np.float64), OFF], {}, "input 1 has type float64"),
        ([X.astype(np.int32), W.astype(np.int32), OFF.astype(np.int32)], {}, "input 0 has type int32"),
    ],
)
def test_refusals(inputs: list[Any], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("DeformConv", 19, inputs, attrs, match=f"deformconv_node.*{match}")


def test_bfloat16_before_22_is_refused_naming_22() -> None:
    bf16 = np_dtype("bfloat16")
    assert_node_error("DeformConv", 19, [X.astype(bf16), W.astype(bf16), OFF.astype(bf16)], match="bfloat16.*DeformConv-22 does")
    (y,) = ovpool_of("DeformConv", 22, [X.astype(bf16), W.astype(bf16), OFF.astype(bf16)])
    assert y.dtype == bf16 and y.shape == (1, 2, 3, 3)

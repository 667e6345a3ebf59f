"""Cross-checks against PyTorch wherever it can express the case (skipped when torch is absent).

PyTorch pads symmetrically with at most half the kernel, has no average dilation and no auto_pad;
within that it is an independent implementation of ONNX's floor/ceil and divisor rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

import ovpool

torch = pytest.importorskip("torch")
F = torch.nn.functional


@st.composite
def torch_cases(draw):
    rank = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 4)) for _ in range(rank)]
    stride = [draw(st.integers(1, 3)) for _ in range(rank)]
    pad = [draw(st.integers(0, k // 2)) for k in kernel]
    dilation = [draw(st.integers(1, 3)) for _ in range(rank)]
    spatial = [draw(st.integers(1, 9)) for _ in range(rank)]
    return rank, kernel, stride, pad, dilation, spatial, draw(st.booleans()), draw(st.booleans())


def _model(op, attrs, shape, outputs=("y",), opset=22):
    node = helper.make_node(op, ["x"], list(outputs), name="p", **attrs)
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, list(shape))],
        [helper.make_tensor_value_info(o, TensorProto.DOUBLE if o == "y" else TensorProto.INT64, None) for o in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _torch_max(x, rank, *args, **kwargs):
    return getattr(F, f"max_pool{rank}d")(x, *args, **kwargs)


@given(torch_cases())
def test_max_pool_values_and_indices_match_pytorch(case):
    rank, kernel, stride, pad, dilation, spatial, ceil, _ = case
    shape = [2, 3] + spatial
    x = torch.randn(shape, dtype=torch.float64)
    try:
        want, where = _torch_max(x, rank, kernel, stride, pad, dilation, ceil_mode=ceil, return_indices=True)
    except RuntimeError:
        return  # input too small for this window: PyTorch refuses, as does ovpool (tested elsewhere)
    attrs = {"kernel_shape": kernel, "strides": stride, "pads": pad * 2, "dilations": dilation, "ceil_mode": int(ceil)}
    model = _model("MaxPool", attrs, shape, ("y", "i"))
    if torch.isinf(want).any():
        # a window whose dilated taps all miss the input: PyTorch gives -inf, ovpool refuses it
        with pytest.raises(ovpool.SpecError, match="no input cell"):
            ovpool.run(model, {"x": x.numpy()}, device="numpy")
        return
    got = ovpool.run(model, {"x": x.numpy()}, device="numpy")
    np.testing.assert_array_equal(got["y"], want.numpy())
    plane = int(np.prod(spatial))
    base = (np.arange(shape[0] * shape[1]) * plane).reshape([shape[0], shape[1]] + [1] * rank)
    np.testing.assert_array_equal(got["i"], where.numpy() + base)


@given(torch_cases())
def test_average_pool_matches_pytorch(case):
    rank, kernel, stride, pad, _, spatial, ceil, include = case
    shape = [2, 3] + spatial
    x = torch.randn(shape, dtype=torch.float64)
    try:
        want = getattr(F, f"avg_pool{rank}d")(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=include)
    except RuntimeError:
        return
    attrs = {
        "kernel_shape": kernel,
        "strides": stride,
        "pads": pad * 2,
        "ceil_mode": int(ceil),
        "count_include_pad": int(include),
    }
    got = ovpool.run(_model("AveragePool", attrs, shape), {"x": x.numpy()}, device="numpy")
    np.testing.assert_allclose(got["y"], want.numpy(), rtol=1e-12, atol=1e-12)


def test_semantics_worked_example_include_pad_with_ceil():
    """SEMANTICS.md: 4x4, k3 s2 p1, ceil, count_include_pad=1 gives PyTorch's 2.0 in the corner
    (OpenVINO's full-kernel divisor would give 1.333)."""
    x = torch.full((1, 1, 4, 4), 3.0, dtype=torch.float64)
    want = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=True)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4, "ceil_mode": 1, "count_include_pad": 1}
    got = ovpool.run(_model("AveragePool", attrs, [1, 1, 4, 4]), {"x": x.numpy()}, device="numpy")["y"]
    np.testing.assert_allclose(got, want.numpy())
    assert got.shape == (1, 1, 3, 3)


@given(st.integers(1, 3), st.integers(0, 10))
def test_max_unpool_inverts_pytorch_max_pool(rank, seed):
    """SegNet pattern: PyTorch's per-plane indices made global, as its ONNX export does."""
    gen = torch.Generator().manual_seed(seed)
    spatial = [int(v) for v in torch.randint(2, 7, (rank,), generator=gen)]
    x = torch.randn([1, 2] + spatial, generator=gen, dtype=torch.float64)
    pooled, where = _torch_max(x, rank, 2, 2, return_indices=True)
    want = getattr(F, f"max_unpool{rank}d")(pooled, where, 2, 2, output_size=spatial)
    plane = int(np.prod(spatial))
    flat = where.numpy() + (np.arange(2) * plane).reshape([1, 2] + [1] * rank)
    attrs = {"kernel_shape": [2] * rank, "strides": [2] * rank}
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], name="u", **attrs)
    graph = helper.make_graph(
        [node],
        "u",
        [
            helper.make_tensor_value_info("x", TensorProto.DOUBLE, list(pooled.shape)),
            helper.make_tensor_value_info("i", TensorProto.INT64, list(pooled.shape)),
            helper.make_tensor_value_info("s", TensorProto.INT64, [rank + 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    got = ovpool.run(model, {"x": pooled.numpy(), "i": flat, "s": np.array(want.shape, dtype=np.int64)}, device="numpy")["y"]
    np.testing.assert_array_equal(got, want.numpy())

"""Generated single-op models (ranks 1-3, every op version, explicit/auto pads, ceil, dilations,
indices, storage_order, dtypes, static or dynamic spatial dims) converted by ovpool, run on OpenVINO
CPU at f32, compared with the naive oracle."""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from strategies import pool_cases
from test_onnx_to_ir import run_ov, single_op

from ovpool.errors import SpecError, UnsupportedError
from ovpool.ov.from_onnx import onnx_to_ov_model

pytestmark = pytest.mark.openvino

TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-2, "int8": 0, "uint8": 0}


def _with_dynamic_spatial(model):
    dims = model.graph.input[0].type.tensor_type.shape.dim
    for axis, dim in enumerate(dims[2:]):
        dim.dim_param = f"s{axis}"
    return model


@settings(max_examples=40)
@given(case=pool_cases(), dynamic=st.booleans())
def test_generated_pool_matches_oracle(case, dynamic):
    model = case.model()
    if dynamic:
        model = _with_dynamic_spatial(model)
    refused = case.dtype == "float64" or (case.dtype == "bfloat16" and case.with_indices)
    refused |= (
        dynamic
        and case.with_indices
        and (case.attrs.get("storage_order") == 1 or "auto_pad" in case.attrs and case.attrs["auto_pad"] != "VALID")
    )
    if refused:
        with pytest.raises(UnsupportedError, match="node 'pool'"):
            onnx_to_ov_model(model)
        return
    x = case.input()
    op = "avg" if case.op_type == "AveragePool" else "max"
    try:
        want = oracle.pool(x.astype(np.float64), op, case.attrs)
    except (ValueError, ZeroDivisionError):
        # a window with no input cell: refused on static dims, undefined on dynamic ones
        if not dynamic:
            with pytest.raises(SpecError, match="node 'pool'.*no input cell"):
                onnx_to_ov_model(model)
        return
    got = run_ov(model, {"x": x})
    values = want if op == "avg" else want[0]
    assert got["y"].shape == values.shape
    assert got["y"].dtype == x.dtype
    tolerance = TOLERANCE[case.dtype]
    np.testing.assert_allclose(got["y"].astype(np.float64), values, rtol=tolerance, atol=tolerance)
    if case.with_indices:
        np.testing.assert_array_equal(got["indices"], want[1])


@settings(max_examples=25)
@given(
    spatial=st.lists(st.integers(2, 7), min_size=1, max_size=3),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    pad=st.integers(0, 2),
    given_shape=st.booleans(),
)
def test_generated_pool_then_unpool_matches_oracle(spatial, kernel, stride, pad, given_shape):
    rank = len(spatial)
    pad = min(pad, kernel - 1)
    attrs = {"kernel_shape": [kernel] * rank, "strides": [stride] * rank, "pads": [pad] * (2 * rank)}
    shape = [1, 2, *spatial]
    x = np.random.default_rng(sum(spatial)).standard_normal(shape).astype(np.float32)
    assume(all(s + 2 * pad >= kernel for s in spatial))  # at least one window per axis
    pooled, indices = oracle.pool(x, "max", attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    unpool_inputs = ["y", "i"]
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)]
    output_shape = None
    if given_shape:
        nodes.append(helper.make_node("Shape", ["x"], ["x_shape"]))
        unpool_inputs.append("x_shape")
        output_shape = shape
    nodes.append(helper.make_node("MaxUnpool", unpool_inputs, ["z"], name="unpool", **attrs))
    graph = helper.make_graph(nodes, "pool_unpool", inputs, [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    pooled = pooled.astype(np.float32)
    try:
        want = oracle.unpool(pooled, indices, attrs, output_shape)
    except IndexError:
        # an index past the inferred output (pads cut it off): OpenVINO drops it, writes the rest
        inferred = oracle.unpool(np.zeros_like(pooled), np.zeros(0, np.int64), attrs).shape
        if 0 in inferred:
            with pytest.raises(SpecError, match="node 'unpool'.*output length 0"):
                onnx_to_ov_model(model)
            return
        kept = indices < np.prod(inferred)
        want = oracle.unpool(pooled[kept][None, None], indices[kept][None, None], attrs, list(inferred))
    np.testing.assert_array_equal(run_ov(model, {"x": x})["z"], want)


def test_single_op_helper_builds_a_valid_model():
    node = helper.make_node("GlobalMaxPool", ["x"], ["y"])
    model = single_op(
        node,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        22,
    )
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(run_ov(model, {"x": x})["y"], x.max(axis=2, keepdims=True))

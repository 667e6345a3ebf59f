"""ONNX -> DirectML -> emulator equals the rules, and DirectML -> ONNX computes the same outputs.

For every drawn ONNX pooling node (ranks 1-3, every opset, dtypes, auto and explicit pads, ceil,
dilations, indices) the exporter either refuses for a reason the test predicts independently, or
writes operators whose descriptor fields, run by the naive emulator, give what the naive oracle
and ovpool's numpy executor give; the document converted back to ONNX runs to the same outputs.
"""

from __future__ import annotations

from dataclasses import replace

import dml_emulator
import numpy as np
import oracle
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from strategies import PoolCase, pool_cases

import ovpool
from ovpool.dml import export as dml_export
from ovpool.dml import importer as dml_import
from ovpool.errors import UnsupportedError


def expected_refusal(case) -> str | None:
    """Why DirectML must refuse a case, decided without ovpool: dtypes it has no pooling for,
    column-major indices where they differ from row-major (two spatial axes longer than 1), a
    window with no input cell (the naive oracle's max refuses it)."""
    if case.dtype in ("float64", "bfloat16"):
        return "data type"
    if case.with_indices and case.attrs.get("storage_order") == 1 and sum(d > 1 for d in case.shape[2:]) > 1:
        return "storage_order=1"
    try:
        oracle.pool(np.zeros(case.shape), "max", case.attrs)
    except ValueError:
        return "wholly in padding"
    return None


def close(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    tolerance = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=tolerance, atol=tolerance
    )


@given(pool_cases(max_len=5), st.integers(0, 2**16))
def test_directml_operators_compute_the_onnx_rules(case, seed):
    model = case.model()
    refusal = expected_refusal(case)
    event(f"refused: {refusal}" if refusal else f"accepted rank {len(case.shape) - 2}")
    if refusal:
        with pytest.raises(UnsupportedError, match=r"node 'pool'"):
            dml_export.document_from_onnx(model)
        return
    document = dml_export.document_from_onnx(model)
    x = case.input(seed)
    emulated = dml_emulator.run(document, {"x": x})
    op = "avg" if case.op_type == "AveragePool" else "max"
    want = oracle.pool(x, op, case.attrs)
    if op == "max" and case.with_indices:
        close(emulated["y"], want[0], case.dtype)
        np.testing.assert_array_equal(emulated["indices"].astype(np.int64), want[1])
    else:
        close(emulated["y"], want[0] if op == "max" else want, case.dtype)
    executed = ovpool.run(model, {"x": x}, device="numpy")
    close(emulated["y"], executed["y"], case.dtype)

    back = dml_import.model_from_document(document)
    round_trip = ovpool.run(back, {"x": x}, device="numpy")
    assert set(round_trip) == set(executed)
    for name, value in executed.items():
        assert round_trip[name].shape == value.shape
        assert round_trip[name].dtype == value.dtype
        close(round_trip[name], value, case.dtype)


@st.composite
def max_pools_with_indices(draw) -> PoolCase:
    """Drawn MaxPools made into what MaxUnpool pairs with: explicit pads, row-major indices, a
    float type DirectML pools, opset 11 or later (indices, ceil_mode and dilations all exist)."""
    case = draw(pool_cases(op_types=("MaxPool",), max_len=4))
    assume(case.attrs.get("auto_pad", "NOTSET") == "NOTSET")
    attrs = {k: v for k, v in case.attrs.items() if k != "storage_order"}
    dtype = case.dtype if case.dtype in ("float32", "float16") else "float32"
    pair = replace(case, opset=max(case.opset, 11), attrs=attrs, dtype=dtype, with_indices=True)
    assume(expected_refusal(pair) is None)
    return pair


@given(max_pools_with_indices(), st.integers(0, 2**16))
def test_max_unpool_after_max_pool_round_trips(case, seed):
    """MaxPool with indices then MaxUnpool: DirectML MAX_UNPOOLING scatters at the flat indices;
    it takes 4-D tensors only, so a 3-D spatial unpool is refused."""
    model = case.model()
    attrs = {k: case.attrs[k] for k in ("kernel_shape", "strides", "pads") if k in case.attrs}
    # output_shape = the pool's input shape, so every index (a flat position in x) is in range
    model.graph.initializer.append(numpy_helper.from_array(np.array(case.shape, dtype=np.int64), "shape"))
    model.graph.node.append(helper.make_node("MaxUnpool", ["y", "indices", "shape"], ["z"], name="unpool", **attrs))
    del model.graph.output[:]
    model.graph.output.append(helper.make_tensor_value_info("z", helper.np_dtype_to_tensor_dtype(np.dtype(case.dtype)), None))
    x = case.input(seed)
    values, indices = oracle.pool(x, "max", case.attrs)
    want = np.zeros(x.size, dtype=np.float64)
    want[indices.ravel()] = values.ravel()  # ties pick the same cell: one value per index
    executed = ovpool.run(model, {"x": x}, device="numpy")
    close(executed["z"], want.reshape(x.shape), case.dtype)
    if len(case.shape) == 5:
        event("3 spatial axes: refused")
        with pytest.raises(UnsupportedError, match=r"node 'unpool'.*4-D"):
            dml_export.document_from_onnx(model)
        return
    event("checked on the emulator")
    document = dml_export.document_from_onnx(model)
    assert document["operators"][-1]["type"] == "DML_OPERATOR_MAX_UNPOOLING"
    emulated = dml_emulator.run(document, {"x": x})
    close(emulated["z"], executed["z"], case.dtype)
    round_trip = ovpool.run(dml_import.model_from_document(document), {"x": x}, device="numpy")
    close(round_trip["z"], executed["z"], case.dtype)

"""ONNX's own backend test cases for every pooling op pass on the numpy executor."""

from __future__ import annotations

import numpy as np
import pytest
from backend_cases import SKIP_ONNX_READING, pooling_cases

import ovpool

CASES = pooling_cases()


def test_all_official_pooling_cases_are_collected():
    names = {name for name, *_ in CASES}
    assert len(names) >= 41
    assert {
        "test_maxpool_2d_ceil_output_size_reduce_by_one",
        "test_averagepool_2d_ceil_last_window_starts_on_pad",
        "test_maxpool_with_argmax_2d_precomputed_pads",
        "test_maxunpool_export_without_output_shape",
    } <= names


@pytest.mark.parametrize("name,model,inputs,expected", CASES, ids=[c[0] for c in CASES])
def test_backend_case_on_numpy(name, model, inputs, expected):
    if name in SKIP_ONNX_READING:
        pytest.skip("onnx.reference's reading of MaxUnpool indices with output_shape (see docs/semantics.md)")
    got = ovpool.run(model, inputs, device="numpy")
    for output, want in zip(model.graph.output, expected):
        value = got[output.name]
        assert value.dtype == want.dtype
        assert value.shape == want.shape
        # ONNX's backend runner compares with rtol=1e-3, atol=1e-7: some expected values are
        # written to 4 digits (test_averagepool_2d_ceil_last_window_starts_on_pad: 0.1511).
        np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-7)


def test_maxunpool_with_output_shape_follows_output_positions():
    """The skipped case, checked against ovpool's reading: indices are flat positions in the output."""
    ((name, model, inputs, _),) = [c for c in CASES if c[0] in SKIP_ONNX_READING]
    got = ovpool.run(model, inputs, device="numpy")
    x, indices, shape = (inputs[i.name] for i in model.graph.input)
    want = np.zeros(int(np.prod(shape)), dtype=x.dtype)
    want[indices.ravel()] = x.ravel()
    np.testing.assert_array_equal(got[model.graph.output[0].name], want.reshape(shape))

"""onnxruntime computes the rules on rewritten models where it did not on the originals, judged
by the naive oracle (tests/oracle.py), never by onnxruntime or onnx.reference alone."""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from hypothesis import given
from transform_models import integer_input, pool_model, windowed_cases

import ovpool

ort = pytest.importorskip("onnxruntime")


def ort_run(model, x):
    options = ort.SessionOptions()
    options.log_severity_level = 3  # the originals' wrong sizes would log shape warnings
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def oracle_y(x, op, attrs):
    result = oracle.pool(x, "max" if op == "MaxPool" else "avg", attrs)
    return result[0] if op == "MaxPool" else result


def _matches(got, want):
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=0)


@pytest.mark.parametrize(
    ("op", "attrs", "shape", "opset"),
    [
        ("MaxPool", {"kernel_shape": [3], "strides": [2], "dilations": [2], "auto_pad": "SAME_UPPER"}, [1, 2, 5], 12),
        ("AveragePool", {"kernel_shape": [3, 2], "dilations": [2, 2], "auto_pad": "SAME_LOWER"}, [1, 1, 6, 5], 19),
    ],
)
def test_same_padding_with_dilation_is_right_after_explicit_pads(op, attrs, shape, opset):
    model = pool_model(op, attrs, shape, opset)
    x = integer_input(np.random.default_rng(4), shape)
    want = oracle_y(x, op, attrs)
    assert not _matches(ort_run(model, x)[0], want)  # onnxruntime 1.31: SAME pads without dilation
    fixed = ovpool.transform(model, ["explicit-pads"])
    assert _matches(ort_run(fixed, x)[0], want)


def test_averagepool_1_runs_after_opset_11():
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    model = pool_model("AveragePool", attrs, [1, 2, 5, 5], 6)
    x = integer_input(np.random.default_rng(5), [1, 2, 5, 5])
    with pytest.raises(Exception, match="(?i)not.?implemented|AveragePool"):
        ort_run(model, x)
    fixed = ovpool.transform(model, ["opset=11"])
    assert _matches(ort_run(fixed, x)[0], oracle_y(x, "AveragePool", attrs))  # AveragePool-1 excludes pads


def assert_ort_matches_oracle_after(passes, case, seed):
    """onnxruntime on the rewritten model gives the oracle's values (and max indices)."""
    op, attrs, shape, opset, indices = case
    model = pool_model(op, attrs, shape, opset, indices=indices)
    x = integer_input(np.random.default_rng(seed), shape)
    got = ort_run(ovpool.transform(model, passes), x)
    want = oracle.pool(x, "max" if op == "MaxPool" else "avg", attrs)
    want = list(want) if op == "MaxPool" else [want]
    assert _matches(got[0], want[0])
    if indices:
        np.testing.assert_array_equal(got[1], want[1])


@given(windowed_cases(ceil=True).filter(lambda c: "dilations" not in c[1]))
def test_onnxruntime_agrees_with_the_oracle_after_explicit_pads_and_no_ceil(case):
    """Undilated cases (onnxruntime refuses pads >= kernel_shape, which a dilated window allows)."""
    assert_ort_matches_oracle_after(["explicit-pads", "no-ceil"], case, 6)


@given(windowed_cases(ranks=(1,)).filter(lambda c: "dilations" not in c[1]))
def test_onnxruntime_runs_dml_legal_1d_lifts_exactly(case):
    assert_ort_matches_oracle_after(["explicit-pads", "dml-legal"], case, 7)

"""NegativeLogLikelihoodLoss-12/13/22 and SoftmaxCrossEntropyLoss-12/13 against onnxruntime at each
since-version it runs and the schema's loops computed here (at every since-version), over
reductions, weights, ignore_index (negative, beyond C), ranks 2-5 and the log_prob output; the
node's errors; ONNX's node test cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import assert_node_error, check, check_node_case, expanded_case_params, node_case_params, ovpool_of, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st

LOSSES = ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")


def schema_loss(
    x: np.ndarray, target: np.ndarray, weight: np.ndarray | None, reduction: str, ignore: int | None, softmax: bool
) -> tuple[Any, np.ndarray]:
    """The schema text's loops in float64: loss[n][d] = -y[n][c][d] * weight[c] (0 where c is the
    ignore_index), y the input or log(softmax(scores)) along axis 1; "mean" divides by the sum of
    the weights taken. Returns (loss, y)."""
    x = x.astype(np.float64)
    n, classes = x.shape[:2]
    flat = x.reshape(n, classes, -1)
    if softmax:
        y = np.empty_like(flat)
        for i in range(n):
            for d in range(flat.shape[2]):
                column = flat[i, :, d]
                p = np.exp(column - column.max())
                y[i, :, d] = np.log(p / p.sum())
    else:
        y = flat
    labels = target.reshape(n, -1)
    loss = np.zeros(labels.shape)
    total = 0.0
    for i in range(n):
        for d in range(labels.shape[1]):
            c = int(labels[i, d])
            if c == ignore:
                continue
            w = 1.0 if weight is None else float(weight[c])
            loss[i, d] = -y[i, c, d] * w
            total += w
    if reduction == "none":
        return loss.reshape(target.shape), y.reshape(x.shape)
    return (loss.sum() if reduction == "sum" else loss.sum() / total), y.reshape(x.shape)


@st.composite
def loss_cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, Any]]:
    rank = draw(st.integers(2, 5))
    shape = (draw(st.integers(1, 3)), draw(st.integers(2, 4)), *(draw(st.integers(1, 3)) for _ in range(rank - 2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(np.float32)
    classes = shape[1]
    target = rng.integers(0, classes, (shape[0], *shape[2:]))
    attrs: dict[str, Any] = {"reduction": draw(st.sampled_from(["none", "sum", "mean"]))}
    ignore = draw(st.sampled_from([None, 0, 1, -1, -5, 10]))
    if ignore is not None:
        attrs["ignore_index"] = ignore
        mask = rng.random(target.shape) < 0.3
        mask.reshape(-1)[-1] = False  # one sample at least counts (a mean of none is 0/0)
        target = np.where(mask, ignore, target)
    target = target.astype(draw(st.sampled_from([np.int32, np.int64])))
    weight = rng.uniform(0.1, 2.0, classes).astype(np.float32) if draw(st.booleans()) else None
    return x, target, weight, attrs


@pytest.mark.parametrize(
    ("op", "opset"), [(op, opset) for op in LOSSES for opset in since_opsets(op, highest=26)], ids=lambda v: str(v)
)
@settings(max_examples=12, deadline=None)
@given(case=loss_cases(), log_prob=st.booleans())
def test_losses_match_onnxruntime_and_schema(
    op: str, opset: int, case: tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, Any]], log_prob: bool
) -> None:
    """Every since-version against the schema's loops; onnxruntime too where it runs the version."""
    x, target, weight, attrs = case
    softmax = op == "SoftmaxCrossEntropyLoss"
    n_outputs = 2 if softmax and log_prob else 1
    inputs = [x, target] + ([weight] if weight is not None else [])
    actual = ovpool_of(op, opset, inputs, attrs, n_outputs)
    loss, y = schema_loss(x, target, weight, attrs["reduction"], attrs.get("ignore_index"), softmax)
    np.testing.assert_allclose(actual[0], loss, rtol=1e-5, atol=1e-6)
    assert actual[0].dtype == np.float32
    if n_outputs == 2:
        np.testing.assert_allclose(actual[1], y, rtol=1e-5, atol=1e-6)
    check(op, opset, inputs, attrs, n_outputs)


@pytest.mark.parametrize("op", LOSSES)
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_losses_other_float_types(op: str, dtype: Any) -> None:
    """float16 (computed in float32, rounded once) and float64 against onnxruntime and the schema."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 2)).astype(dtype)
    target = np.array([[0, 3], [2, 1], [1, 1]], np.int64)
    weight = np.array([0.5, 1.0, 1.5, 2.0], dtype)
    for reduction in ("none", "mean"):
        attrs = {"reduction": reduction, "ignore_index": 2}
        loss, _ = schema_loss(x, target, weight, reduction, 2, op == "SoftmaxCrossEntropyLoss")
        (actual,) = ovpool_of(op, 13, [x, target, weight], attrs)
        assert actual.dtype == dtype
        np.testing.assert_allclose(actual, loss, rtol=2e-3 if dtype == np.float16 else 1e-12)
        check(op, 13, [x, target, weight], attrs, rtol=2e-3 if dtype == np.float16 else 1e-10)


def test_mean_with_ignore_index_minus_one_counts_the_samples_taken() -> None:
    """ "mean" divides by the samples not ignored, for every ignore_index: losses 1 and 6 of three
    samples, the middle one ignored, give 3.5 with ignore_index=-1 as with any other (the node
    case test_nllloss_NCd1_ii's rule; onnxruntime agrees). onnx.reference 1.23 divides by all three
    (2.33) for -1 only, its ``elif ignore_index != -1`` branch."""
    x = np.float32([[-1, -2], [-3, -4], [-5, -6]])
    (loss,) = check("NegativeLogLikelihoodLoss", 13, [x, np.int64([0, -1, 1])], {"ignore_index": -1})
    assert loss == np.float32(3.5)


def test_mean_of_no_counted_sample_is_nan() -> None:
    """Every target ignored: the mean is 0 / 0 (onnxruntime and PyTorch give NaN too)."""
    (loss,) = ovpool_of("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([1, 1])], {"ignore_index": 1})
    assert np.isnan(loss)


ERRORS = [
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, 3])], {}),  # target beyond C
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, -1])], {}),  # negative, not ignored
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, 1])], {"reduction": "max"}),
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, 1, 2])], {}),  # target shape
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, 1]), np.ones(2, np.float32)], {}),
    ("NegativeLogLikelihoodLoss", 13, [np.zeros(3, np.float32), np.int64([0])], {}),  # rank 1
    ("NegativeLogLikelihoodLoss", 13, [np.zeros((2, 3), np.int32), np.int64([0, 1])], {}),  # floats only
    ("SoftmaxCrossEntropyLoss", 12, [np.zeros((2, 3), np.float32), np.int16([0, 1])], {}),  # Tind int32/int64
    ("SoftmaxCrossEntropyLoss", 13, [np.zeros((2, 3), np.float32), np.int64([0, 1]), np.ones(3, np.float64)], {}),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_bad_nodes_are_model_errors(op: str, opset: int, inputs: list[Any], attrs: dict[str, Any]) -> None:
    assert_node_error(op, opset, inputs, attrs)


@pytest.mark.parametrize(("op", "opset"), [("SoftmaxCrossEntropyLoss", 13), ("NegativeLogLikelihoodLoss", 22)])
def test_bfloat16_losses(op: str, opset: int) -> None:
    """bfloat16 from SoftmaxCrossEntropyLoss-13 and NegativeLogLikelihoodLoss-22: computed in
    float32 and rounded once, against the schema's loops rounded to bfloat16."""
    import ml_dtypes

    x = np.random.default_rng(5).standard_normal((3, 4, 2)).astype(ml_dtypes.bfloat16)
    target = np.array([[0, 3], [2, 1], [1, 1]], np.int64)
    weight = np.array([0.5, 1.0, 1.5, 2.0], ml_dtypes.bfloat16)
    for reduction in ("none", "mean", "sum"):
        attrs = {"reduction": reduction, "ignore_index": 2}
        (actual,) = ovpool_of(op, opset, [x, target, weight], attrs)
        loss, _ = schema_loss(x, target, weight.astype(np.float64), reduction, 2, op == "SoftmaxCrossEntropyLoss")
        assert actual.dtype == x.dtype
        np.testing.assert_allclose(
            actual.astype(np.float64), np.asarray(loss).astype(ml_dtypes.bfloat16).astype(np.float64), rtol=1e-2
        )


def test_bfloat16_refused_before_it_is_allowed() -> None:
    """bfloat16 is allowed from SoftmaxCrossEntropyLoss-13 (NegativeLogLikelihoodLoss-22): the error names it."""
    import ml_dtypes

    x = np.zeros((2, 3), ml_dtypes.bfloat16)
    assert_node_error("SoftmaxCrossEntropyLoss", 12, [x, np.int64([0, 1])], match="from SoftmaxCrossEntropyLoss-13")
    assert_node_error("NegativeLogLikelihoodLoss", 13, [x, np.int64([0, 1])], match="from NegativeLogLikelihoodLoss-22")


@pytest.mark.parametrize("case", node_case_params(LOSSES))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)


@pytest.mark.parametrize("case", expanded_case_params(LOSSES))
def test_onnx_expanded_node_cases(case: Any) -> None:
    """The function bodies (SoftmaxCrossEntropyLoss's calls NegativeLogLikelihoodLoss) on ovpool's kernels."""
    check_node_case(case)

"""RNN, GRU and LSTM against onnxruntime at every since-version (7, 14, 22): directions, activations
with alpha/beta, clip, peepholes, input_forget, linear_before_reset, optional inputs and outputs,
``sequence_lens``; ``layout=1`` (onnxruntime has no batch-first kernel) against onnxruntime's
sequence-first result transposed; what onnxruntime lacks or gets wrong against the schema computed
here; ONNX's own node test cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check, check_node_case, drawn_rng, make_model, node_case_params, run_ort, run_ovpool, since_opsets
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.errors import ModelError

OPS = ("RNN", "GRU", "LSTM")
CASES = [(op, opset) for op in OPS for opset in since_opsets(op)]
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
ROLES = {"RNN": 1, "GRU": 2, "LSTM": 3}
DIRECTIONS = ("forward", "reverse", "bidirectional")
# functions whose missing parameters onnxruntime fills with the schema's defaults (not Affine nor
# ThresholdedRelu, whose default alpha onnxruntime takes as 0; ScaledTanh has no defaults)
WITH_DEFAULTS = ("Relu", "Tanh", "Sigmoid", "Softsign", "Softplus", "LeakyRelu", "Elu", "HardSigmoid")
TAKES = {"LeakyRelu": 1, "ThresholdedRelu": 1, "Elu": 1, "HardSigmoid": 2, "Affine": 2, "ScaledTanh": 2}


def _inputs(
    op: str,
    rng: np.random.Generator,
    direction: str,
    seq: int,
    batch: int,
    size: int,
    hidden: int,
    dtype: type = np.float32,
    bias: bool = True,
    lengths: list[int] | None = None,
    initial: bool = False,
    peepholes: bool = False,
    layout: int = 0,
) -> list[np.ndarray | None]:
    """X, W, R, B, sequence_lens, initial_h (LSTM: initial_c, P), trailing omitted ones dropped."""
    dirs, gates = (2 if direction == "bidirectional" else 1), GATES[op]
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    values: list[np.ndarray | None] = [
        rng.standard_normal((seq, batch, size) if layout == 0 else (batch, seq, size)),
        rng.standard_normal((dirs, gates * hidden, size)) * 0.6,
        rng.standard_normal((dirs, gates * hidden, hidden)) * 0.6,
        rng.standard_normal((dirs, 2 * gates * hidden)) * 0.3 if bias else None,
        None,
        rng.standard_normal(state) if initial else None,
    ]
    if op == "LSTM":
        values += [
            rng.standard_normal(state) if initial else None,
            rng.standard_normal((dirs, 3 * hidden)) if peepholes else None,
        ]
    values = [None if v is None else v.astype(dtype) for v in values]
    values[4] = None if lengths is None else np.array(lengths, np.int32)
    while values[-1] is None:
        values.pop()
    return values


def _tolerance(dtype: type) -> float:
    return 1e-2 if dtype == np.float16 else 1e-4


@st.composite
def _activations(draw: st.DrawFn, op: str, dirs: int) -> dict:
    if draw(st.booleans()):
        return {}
    full = draw(st.booleans())  # full alpha/beta lists: any function; else defaults fill the gaps
    names = draw(
        st.lists(
            st.sampled_from(WITH_DEFAULTS + (("Affine", "ScaledTanh", "ThresholdedRelu") if full else ())),
            min_size=ROLES[op] * dirs,
            max_size=ROLES[op] * dirs,
        )
    )
    alphas = [draw(st.sampled_from([0.1, 0.5, 1.5])) for n in names if TAKES.get(n, 0) >= 1]
    betas = [draw(st.sampled_from([0.2, 0.7])) for n in names if TAKES.get(n, 0) >= 2]
    if not full:
        alphas, betas = alphas[: draw(st.integers(0, len(alphas)))], betas[: draw(st.integers(0, len(betas)))]
    attrs: dict = {"activations": names}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    return attrs


@st.composite
def _case(draw: st.DrawFn, op: str) -> tuple[list[np.ndarray | None], dict, int]:
    direction = draw(st.sampled_from(DIRECTIONS))
    dirs = 2 if direction == "bidirectional" else 1
    seq, batch, size, hidden = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    lengths = draw(st.none() | st.lists(st.integers(0, seq), min_size=batch, max_size=batch))
    rng = drawn_rng(draw)
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    inputs = _inputs(
        op,
        rng,
        direction,
        seq,
        batch,
        size,
        hidden,
        dtype=dtype,
        bias=draw(st.booleans()),
        lengths=lengths,
        initial=draw(st.booleans()),
        peepholes=op == "LSTM" and draw(st.booleans()),
    )
    # float16 keeps the bounded default functions: unbounded ones (Relu as GRU's g) can grow the state
    # past float16's range, where the two rounding orders overflow at different steps
    attrs = {"hidden_size": hidden, **(draw(_activations(op, dirs)) if dtype == np.float32 else {})}
    if direction != "forward" or draw(st.booleans()):
        attrs["direction"] = direction
    if draw(st.booleans()):
        attrs["clip"] = draw(st.sampled_from([0.5, 2.0]))
    if op == "LSTM" and draw(st.booleans()):
        attrs["input_forget"] = 1
    if op == "GRU" and draw(st.booleans()):
        attrs["linear_before_reset"] = 1
    return inputs, attrs, draw(st.integers(1, 3 if op == "LSTM" else 2))


@pytest.mark.parametrize(("op", "opset"), CASES)
@settings(max_examples=20)
@given(data=st.data())
def test_matches_onnxruntime(op: str, opset: int, data: st.DataObject) -> None:
    inputs, attrs, n_outputs = data.draw(_case(op))
    constant = data.draw(st.sampled_from([(), (1, 2), (1, 2, 3, 7)]))
    tol = _tolerance(inputs[0].dtype)
    check(op, opset, inputs, attrs, n_outputs=n_outputs, constant=[i for i in constant if i < len(inputs)], rtol=tol, atol=tol)


@pytest.mark.parametrize(("op", "opset"), CASES)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_sequence_lens(op: str, opset: int, direction: str) -> None:
    """Per-entry lengths (0, short, full) against onnxruntime; and the rule itself: Y is 0 past each
    entry's length, Y_h is Y at the entry's last valid step (forward) or at step 0 (reverse)."""
    lengths = [5, 2, 0, 1, 4]
    inputs = _inputs(op, np.random.default_rng(11), direction, 5, 5, 3, 4, lengths=lengths, initial=True, peepholes=True)
    n = 3 if op == "LSTM" else 2
    y, y_h, *_ = check(op, opset, inputs, {"hidden_size": 4, "direction": direction}, n_outputs=n, rtol=1e-4, atol=1e-5)
    for b, length in enumerate(lengths):
        assert not y[length:, :, b].any()
        if length:
            np.testing.assert_array_equal(y_h[0, b], y[length - 1, 0, b] if direction != "reverse" else y[0, 0, b])
        if direction == "bidirectional" and length:
            np.testing.assert_array_equal(y_h[1, b], y[0, 1, b])


@pytest.mark.parametrize(("op", "opset"), [(op, opset) for op, opset in CASES if opset >= 14])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lengths", [None, [3, 1, 0]])
def test_layout_1_is_batch_first(op: str, opset: int, direction: str, lengths: list[int] | None) -> None:
    """layout=1 (onnxruntime has no batch-first kernel): the same node on batch-first inputs gives
    onnxruntime's sequence-first outputs with sequence and batch axes swapped (Y [batch, seq, dirs,
    hidden], Y_h and Y_c [batch, dirs, hidden])."""
    seq_first = _inputs(op, np.random.default_rng(4), direction, 3, 3, 2, 3, lengths=lengths, initial=True, peepholes=True)
    n = 3 if op == "LSTM" else 2
    attrs = {"hidden_size": 3, "direction": direction}
    model = make_model(op, opset, seq_first, attrs, n_outputs=n)
    expected = run_ort(model, {f"x{i}": v for i, v in enumerate(seq_first) if v is not None})
    batch_first = [None if v is None else (v.swapaxes(0, 1) if i in (0, 5, 6) else v) for i, v in enumerate(seq_first)]
    model = make_model(op, opset, batch_first, {**attrs, "layout": 1}, n_outputs=n)
    actual = run_ovpool(model, {f"x{i}": v for i, v in enumerate(batch_first) if v is not None})
    np.testing.assert_allclose(actual[0], expected[0].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-6)
    for a, e in zip(actual[1:], expected[1:]):
        np.testing.assert_allclose(a, e.swapaxes(0, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("op", "opset"), CASES)
def test_float64(op: str, opset: int) -> None:
    """float64 (onnxruntime has no double kernel): float64 results, equal to onnxruntime on float32."""
    inputs = _inputs(op, np.random.default_rng(8), "bidirectional", 4, 2, 3, 3, dtype=np.float64, lengths=[4, 2], initial=True)
    n = 3 if op == "LSTM" else 2
    attrs = {"hidden_size": 3, "direction": "bidirectional"}
    narrow = [v if v is None or v.dtype != np.float64 else v.astype(np.float32) for v in inputs]
    expected = run_ort(make_model(op, opset, narrow, attrs, n), {f"x{i}": v for i, v in enumerate(narrow) if v is not None})
    actual = run_ovpool(make_model(op, opset, inputs, attrs, n), {f"x{i}": v for i, v in enumerate(inputs) if v is not None})
    for a, e in zip(actual, expected):
        assert a.dtype == np.float64
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_bfloat16(op: str) -> None:
    """Version 22 adds bfloat16 (onnxruntime has no kernel): computed in float32, returned as
    bfloat16, equal to onnxruntime on the same values in float32 to bfloat16's precision."""
    import ml_dtypes

    inputs = _inputs(op, np.random.default_rng(6), "forward", 3, 2, 2, 3, initial=True)
    wide = [None if v is None else v.astype(ml_dtypes.bfloat16).astype(v.dtype) if v.dtype == np.float32 else v for v in inputs]
    narrow = [None if v is None else v.astype(ml_dtypes.bfloat16) if v.dtype == np.float32 else v for v in inputs]
    expected = run_ort(make_model(op, 22, wide, {"hidden_size": 3}, 2), {f"x{i}": v for i, v in enumerate(wide) if v is not None})
    actual = run_ovpool(
        make_model(op, 22, narrow, {"hidden_size": 3}, 2), {f"x{i}": v for i, v in enumerate(narrow) if v is not None}
    )
    for a, e in zip(actual, expected):
        assert a.dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(a.astype(np.float32), e, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("opset", since_opsets("RNN"))
@pytest.mark.parametrize(
    ("function", "rule"),
    [("Affine", lambda v: 1.0 * v + 0.0), ("ThresholdedRelu", lambda v: np.where(v > 1.0, v, 0.0))],
)
def test_activation_defaults_are_the_schemas(opset: int, function: str, rule: Callable[[np.ndarray], np.ndarray]) -> None:
    """A function left without alpha/beta takes the defaults of its ONNX operator: Affine 1*x + 0,
    ThresholdedRelu alpha 1. onnxruntime takes alpha 0 for both (Affine gives zeros, ThresholdedRelu
    acts as Relu). Computed here: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)."""
    x, w, r, b = _inputs("RNN", np.random.default_rng(3), "forward", 3, 4, 2, 2)
    x = x * 3
    model = make_model("RNN", opset, [x, w, r, b], {"hidden_size": 2, "activations": [function]}, n_outputs=2)
    y, y_h = run_ovpool(model, {"x0": x, "x1": w, "x2": r, "x3": b})
    h = np.zeros((4, 2))
    for t in range(3):
        h = rule(x[t] @ w[0].T + h @ r[0].T + b[0, :2] + b[0, 2:])
        np.testing.assert_allclose(y[t, 0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y_h[0], h, rtol=1e-5, atol=1e-6)
    assert 0 < np.count_nonzero(y) < y.size or function == "Affine"


@pytest.mark.parametrize("opset", since_opsets("LSTM"))
def test_lstm_by_the_equations(opset: int) -> None:
    """LSTM with peepholes, clip and HardSigmoid/LeakyRelu with consumed alpha/beta, computed here
    from the schema's equations (gate order i, o, f, c; peephole order i, o, f)."""
    rng = np.random.default_rng(12)
    x, w, r, b, _, h0, c0, p = _inputs("LSTM", rng, "forward", 3, 2, 2, 3, lengths=[3, 3], initial=True, peepholes=True)
    attrs = {
        "hidden_size": 3,
        "clip": 1.5,
        "activations": ["HardSigmoid", "Tanh", "LeakyRelu"],
        "activation_alpha": [0.3, 0.05],
        "activation_beta": [0.6],
    }
    feeds = [x, w, r, b, None, h0, c0, p]
    model = make_model("LSTM", opset, feeds, attrs, n_outputs=3)
    y, y_h, y_c = run_ovpool(model, {f"x{i}": v for i, v in enumerate(feeds) if v is not None})

    def f(v: np.ndarray) -> np.ndarray:
        return np.clip(0.3 * v + 0.6, 0, 1)

    def h_fn(v: np.ndarray) -> np.ndarray:
        return np.where(v >= 0, v, 0.05 * v)

    h, c = h0[0].astype(np.float64), c0[0].astype(np.float64)
    wi, wo, wf, wc = np.split(w[0], 4)
    ri, ro, rf, rc = np.split(r[0], 4)
    bias = b[0, :12] + b[0, 12:]
    pi, po, pf = np.split(p[0], 3)
    for t in range(3):
        i = f(np.clip(x[t] @ wi.T + h @ ri.T + bias[0:3] + pi * c, -1.5, 1.5))
        forget = f(np.clip(x[t] @ wf.T + h @ rf.T + bias[6:9] + pf * c, -1.5, 1.5))
        c = forget * c + i * np.tanh(np.clip(x[t] @ wc.T + h @ rc.T + bias[9:12], -1.5, 1.5))
        o = f(np.clip(x[t] @ wo.T + h @ ro.T + bias[3:6] + po * c, -1.5, 1.5))
        h = o * h_fn(c)
        np.testing.assert_allclose(y[t, 0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y_h[0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y_c[0], c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_activation_names_ignore_case(op: str) -> None:
    """``sigmoid`` is Sigmoid (onnxruntime's LSTM and GRU agree)."""
    inputs = _inputs(op, np.random.default_rng(5), "forward", 2, 2, 2, 2)
    names = ["sigmoid", "TANH", "Tanh"][: ROLES[op]]
    check(op, 14, inputs, {"hidden_size": 2, "activations": names}, n_outputs=2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("op", "opset"), CASES)
def test_hidden_size_defaults_to_r(op: str, opset: int) -> None:
    """hidden_size is optional in the schema: without it the hidden size is R's last dimension
    (onnxruntime requires the attribute, so its result with hidden_size=3 is the oracle)."""
    inputs = _inputs(op, np.random.default_rng(7), "bidirectional", 3, 2, 2, 3, initial=True)
    expected = check(op, opset, inputs, {"hidden_size": 3, "direction": "bidirectional"}, n_outputs=2, rtol=1e-5, atol=1e-6)
    model = make_model(op, opset, inputs, {"direction": "bidirectional"}, n_outputs=2)
    actual = run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs) if v is not None})
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def test_large_model_matches_onnxruntime() -> None:
    """A realistic size: bidirectional LSTM, 20 steps, batch 8, input 32, hidden 64, constant weights."""
    inputs = _inputs("LSTM", np.random.default_rng(1), "bidirectional", 20, 8, 32, 64, lengths=[20, 3, 17, 20, 1, 9, 20, 12])
    check("LSTM", 14, inputs, {"hidden_size": 64, "direction": "bidirectional"}, 3, constant=(1, 2, 3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("op", "opset", "attrs", "match"),
    [
        ("LSTM", 14, {"direction": "both"}, "'direction'"),
        ("LSTM", 14, {"activations": ["Sigmoid", "Tanh"]}, "'activations'"),
        ("GRU", 14, {"activations": ["Sigmoid", "Swish"]}, "'Swish'"),
        ("RNN", 14, {"activations": ["ScaledTanh"], "activation_alpha": [1.0]}, "'activation_beta'"),
        ("RNN", 7, {"layout": 1}, "'layout'"),
        ("RNN", 14, {"layout": 2}, "'layout'"),
        ("GRU", 14, {"hidden_size": 5}, "'hidden_size'"),
        ("LSTM", 14, {"clip": -1.0}, "'clip'"),
    ],
)
def test_bad_node_is_a_model_error(op: str, opset: int, attrs: dict, match: str) -> None:
    inputs = _inputs(op, np.random.default_rng(0), "forward", 2, 1, 2, 3)
    model = make_model(op, opset, inputs, {"hidden_size": 3, **attrs})
    with pytest.raises(ModelError, match=match):
        run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs) if v is not None})


@pytest.mark.parametrize("op", OPS)
def test_sequence_lens_out_of_range_is_a_model_error(op: str) -> None:
    inputs = _inputs(op, np.random.default_rng(0), "forward", 2, 2, 2, 3, lengths=[1, 3])
    model = make_model(op, 14, inputs, {"hidden_size": 3})
    with pytest.raises(ModelError, match=r"sequence_lens \[1, 3\]"):
        run_ovpool(model, {f"x{i}": v for i, v in enumerate(inputs) if v is not None})


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)  # compares the graph's outputs: the node may leave Y unnamed

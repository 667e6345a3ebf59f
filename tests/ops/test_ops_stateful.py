"""LinearAttention-27 and CausalConvWithState-27 on ovpool's numpy kernels: ONNX's node cases and
their ``_expanded`` function bodies, the schema text computed here token by token (onnxruntime
1.31 has neither op), and CausalConvWithState against onnxruntime running the Concat + Conv + Slice
pattern the schema says it replaces."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from harness import (
    assert_node_error,
    check_node_case,
    drawn_rng,
    expanded_case_params,
    model_of,
    node_case_params,
    ovpool_of,
    run_ort,
    vi,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

OPS = ("LinearAttention", "CausalConvWithState")


@pytest.mark.parametrize("case", node_case_params(OPS) + expanded_case_params(OPS))
def test_node_cases(case: Any) -> None:
    check_node_case(case)


# ---------------------------------------------------------------- LinearAttention


def schema_linear_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    past: np.ndarray | None,
    decay: np.ndarray | None,
    beta: np.ndarray | None,
    attrs: dict[str, Any],
) -> tuple[np.ndarray, np.ndarray]:
    """The schema's recurrence in float64, one batch entry, key/value head and token at a time:
    ``S = exp(g) S`` (gated rules), ``S += k (beta (v - S^T k))^T`` (delta rules) or ``S += k v^T``,
    then each query head ``h`` reads ``scale * q^T S`` of head ``h // (H_q / H_kv)``."""
    hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
    rule = attrs.get("update_rule", "gated_delta")
    b_size, tokens = q.shape[:2]
    d_k, d_v = q.shape[2] // hq, v.shape[2] // hkv
    scale = attrs.get("scale") or 1 / math.sqrt(d_k)
    out = np.zeros((b_size, tokens, hq * d_v))
    present = np.zeros((b_size, hkv, d_k, d_v))
    for b in range(b_size):
        for h in range(hkv):
            s = past[b, h].astype(np.float64).copy() if past is not None else np.zeros((d_k, d_v))
            for t in range(tokens):
                key = k[b, t, h * d_k : (h + 1) * d_k].astype(np.float64)
                value = v[b, t, h * d_v : (h + 1) * d_v].astype(np.float64)
                if rule in ("gated", "gated_delta"):
                    assert decay is not None
                    g = decay[b, t, h] if decay.shape[2] == hkv else decay[b, t, h * d_k : (h + 1) * d_k]
                    s = np.exp(np.asarray(g, np.float64)).reshape(-1, 1) * s
                if rule in ("delta", "gated_delta"):
                    assert beta is not None
                    rate = float(beta[b, t, h if beta.shape[2] == hkv else 0])
                    value = rate * (value - np.array([sum(s[d, m] * key[d] for d in range(d_k)) for m in range(d_v)]))
                s = s + np.outer(key, value)
                for g_head in range(hq // hkv):
                    head = h * (hq // hkv) + g_head
                    query = q[b, t, head * d_k : (head + 1) * d_k].astype(np.float64)
                    out[b, t, head * d_v : (head + 1) * d_v] = [
                        scale * sum(query[d] * s[d, m] for d in range(d_k)) for m in range(d_v)
                    ]
            present[b, h] = s
    return out, present


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_linear_attention_matches_the_schema(data: st.DataObject) -> None:
    """Every update rule, grouped heads, decay per head or per key dimension, beta per head or one
    for all, with or without a past state, the default or an explicit scale, float32 and float16."""
    rng = drawn_rng(data.draw)
    rule = data.draw(st.sampled_from(["linear", "gated", "delta", "gated_delta"]))
    dtype = data.draw(st.sampled_from([np.float32, np.float32, np.float16]))
    batch, tokens = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 4))
    hkv, group = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    hq = hkv * group
    d_k, d_v = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    q = rng.standard_normal((batch, tokens, hq * d_k)).astype(dtype)
    k = rng.standard_normal((batch, tokens, hkv, d_k))
    k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).reshape(batch, tokens, -1).astype(dtype)  # L2-normalized keys
    v = rng.standard_normal((batch, tokens, hkv * d_v)).astype(dtype)
    attrs: dict[str, Any] = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule}
    if data.draw(st.booleans()):
        attrs["scale"] = 0.5
    past = rng.standard_normal((batch, hkv, d_k, d_v)).astype(dtype) if data.draw(st.booleans()) else None
    decay = beta = None
    if rule in ("gated", "gated_delta"):
        width = hkv if data.draw(st.booleans()) else hkv * d_k
        decay = -rng.uniform(0.05, 1.0, (batch, tokens, width)).astype(dtype)
    if rule in ("delta", "gated_delta"):
        beta = rng.uniform(0.1, 0.9, (batch, tokens, hkv if data.draw(st.booleans()) else 1)).astype(dtype)
    output, present = ovpool_of("LinearAttention", 27, [q, k, v, past, decay, beta], attrs, 2)
    expected_output, expected_present = schema_linear_attention(q, k, v, past, decay, beta, attrs)
    tol = {"rtol": 3e-3, "atol": 3e-3} if dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
    assert output.dtype == dtype and present.dtype == dtype
    np.testing.assert_allclose(output.astype(np.float64), expected_output, **tol)
    np.testing.assert_allclose(present.astype(np.float64), expected_present, **tol)


def test_linear_attention_by_example() -> None:
    """d_k = d_v = 1, q = k = v = 1, scale 1, ``linear``: the state grows 1, 2, 3 and so do the outputs."""
    ones = np.ones((1, 3, 1), np.float32)
    attrs = {"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear", "scale": 1.0}
    output, present = ovpool_of("LinearAttention", 27, [ones, ones, ones], attrs, 2)
    np.testing.assert_array_equal(output[0, :, 0], [1, 2, 3])
    assert present.shape == (1, 1, 1, 1) and present.item() == 3


def _la_inputs(**extra: np.ndarray) -> list[np.ndarray | None]:
    x = np.ones((1, 2, 4), np.float32)
    return [x, x, x, extra.get("past"), extra.get("decay"), extra.get("beta")]


LINEAR_ATTENTION_ERRORS = [
    (_la_inputs(), {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "retention"}, "attribute 'update_rule'"),
    (_la_inputs(), {"kv_num_heads": 2, "update_rule": "linear"}, "attribute 'q_num_heads'"),
    (_la_inputs(), {"q_num_heads": 2, "kv_num_heads": 4, "update_rule": "linear"}, "attribute 'q_num_heads'"),
    (_la_inputs(), {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear", "chunk_size": 0}, "attribute 'chunk_size'"),
    (_la_inputs(), {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated"}, "needs the input decay"),
    (
        _la_inputs(beta=np.ones((1, 2, 2), np.float32)),
        {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
        "no input beta",
    ),
    (
        _la_inputs(past=np.ones((1, 2, 2, 3), np.float32)),
        {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
        "past_state",
    ),
    (_la_inputs(), {"q_num_heads": 3, "kv_num_heads": 3, "update_rule": "linear"}, "multiple of 3 heads"),
]


@pytest.mark.parametrize(("inputs", "attrs", "match"), LINEAR_ATTENTION_ERRORS)
def test_linear_attention_refuses(inputs: list[np.ndarray | None], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("LinearAttention", 27, inputs, attrs, match=f"linearattention_node.*{match}")


# ---------------------------------------------------------------- CausalConvWithState


def _concat_conv_slice(
    x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, past: np.ndarray, activation: str
) -> list[np.ndarray]:
    """The pattern the schema says CausalConvWithState replaces, on onnxruntime: Concat(past, x),
    a depthwise Conv (group = channels) with its bias, SiLU as Sigmoid and Mul, and the last k - 1
    positions of the concatenation sliced off as the present state."""
    channels, k = x.shape[1], weight.shape[2]
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    conv_inputs = ["padded", "w"] + (["b"] if bias is not None else [])
    nodes = [
        helper.make_node("Concat", ["past", "x"], ["padded"], axis=2),
        helper.make_node("Conv", conv_inputs, ["conv"], group=channels),
        helper.make_node("Shape", ["padded"], ["length"], start=2),
        helper.make_node("Sub", ["length", "km1"], ["start"]),
        helper.make_node("Slice", ["padded", "start", "length", "axis2"], ["state"]),
    ]
    if activation == "none":
        nodes.append(helper.make_node("Identity", ["conv"], ["y"]))
    else:
        nodes += [helper.make_node("Sigmoid", ["conv"], ["gate"]), helper.make_node("Mul", ["conv", "gate"], ["y"])]
    inits = [
        helper.make_tensor("km1", TensorProto.INT64, [1], [k - 1]),
        helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
    ]
    inputs = [vi("past", elem, list(past.shape)), vi("x", elem, list(x.shape)), vi("w", elem, list(weight.shape))]
    feeds = {"past": past, "x": x, "w": weight}
    if bias is not None:
        inputs.append(vi("b", elem, list(bias.shape)))
        feeds["b"] = bias
    return run_ort(model_of(nodes, inputs, ["y", "state"], opset=21, initializers=inits), feeds)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_causal_conv_with_state_matches_concat_conv_slice(data: st.DataObject) -> None:
    """Against onnxruntime's Concat + Conv + Slice (+ Sigmoid, Mul): kernel sizes 1..4, with or
    without bias and past state, each activation, float32 and float16."""
    rng = drawn_rng(data.draw)
    dtype = data.draw(st.sampled_from([np.float32, np.float32, np.float16]))
    batch, channels, length, k = (data.draw(st.integers(1, n)) for n in (2, 3, 5, 4))
    x = rng.standard_normal((batch, channels, length)).astype(dtype)
    weight = rng.standard_normal((channels, 1, k)).astype(dtype)
    bias = rng.standard_normal(channels).astype(dtype) if data.draw(st.booleans()) else None
    past = rng.standard_normal((batch, channels, k - 1)).astype(dtype) if data.draw(st.booleans()) else None
    activation = data.draw(st.sampled_from(["none", "silu", "swish"]))
    attrs = {} if activation == "none" and data.draw(st.booleans()) else {"activation": activation}
    y, state = ovpool_of("CausalConvWithState", 27, [x, weight, bias, past], attrs, 2)
    zeros = np.zeros((batch, channels, k - 1), dtype)
    expected_y, expected_state = _concat_conv_slice(x, weight, bias, zeros if past is None else past, activation)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-6}
    assert y.dtype == dtype and y.shape == x.shape
    np.testing.assert_allclose(y.astype(np.float64), expected_y.astype(np.float64), **tol)
    np.testing.assert_array_equal(state, expected_state)


def test_causal_conv_with_state_by_example() -> None:
    """Kernel [1, 1] over [1, 2, 3] with no past: [0+1, 1+2, 2+3] = [1, 3, 5], state [3]."""
    x = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    y, state = ovpool_of("CausalConvWithState", 27, [x, np.ones((1, 1, 2), np.float32)], {}, 2)
    np.testing.assert_array_equal(y, [[[1.0, 3.0, 5.0]]])
    np.testing.assert_array_equal(state, [[[3.0]]])


CAUSAL_CONV_ERRORS = [
    ([np.ones((1, 2, 3), np.float32), np.ones((2, 1, 2), np.float32)], {"activation": "relu"}, "attribute 'activation'"),
    ([np.ones((1, 2, 3), np.float32), np.ones((2, 2, 2), np.float32)], {}, "weight"),
    ([np.ones((1, 2, 3), np.float32), np.ones((2, 1, 2), np.float32), None, np.ones((1, 2, 2), np.float32)], {}, "past_state"),
    ([np.ones((1, 2, 3), np.float32), np.ones((2, 1, 2), np.float32), np.ones(3, np.float32)], {}, "bias"),
    ([np.ones((1, 2, 3), np.float64), np.ones((2, 1, 2), np.float64)], {}, "type float64"),
]


@pytest.mark.parametrize(("inputs", "attrs", "match"), CAUSAL_CONV_ERRORS)
def test_causal_conv_with_state_refuses(inputs: list[np.ndarray | None], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("CausalConvWithState", 27, inputs, attrs, match=f"causalconvwithstate_node.*{match}")

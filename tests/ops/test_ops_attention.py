"""Attention-23/24/25, RotaryEmbedding-23, TensorScatter-24 and the preview FlexAttention-1 on
ovpool's numpy kernels: ONNX's node cases (and their ``_expanded`` function bodies), onnxruntime at
every since-version it runs, and the schema text computed here, one query at a time, where
onnxruntime lacks a feature (Attention-25's windows, FlexAttention)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import pytest
from harness import (
    assert_node_error,
    check,
    check_node_case,
    drawn_rng,
    expanded_case_params,
    node_case_params,
    ovpool_of,
    run_ovpool,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from ovpool.errors import ModelError

OPS = ("Attention", "RotaryEmbedding", "TensorScatter")
ATTENTION_OPSETS = (23, 24, 25)

# ONNX's expected bfloat16 values come from ml_dtypes, whose matmul and sums round every addition to
# bfloat16; ovpool accumulates in float32 and rounds once (as its MatMul): one bfloat16 step apart.
BF16_STEP = {"rtol": 0.0, "atol": 2.0**-7}


def _case_tolerance(name: str) -> dict[str, float]:
    return BF16_STEP if "bf16" in name else {}


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_node_cases(case: Any) -> None:
    check_node_case(case, **_case_tolerance(case.name))


@pytest.mark.parametrize("case", expanded_case_params(OPS))
def test_expanded_node_cases(case: Any) -> None:
    """The function bodies run on ovpool's kernels of the ops they hold, no onnx.reference; float16
    exactly (Softmax-13 computes the body's steps in the type)."""
    check_node_case(case, **_case_tolerance(case.name))


# ---------------------------------------------------------------- the schema, one query at a time


def schema_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    past: tuple[np.ndarray, np.ndarray] | None = None,
    nonpad: np.ndarray | None = None,
    attrs: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Y and qk_matmul_output of the Attention schema text in float64, written as the text states
    it: for each batch, query head and query, the keys allowed (bool mask, causal frontier ``j <= i
    + offset``, windows ``p - left <= j <= p + right``, ``j < nonpad_kv_seqlen``), softmax over
    ``scale * q.k`` (softcapped) plus the float mask and ``-inf`` where not allowed, a query with
    no key allowed a zero row. The second result is the qk output of ``qk_matmul_output_mode``."""
    attrs = attrs or {}
    three_d = q.ndim == 3
    if three_d:
        hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
        q = q.reshape(q.shape[0], q.shape[1], hq, -1).transpose(0, 2, 1, 3)
        k = k.reshape(k.shape[0], k.shape[1], hkv, -1).transpose(0, 2, 1, 3)
        v = v.reshape(v.shape[0], v.shape[1], hkv, -1).transpose(0, 2, 1, 3)
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    if past is not None:
        k = np.concatenate([past[0].astype(np.float64), k], axis=2)
        v = np.concatenate([past[1].astype(np.float64), v], axis=2)
    batch, q_heads, queries, size = q.shape
    keys, group = k.shape[2], q_heads // k.shape[1]
    scale = attrs.get("scale", 1 / math.sqrt(size))
    softcap, causal = attrs.get("softcap", 0.0), attrs.get("is_causal", 0)
    left, right = attrs.get("left_window_size", -1), attrs.get("right_window_size", -1)
    mode = attrs.get("qk_matmul_output_mode", 0)
    full_mask = None
    if mask is not None:
        kind = bool if mask.dtype == bool else np.float64
        padded = np.full(mask.shape[:-1] + (keys,), False if kind is bool else -np.inf, dtype=kind)
        padded[..., : mask.shape[-1]] = mask
        full_mask = np.broadcast_to(padded, (batch, q_heads, queries, keys))
    y = np.zeros((batch, q_heads, queries, v.shape[3]))
    qk = np.zeros((batch, q_heads, queries, keys))
    for b in range(batch):
        offset = past[0].shape[2] if past is not None else (int(nonpad[b]) - queries if nonpad is not None else 0)
        for h in range(q_heads):
            for i in range(queries):
                p = offset + i
                logits = []
                for j in range(keys):
                    s = scale * sum(q[b, h, i, e] * k[b, h // group, j, e] for e in range(size))
                    qk[b, h, i, j] = s
                    if softcap:
                        s = softcap * math.tanh(s / softcap)
                    if mode == 1:
                        qk[b, h, i, j] = s
                    allowed = not (causal and j > p)
                    allowed &= not (left >= 0 and j < p - left) and not (right >= 0 and j > p + right)
                    allowed &= not (nonpad is not None and j >= nonpad[b])
                    if full_mask is not None:
                        m = full_mask[b, h, i, j]
                        if full_mask.dtype == bool:
                            allowed &= bool(m)
                        else:
                            s += float(m)
                    logits.append(s if allowed else -math.inf)
                if mode == 2:
                    qk[b, h, i] = logits
                top = max(logits)
                if mode == 3:
                    qk[b, h, i] = 0.0
                if top == -math.inf:
                    continue  # fully masked: a zero row
                weights = [math.exp(s - top) for s in logits]
                total = sum(weights)
                y[b, h, i] = sum(w / total * v[b, h // group, j] for j, w in enumerate(weights))
                if mode == 3:
                    qk[b, h, i] = [w / total for w in weights]
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(batch, queries, -1)
    return y, qk


def _schema_tolerance(dtype: Any) -> dict[str, float]:
    """Against the schema text in float64: the function body takes sqrt(scale) in float32 whatever
    the type, so float64 results are that close to the exact text."""
    return {"rtol": 1e-6, "atol": 1e-7} if np.dtype(dtype) == np.float64 else _tolerance(dtype)


def _tolerance(dtype: Any) -> dict[str, float]:
    if np.dtype(dtype) == np.float16:
        return {"rtol": 3e-3, "atol": 3e-3}
    if np.dtype(dtype) == np.float64:
        return {"rtol": 1e-10, "atol": 1e-12}
    return {"rtol": 1e-5, "atol": 1e-5}


@st.composite
def attention_inputs(draw: st.DrawFn, opset: int) -> tuple[list[np.ndarray | None], dict[str, Any], int]:
    """Drawn Attention inputs and attributes onnxruntime runs: 3-D or 4-D, grouped heads, masks
    (bool or float, 2-D or 4-D), causal, a past, nonpad_kv_seqlen (24 on), softcap, scale, a
    qk_matmul_output mode; returns (inputs, attrs, number of outputs)."""
    rng = drawn_rng(draw)
    dtype = draw(st.sampled_from([np.float32, np.float32, np.float64, np.float16]))
    batch, kv_heads, group = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    q_heads = kv_heads * group
    queries, keys = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    size, v_size = draw(st.sampled_from([2, 4, 8])), draw(st.sampled_from([2, 4, 8]))
    past_len = draw(st.integers(0, 3))
    use_nonpad = opset >= 24 and past_len == 0 and draw(st.booleans())
    total = past_len + keys
    q = rng.standard_normal((batch, q_heads, queries, size)).astype(dtype)
    k = rng.standard_normal((batch, kv_heads, keys, size)).astype(dtype)
    v = rng.standard_normal((batch, kv_heads, keys, v_size)).astype(dtype)
    attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        q = q.transpose(0, 2, 1, 3).reshape(batch, queries, -1)
        k = k.transpose(0, 2, 1, 3).reshape(batch, keys, -1)
        v = v.transpose(0, 2, 1, 3).reshape(batch, keys, -1)
        attrs.update(q_num_heads=q_heads, kv_num_heads=kv_heads)
    mask_kind = draw(st.sampled_from(["none", "bool", "float"]))
    mask = None
    if mask_kind != "none":
        shape = draw(st.sampled_from([(queries, total), (batch, 1, queries, total), (1, q_heads, queries, total)]))
        mask = rng.random(shape) < 0.7 if mask_kind == "bool" else rng.standard_normal(shape).astype(dtype)
    if draw(st.booleans()):
        attrs["is_causal"] = 1
    if draw(st.booleans()):
        attrs["softcap"] = draw(st.sampled_from([0.5, 2.0, 10.0]))
    if draw(st.booleans()):
        attrs["scale"] = draw(st.sampled_from([0.1, 0.5, 1.0]))
    n_outputs = 1
    if draw(st.booleans()):
        attrs["qk_matmul_output_mode"] = draw(st.integers(0, 3))
        n_outputs = 4
    inputs: list[np.ndarray | None] = [q, k, v, mask]
    if past_len:
        inputs += [
            rng.standard_normal((batch, kv_heads, past_len, size)).astype(dtype),
            rng.standard_normal((batch, kv_heads, past_len, v_size)).astype(dtype),
        ]
        n_outputs = max(n_outputs, 3)
    elif use_nonpad:
        inputs += [None, None, rng.integers(1, total + 1, batch).astype(np.int64)]
    if n_outputs > 1 and not past_len:
        n_outputs = 4 if "qk_matmul_output_mode" in attrs else 1
    return inputs, attrs, n_outputs


def _ort_is_oracle(inputs: list[np.ndarray | None], attrs: dict[str, Any]) -> bool:
    """Whether onnxruntime 1.31 computes the schema's meaning here. Its CPU kernel aligns the
    causal frontier to the end of all keys (offset = keys + past - queries; onnxruntime issue 29020)
    where the schema's offset is the past length (0 without a past): they agree when K holds as many
    keys as Q queries, or with nonpad_kv_seqlen. For float64 it runs the function body of its own
    onnx, before the errata: NaN for a fully masked row, and no model at all for a float mask with
    is_causal (its -inf constant is float32)."""
    q, k = inputs[0], inputs[1]
    assert q is not None and k is not None
    axis = 1 if q.ndim == 3 else 2
    aligned = not attrs.get("is_causal") or len(inputs) == 7 or q.shape[axis] == k.shape[axis]
    return aligned and q.dtype != np.float64


def _masks(inputs: list[np.ndarray | None], attrs: dict[str, Any]) -> bool:
    """Whether some key is disallowed (bool mask, causal, nonpad_kv_seqlen): onnxruntime's mode-2
    qk output holds the lowest float there, the schema's ``-inf``."""
    mask = inputs[3]
    return bool(attrs.get("is_causal")) or len(inputs) == 7 or (mask is not None and mask.dtype == bool)


@pytest.mark.parametrize("opset", ATTENTION_OPSETS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_attention_matches_onnxruntime_and_the_schema(opset: int, data: st.DataObject) -> None:
    """Every output against onnxruntime where it computes the schema's meaning, Y and the qk output
    against the schema text."""
    inputs, attrs, n_outputs = data.draw(attention_inputs(opset))
    q = inputs[0]
    assert q is not None
    actual = ovpool_of("Attention", opset, inputs, attrs, n_outputs)
    if _ort_is_oracle(inputs, attrs):
        mode_2_masked = attrs.get("qk_matmul_output_mode") == 2 and _masks(inputs, attrs)
        check(
            "Attention", opset, inputs, attrs, n_outputs=min(n_outputs, 3) if mode_2_masked else n_outputs, **_tolerance(q.dtype)
        )
    past = (inputs[4], inputs[5]) if len(inputs) == 6 else None
    nonpad = inputs[6] if len(inputs) == 7 else None
    y, qk = schema_attention(q, inputs[1], inputs[2], inputs[3], past, nonpad, attrs)  # type: ignore[arg-type]
    schema_tolerance = _schema_tolerance(q.dtype)
    np.testing.assert_allclose(actual[0].astype(np.float64), y, **schema_tolerance)
    if n_outputs == 4:
        np.testing.assert_allclose(actual[3].astype(np.float64), qk, **schema_tolerance)


@pytest.mark.parametrize(("left", "right"), [(-1, -1), (0, -1), (2, -1), (-1, 0), (-1, 1), (1, 1), (2, 0), (0, 0)])
def test_attention_25_windows_match_the_schema(left: int, right: int) -> None:
    """Attention-25's windows (onnxruntime 1.31 has no window attributes), with and without
    is_causal, a bool mask, a past or nonpad_kv_seqlen, against the schema text."""
    rng = np.random.default_rng((left + 1) * 10 + right + 1)
    q = rng.standard_normal((2, 2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((2, 1, 5, 4)).astype(np.float32)
    v = rng.standard_normal((2, 1, 5, 3)).astype(np.float32)
    past = (rng.standard_normal((2, 1, 2, 4)).astype(np.float32), rng.standard_normal((2, 1, 2, 3)).astype(np.float32))
    nonpad = np.array([4, 2], np.int64)
    attrs: dict[str, Any] = {"left_window_size": left, "right_window_size": right}
    for causal in (0, 1):
        for cache in ("none", "past", "nonpad"):
            for mask in (None, rng.random((3, 7 if cache == "past" else 5)) < 0.8):
                inputs: list[np.ndarray | None] = [q, k, v, mask]
                if cache == "past":
                    inputs += list(past)
                elif cache == "nonpad":
                    inputs += [None, None, nonpad]
                given = {**attrs, "is_causal": causal, "qk_matmul_output_mode": 3}
                y, _, _, probabilities = ovpool_of("Attention", 25, inputs, given, 4)
                expected_y, expected_p = schema_attention(
                    q, k, v, mask, past if cache == "past" else None, nonpad if cache == "nonpad" else None, given
                )
                np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-6, err_msg=f"{cache} causal={causal}")
                np.testing.assert_allclose(probabilities, expected_p, rtol=1e-5, atol=1e-6, err_msg=f"{cache} causal={causal}")


@pytest.mark.parametrize("opset", ATTENTION_OPSETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_attention_fully_masked_rows_are_zero(opset: int, dtype: type) -> None:
    """The errata of 23 and 24 (and 25's text): a query with no key allowed gives a zero row of Y
    and of the mode-3 output, not NaN; with nonpad_kv_seqlen (24 on) a negative causal offset
    empties the leading queries. Query 1's bool mask row is all False, query 2's float row -inf."""
    rng = np.random.default_rng(opset)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(dtype) for _ in range(3))
    bool_mask = np.array([[True, False, True], [False, False, False], [True, True, True]])
    float_mask = np.array([[0.0, 1.0, -1.0], [0.5, 0.0, 0.0], [-np.inf, -np.inf, -np.inf]], dtype)
    for mask in (bool_mask, float_mask):
        y, qk = ovpool_of("Attention", opset, [q, k, v, mask], {"qk_matmul_output_mode": 3}, 4)[::3]
        row = 1 if mask.dtype == bool else 2
        assert not np.isnan(y).any() and not np.isnan(qk).any()
        assert (y[:, :, row] == 0).all() and (qk[:, :, row] == 0).all()
        expected_y, expected_qk = schema_attention(q, k, v, mask, attrs={"qk_matmul_output_mode": 3})
        np.testing.assert_allclose(y.astype(np.float64), expected_y, **_schema_tolerance(dtype))
        np.testing.assert_allclose(qk.astype(np.float64), expected_qk, **_schema_tolerance(dtype))
    if opset >= 24:
        (y,) = ovpool_of("Attention", opset, [q, k, v, None, None, None, np.array([1], np.int64)], {"is_causal": 1})
        assert (y[:, :, :2] == 0).all() and (y[:, :, 2] != 0).all()  # offset 1 - 3 = -2: queries 0 and 1 see nothing


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64])
def test_attention_integer_masks_are_added(dtype: type) -> None:
    """Attention's mask type U allows integers: not bool, so added to the scores as a float mask
    of their values (onnxruntime runs bool and float masks only)."""
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    mask = rng.integers(0, 4, (3, 3)).astype(dtype)
    (y,) = ovpool_of("Attention", 23, [q, k, v, mask])
    (as_float,) = ovpool_of("Attention", 23, [q, k, v, mask.astype(np.float32)])
    np.testing.assert_array_equal(y, as_float)
    np.testing.assert_allclose(y, schema_attention(q, k, v, mask)[0], rtol=1e-5, atol=1e-6)


def test_attention_float16_rounds_each_step_as_the_function_body() -> None:
    """Float16 as the body computes it in the type, each step rounded: the softmax's exponentials
    rounded to float16 before their sum (test_attention_4d_causal_fp16's expected data hold exactly
    that), not one float32 softmax rounded once, which differs by a float16 step here."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 1, 4, 8)).astype(np.float16) for _ in range(3))
    (y,) = ovpool_of("Attention", 23, [q, k, v], {})
    factor = np.float16(np.sqrt(np.float32(1 / np.sqrt(np.float32(8)))))
    scores = np.matmul((q * factor).astype(np.float32), (k * factor).astype(np.float32).transpose(0, 1, 3, 2)).astype(np.float16)
    shifted = scores - scores.max(axis=-1, keepdims=True)  # float16 arithmetic, step by step
    e = np.exp(shifted)
    probabilities = e / e.sum(axis=-1, keepdims=True, dtype=np.float32).astype(np.float16)
    expected = np.matmul(probabilities.astype(np.float32), v.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(y, expected)


def _qkv(rank: int = 4, heads: tuple[int, int] = (2, 2)) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    hq, hkv = heads
    shapes = [(1, hq, 2, 4), (1, hkv, 3, 4), (1, hkv, 3, 4)] if rank == 4 else [(1, 2, 4 * hq), (1, 3, 4 * hkv), (1, 3, 4 * hkv)]
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


ATTENTION_ERRORS = [
    (23, _qkv(3), {}, "attribute 'q_num_heads'"),
    (23, _qkv(3), {"q_num_heads": 3, "kv_num_heads": 2}, "attribute 'q_num_heads'"),
    (23, _qkv(), {"scale": -1.0}, "attribute 'scale'"),
    (23, _qkv(), {"qk_matmul_output_mode": 4}, "attribute 'qk_matmul_output_mode'"),
    (24, _qkv(), {"is_causal": 2}, "attribute 'is_causal'"),
    (24, _qkv(), {"softmax_precision": 7}, "attribute 'softmax_precision'"),
    (24, _qkv(), {"left_window_size": 1}, "attribute 'left_window_size'.*Attention-25"),
    (25, _qkv(), {"right_window_size": -2}, "attribute 'right_window_size'"),
    (25, _qkv(), {"q_num_heads": 2}, "attribute 'q_num_heads'.*3-D"),
    (23, _qkv(4, (3, 2)), {}, "not a multiple"),
    (23, [*_qkv(), None, np.zeros((1, 2, 1, 4), np.float32)], {}, "together"),
    (24, [*_qkv(), None, *_qkv()[1:], np.array([3], np.int64)], {}, "nonpad_kv_seqlen"),
    (23, [*_qkv(), np.zeros((2, 4), bool)], {}, "attn_mask"),
    (23, [*_qkv(), np.zeros((3, 3), bool)], {}, "does not broadcast"),
    (23, [_qkv()[0].astype(np.float64), *_qkv()[1:]], {}, "type"),
]


@pytest.mark.parametrize(("opset", "inputs", "attrs", "match"), ATTENTION_ERRORS)
def test_attention_refuses(opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("Attention", opset, inputs, attrs, match=f"attention_node.*{match}")


# ---------------------------------------------------------------- RotaryEmbedding


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_rotary_embedding_matches_onnxruntime(data: st.DataObject) -> None:
    """RotaryEmbedding-23 (its one version) against onnxruntime: 3-D and 4-D, interleaved or
    halves, a partial rotary_embedding_dim, with or without position_ids, float32 and float16."""
    rng = drawn_rng(data.draw)
    dtype = data.draw(st.sampled_from([np.float32, np.float16]))
    batch, heads, length = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    head_size = data.draw(st.sampled_from([2, 4, 8]))
    rotary = data.draw(st.sampled_from([0] + [d for d in (2, 4, 6) if d < head_size]))
    half = (rotary or head_size) // 2
    attrs: dict[str, Any] = {"interleaved": data.draw(st.integers(0, 1))}
    if rotary:
        attrs["rotary_embedding_dim"] = rotary
    x = rng.standard_normal((batch, heads, length, head_size)).astype(dtype)
    if data.draw(st.booleans()):
        x = x.transpose(0, 2, 1, 3).reshape(batch, length, heads * head_size)
        attrs["num_heads"] = heads
    if data.draw(st.booleans()):
        positions = 6
        cos, sin = (rng.uniform(-1, 1, (positions, half)).astype(dtype) for _ in range(2))
        inputs = [x, cos, sin, rng.integers(0, positions, (batch, length)).astype(np.int64)]
    else:
        cos, sin = (rng.uniform(-1, 1, (batch, length, half)).astype(dtype) for _ in range(2))
        inputs = [x, cos, sin]
    tolerance = 2e-3 if dtype == np.float16 else 1e-6
    check("RotaryEmbedding", 23, inputs, attrs, rtol=tolerance, atol=tolerance)


def _rotary_inputs(head_size: int = 4, half: int = 2) -> list[np.ndarray]:
    x = np.ones((1, 2, 3, head_size), np.float32)
    return [x, np.ones((4, half), np.float32), np.zeros((4, half), np.float32), np.zeros((1, 3), np.int64)]


ROTARY_ERRORS = [
    ([np.ones((1, 3, 8), np.float32), *_rotary_inputs()[1:]], {}, "attribute 'num_heads'"),
    (_rotary_inputs(), {"rotary_embedding_dim": 3}, "attribute 'rotary_embedding_dim'"),
    (_rotary_inputs(), {"interleaved": 2}, "attribute 'interleaved'"),
    ([*_rotary_inputs()[:3], np.full((1, 3), 4, np.int64)], {}, "position_ids"),
    (_rotary_inputs(half=3), {}, "caches"),
]


@pytest.mark.parametrize(("inputs", "attrs", "match"), ROTARY_ERRORS)
def test_rotary_embedding_refuses(inputs: list[np.ndarray], attrs: dict[str, Any], match: str) -> None:
    assert_node_error("RotaryEmbedding", 23, inputs, attrs, match=f"rotaryembedding_node.*{match}")


def test_rotary_embedding_rotates_pairs() -> None:
    """cos 0.6, sin 0.8 take the pair (1, 2) to (1*0.6 - 2*0.8, 2*0.6 + 1*0.8) = (-1, 2): the halves
    [1, 3 | 2, 4] pair (1, 2) and (3, 4); interleaved, (1, 3) pairs with (2, 4) as adjacent values."""
    x = np.array([[[[1.0, 3.0, 2.0, 4.0]]]], np.float32)
    cos, sin = np.full((1, 1, 2), 0.6, np.float32), np.full((1, 1, 2), 0.8, np.float32)
    (halves,) = ovpool_of("RotaryEmbedding", 23, [x, cos, sin])
    np.testing.assert_allclose(
        halves[0, 0, 0], [1 * 0.6 - 2 * 0.8, 3 * 0.6 - 4 * 0.8, 2 * 0.6 + 1 * 0.8, 4 * 0.6 + 3 * 0.8], rtol=1e-6
    )
    (pairs,) = ovpool_of("RotaryEmbedding", 23, [x, cos, sin], {"interleaved": 1})
    np.testing.assert_allclose(
        pairs[0, 0, 0], [1 * 0.6 - 3 * 0.8, 3 * 0.6 + 1 * 0.8, 2 * 0.6 - 4 * 0.8, 4 * 0.6 + 2 * 0.8], rtol=1e-6
    )


# ---------------------------------------------------------------- TensorScatter


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_tensor_scatter_matches_onnxruntime(data: st.DataObject) -> None:
    """TensorScatter-24 against onnxruntime: any axis but the batch's, linear and circular
    writes from per-batch indices (linear ones fit the cache), several element types."""
    rng = drawn_rng(data.draw)
    rank = data.draw(st.integers(2, 4))
    shape = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    axis = data.draw(st.integers(1, rank - 1))
    shape[axis] = capacity = data.draw(st.integers(1, 5))
    length = data.draw(st.integers(1, capacity))
    mode = data.draw(st.sampled_from(["linear", "circular"]))
    dtype = data.draw(st.sampled_from([np.float32, np.float16, np.int64, np.int8, np.uint8]))
    past = (rng.standard_normal(shape) * 10).astype(dtype)
    update_shape = list(shape)
    update_shape[axis] = length
    update = (rng.standard_normal(update_shape) * 10).astype(dtype)
    high = capacity - length if mode == "linear" else 2 * capacity
    inputs: list[np.ndarray | None] = [past, update]
    if data.draw(st.booleans()):
        inputs.append(rng.integers(0, high + 1, shape[0]).astype(np.int64))
    attrs: dict[str, Any] = {"mode": mode}
    if data.draw(st.booleans()):
        attrs["axis"] = axis - rank if data.draw(st.booleans()) else axis
    elif axis != rank - 2:
        attrs["axis"] = axis
    check("TensorScatter", 24, inputs, attrs)


def test_tensor_scatter_wraps_circular_writes() -> None:
    """A cache of 4 positions, an update of 2 written from index 3: positions 3 and 0 (circular);
    batch 1 from index 1: positions 1 and 2. The past is left as it was."""
    past = np.zeros((2, 4, 1), np.float32)
    update = np.array([[[1.0], [2.0]], [[3.0], [4.0]]], np.float32)
    (present,) = ovpool_of("TensorScatter", 24, [past, update, np.array([3, 1], np.int64)], {"mode": "circular", "axis": 1})
    np.testing.assert_array_equal(present[..., 0], [[2.0, 0.0, 0.0, 1.0], [0.0, 3.0, 4.0, 0.0]])
    assert not past.any()


TENSOR_SCATTER_ERRORS = [
    ({"axis": 0}, None, "attribute 'axis'"),
    ({"axis": 3}, None, "attribute 'axis'"),
    ({"mode": "wrap"}, None, "attribute 'mode'"),
    ({}, np.array([3, 0], np.int64), "linear"),
    ({}, np.array([-1, 0], np.int64), "negative"),
]


@pytest.mark.parametrize(("attrs", "indices", "match"), TENSOR_SCATTER_ERRORS)
def test_tensor_scatter_refuses(attrs: dict[str, Any], indices: np.ndarray | None, match: str) -> None:
    inputs = [np.zeros((2, 4, 1), np.float32), np.ones((2, 2, 1), np.float32), indices]
    assert_node_error("TensorScatter", 24, inputs, attrs, match=f"tensorscatter_node.*{match}")


# ---------------------------------------------------------------- FlexAttention (ai.onnx.preview)

PREVIEW = "ai.onnx.preview"


@pytest.mark.parametrize("case", node_case_params(["FlexAttention"]) + expanded_case_params(["FlexAttention"]))
def test_flex_attention_node_cases(case: Any) -> None:
    check_node_case(case)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize(("heads", "scale"), [((2, 2), None), ((4, 2), 0.3), ((3, 1), None)])
def test_flex_attention_matches_the_schema(dtype: type, heads: tuple[int, int], scale: float | None) -> None:
    """FlexAttention-1 without modifiers is softmax(scale * Q K^T) V per head (onnxruntime has no
    preview domain): grouped heads, scale, float32/float64/float16."""
    rng = np.random.default_rng(heads[0])
    q = rng.standard_normal((2, heads[0], 3, 4)).astype(dtype)
    k = rng.standard_normal((2, heads[1], 5, 4)).astype(dtype)
    v = rng.standard_normal((2, heads[1], 5, 2)).astype(dtype)
    attrs = {} if scale is None else {"scale": scale}
    (y,) = ovpool_of("FlexAttention", 1, [q, k, v], attrs, domain=PREVIEW)
    expected, _ = schema_attention(q, k, v, attrs=attrs)
    assert y.dtype == dtype
    np.testing.assert_allclose(
        y.astype(np.float64), expected, **({"rtol": 1e-6, "atol": 1e-7} if dtype == np.float64 else _tolerance(dtype))
    )


def test_flex_attention_score_mod_masks() -> None:
    """A score_mod adding a float mask (an outer value of the graph, -inf on key 0) is the schema's
    additive mask: the same Y as Attention's with that mask."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    bias = np.array([-np.inf, 0.0, 0.5], np.float32)
    scores = helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, None)
    out = helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, None)
    body = helper.make_graph([helper.make_node("Add", ["scores", "bias"], ["out"])], "mod", [scores], [out])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain=PREVIEW, score_mod=body)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1, 2, 3, 4]) for n in "qkv"],
        [helper.make_empty_tensor_value_info("y")],
        initializer=[onnx.numpy_helper.from_array(bias, "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid(PREVIEW, 1)])
    (y,) = run_ovpool(model, {"q": q, "k": k, "v": v})
    expected, _ = schema_attention(q, k, v, np.broadcast_to(bias, (3, 3)))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_flex_attention_refuses_mismatched_heads() -> None:
    q, k, v = (np.zeros((1, h, 2, 4), np.float32) for h in (3, 2, 2))
    with pytest.raises(ModelError, match="flexattention_node.*multiple"):
        ovpool_of("FlexAttention", 1, [q, k, v], domain=PREVIEW)


@pytest.mark.parametrize("opset", ATTENTION_OPSETS)
@pytest.mark.parametrize(
    ("heads", "causal", "mask", "scale"),
    [
        ((2, 2), 0, None, None),
        ((4, 2), 1, None, None),
        ((3, 1), 0, "bool", 0.2),
        ((2, 1), 1, "float", None),
        ((2, 2), 0, "float", 0.7),
    ],
)
def test_attention_matches_torch_sdpa(
    opset: int, heads: tuple[int, int], causal: int, mask: str | None, scale: float | None
) -> None:
    """Float64 against PyTorch's scaled_dot_product_attention (grouped heads shared as ONNX shares
    them, ``enable_gqa``; its ``is_causal`` is the top-left mask, the schema's without a cache)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(heads[0] * 7 + causal)
    q = rng.standard_normal((2, heads[0], 3, 4))
    k = rng.standard_normal((2, heads[1], 5, 4))
    v = rng.standard_normal((2, heads[1], 5, 6))
    attn_mask = None if mask is None else rng.random((3, 5)) < 0.8 if mask == "bool" else rng.standard_normal((3, 5))
    attrs: dict[str, Any] = {"is_causal": causal} | ({} if scale is None else {"scale": scale})
    (y,) = ovpool_of("Attention", opset, [q, k, v, attn_mask], attrs)
    torch_mask = None if attn_mask is None else torch.from_numpy(attn_mask)
    if torch_mask is not None and causal:  # torch takes one or the other: fold the causal mask into it
        below = torch.ones(3, 5, dtype=torch.bool).tril()
        torch_mask = torch_mask & below if mask == "bool" else torch_mask.masked_fill(~below, -math.inf)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)),
        attn_mask=torch_mask,
        is_causal=bool(causal) and torch_mask is None,
        scale=scale,
        enable_gqa=True,
    ).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)

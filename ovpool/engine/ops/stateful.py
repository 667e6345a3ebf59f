"""Sequence mixers that carry a state between calls: LinearAttention-27 and CausalConvWithState-27.

LinearAttention runs its recurrence token by token, in float32 whatever the input type (the
schema's reference and function body accumulate the state in float32; the outputs are cast to the
query's type, the present state to the past state's type, or the query's without one). Per key/value
head, with ``S`` of (d_k, d_v) starting at ``past_state`` or zeros:

* ``linear``: ``S = S + k v^T``;
* ``gated``: ``S = exp(g) S + k v^T`` (``g`` the log-space ``decay``, per head or per key dimension);
* ``delta``: ``S = S + k (beta (v - S^T k))^T``;
* ``gated_delta`` (default): ``S = exp(g) S`` first, then the delta update;

and each query head reads ``o = scale * q^T S`` of its key/value head (query head ``h`` reads head
``h // (q_num_heads / kv_num_heads)``). With d_k = d_v = 1, q = k = v = 1 and scale 1, ``linear``
gives outputs 1, 2, 3 over three tokens and a state of 3.

CausalConvWithState is a depthwise Conv1d over ``past_state`` (zeros without it, k - 1 positions)
followed by the input: output ``y[t] = bias + sum_i w[i] * padded[t + i]``, then SiLU
(``silu``/``swish``: ``y * sigmoid(y)`` in float32 of the convolution rounded to the type); the
present state is the last k - 1 positions of the padded sequence. Kernel [1, 1] over [1, 2, 3]
with no past gives [1, 3, 5] and state [3].
"""

from __future__ import annotations

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, register
from ovpool.engine.ops.checks import float_attr, int_attr, str_attr, type_guard

_RULES = ("linear", "gated", "delta", "gated_delta")


def _heads(node: OpNode, x: np.ndarray, name: str, heads: int) -> np.ndarray:
    """(B, T, H * D) as float32 (B, H, T, D)."""
    if x.ndim != 3:
        raise node.fail(f"{name} has shape {x.shape}; LinearAttention takes (batch, tokens, heads * size)")
    if x.shape[2] % heads:
        raise node.fail(f"{name}'s last axis {x.shape[2]} is not a multiple of {heads} heads")
    b, t, hidden = x.shape
    return x.reshape(b, t, heads, hidden // heads).transpose(0, 2, 1, 3).astype(np.float32)


@register("LinearAttention", 27)
def linear_attention(node: OpNode) -> Kernel:
    """LinearAttention-27: the recurrence of ``update_rule`` token by token in float32, outputs
    (B, T, H_q * d_v) and the present state (B, H_kv, d_k, d_v); ``scale`` 0 (default) is
    ``1/sqrt(d_k)``; ``chunk_size`` is a tuning hint without effect."""
    check_types = type_guard(node)
    rule = str_attr(node, "update_rule", "gated_delta", _RULES)
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    heads = []
    for name in ("q_num_heads", "kv_num_heads"):
        if name not in node.attrs:
            raise node.fail("is required", name)
        value = int_attr(node, name, 0)
        if value < 1:
            raise node.fail(f"{value} is not a positive head count", name)
        heads.append(value)
    q_heads, kv_heads = heads
    if q_heads % kv_heads:
        raise node.fail(f"{q_heads} is not a multiple of kv_num_heads {kv_heads}", "q_num_heads")
    if int_attr(node, "chunk_size", 64) < 1:
        raise node.fail(f"{node.attr('chunk_size')} is not a positive chunk size", "chunk_size")
    scale_attr = float_attr(node, "scale", 0.0)
    group = q_heads // kv_heads

    def kernel(
        query: np.ndarray,
        key: np.ndarray,
        value: np.ndarray,
        past_state: np.ndarray | None = None,
        decay: np.ndarray | None = None,
        beta: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        check_types(query, key, value, past_state, decay, beta)
        for name, given, needed in (("decay", decay, gating), ("beta", beta, delta)):
            if needed and given is None:
                raise node.fail(f"update_rule '{rule}' needs the input {name}")
            if not needed and given is not None:
                raise node.fail(f"update_rule '{rule}' takes no input {name}")
        q, k, v = (
            _heads(node, query, "query", q_heads),
            _heads(node, key, "key", kv_heads),
            _heads(node, value, "value", kv_heads),
        )
        b, _, t, d_k = q.shape
        d_v = v.shape[3]
        if k.shape[:3] != (b, kv_heads, t) or k.shape[3] != d_k or v.shape[2] != t:
            raise node.fail(f"query {query.shape}, key {key.shape} and value {value.shape} disagree on batch, tokens or d_k")
        g = None
        if decay is not None:
            if decay.ndim != 3 or decay.shape[:2] != (b, t) or decay.shape[2] not in (kv_heads, kv_heads * d_k):
                raise node.fail(f"decay has shape {decay.shape}, expected ({b}, {t}, {kv_heads}) or ({b}, {t}, {kv_heads * d_k})")
            g = np.exp(decay.reshape(b, t, kv_heads, -1).transpose(0, 2, 1, 3).astype(np.float32))  # (B, H_kv, T, 1 or d_k)
        rate = None
        if beta is not None:
            if beta.ndim != 3 or beta.shape[:2] != (b, t) or beta.shape[2] not in (kv_heads, 1):
                raise node.fail(f"beta has shape {beta.shape}, expected ({b}, {t}, {kv_heads}) or ({b}, {t}, 1)")
            rate = beta.reshape(b, t, -1, 1).transpose(0, 2, 1, 3).astype(np.float32)  # (B, H_kv or 1, T, 1)
        if past_state is not None:
            if past_state.shape != (b, kv_heads, d_k, d_v):
                raise node.fail(f"past_state has shape {past_state.shape}, expected ({b}, {kv_heads}, {d_k}, {d_v})")
            state = past_state.astype(np.float32)
        else:
            state = np.zeros((b, kv_heads, d_k, d_v), np.float32)
        scale = np.float32(scale_attr) if scale_attr else np.float32(1) / np.sqrt(np.float32(d_k))
        out = np.empty((b, q_heads, t, d_v), np.float32)
        for i in range(t):
            k_t, v_t = k[:, :, i], v[:, :, i]
            if g is not None:
                state = state * g[:, :, i, :, None]
            if rate is not None:
                v_t = rate[:, :, i] * (v_t - np.einsum("bhdm,bhd->bhm", state, k_t))
            state = state + k_t[..., :, None] * v_t[..., None, :]
            read = np.repeat(state, group, axis=1) if group > 1 else state
            out[:, :, i] = scale * np.einsum("bhd,bhdm->bhm", q[:, :, i], read)
        output = out.transpose(0, 2, 1, 3).reshape(b, t, q_heads * d_v).astype(query.dtype)
        present = state.astype(past_state.dtype if past_state is not None else query.dtype)
        return (output, present)[: node.n_outputs]

    return kernel


@register("CausalConvWithState", 27)
def causal_conv_with_state(node: OpNode) -> Kernel:
    """CausalConvWithState-27: input (B, C, L), weight (C, 1, k), optional bias (C,) and
    past_state (B, C, k - 1); output (B, C, L) and present state (B, C, k - 1). The convolution
    accumulates in float32 (float64 never: the type is float, float16 or bfloat16) and is rounded to
    the type once, before the activation."""
    check_types = type_guard(node)
    activation = str_attr(node, "activation", "none", ("none", "silu", "swish"))

    def kernel(
        x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, past_state: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        check_types(x, weight, bias, past_state)
        if x.ndim != 3:
            raise node.fail(f"input has shape {x.shape}, expected (batch, channels, length)")
        b, c, length = x.shape
        if weight.ndim != 3 or weight.shape[:2] != (c, 1) or weight.shape[2] < 1:
            raise node.fail(f"weight has shape {weight.shape}, expected ({c}, 1, kernel size)")
        k = weight.shape[2]
        if bias is not None and bias.shape != (c,):
            raise node.fail(f"bias has shape {bias.shape}, expected ({c},)")
        if past_state is not None and past_state.shape != (b, c, k - 1):
            raise node.fail(f"past_state has shape {past_state.shape}, expected ({b}, {c}, {k - 1})")
        past = np.zeros((b, c, k - 1), x.dtype) if past_state is None else past_state
        padded = np.concatenate([past, x], axis=2)
        wide = padded.astype(np.float32)
        taps = weight[:, 0, :].astype(np.float32)  # (C, k)
        y = np.zeros((b, c, length), np.float32)
        for i in range(k):
            y += wide[:, :, i : i + length] * taps[:, i, None]
        if bias is not None:
            y += bias.astype(np.float32)[:, None]
        y = y.astype(x.dtype).astype(np.float32)
        if activation != "none":
            with np.errstate(over="ignore"):
                y = y * (np.float32(1) / (np.float32(1) + np.exp(-y)))
        present = padded[:, :, padded.shape[2] - (k - 1) :]
        return (y.astype(x.dtype), present)[: node.n_outputs]

    return kernel

"""Transformer attention: Attention-23/24/25, RotaryEmbedding-23, the cache update TensorScatter-24
and the preview FlexAttention-1, each as its schema states it.

Attention is ``softmax(softcap(Q*sqrt(scale) @ (K*sqrt(scale))^T) + bias) @ V`` per head, the
function body's steps in its order. ``scale`` defaults to ``1/sqrt(head_size)``: head size 4 scales
Q and K by ``sqrt(0.5) = 0.7071`` each (the square root computed in float32, as the body does, then
cast to the input type). The additive ``bias`` is composed of

* ``attn_mask``: a bool mask disallows its False cells (``-inf``), any other mask is added to the
  scores as it is; a mask shorter than the keys along its last axis is padded with ``-inf``;
* ``is_causal``: query ``i`` attends key ``j`` iff ``j <= i + offset`` (bottom-right alignment);
  ``offset`` is the past length with ``past_key``, ``nonpad_kv_seqlen[b] - q_sequence_length`` per
  batch with ``nonpad_kv_seqlen`` (24 on), else 0: 2 queries and 3 keys with a past of 1 let query 0
  see keys 0..1;
* ``left_window_size`` / ``right_window_size`` (25): query ``i`` at position ``p = offset + i``
  attends keys ``p - left <= j <= p + right`` (-1: unbounded);
* ``nonpad_kv_seqlen`` (24 on): keys ``j >= nonpad_kv_seqlen[b]`` of batch ``b`` disallowed.

A query row whose bias is ``-inf`` everywhere gives 0 (``Y`` and the mode-3 ``qk_matmul_output``),
never NaN (the errata of 23 and 24). Grouped heads (``q_num_heads = g * kv_num_heads``) share each
key/value head among ``g`` consecutive query heads (h0, h0, h1, h1 for g = 2). With ``past_key`` /
``past_value`` the keys and values are the past ones followed by ``K`` / ``V`` (``present_key`` /
``present_value``). ``qk_matmul_output`` holds the scores (mode 0), after softcap (1), with the bias
(2) or the probabilities (3).

Float16 and bfloat16 are computed as the body computes them in the type: every step (the scaling
products, the softcap's division, tanh and product, the bias addition, the softmax's subtraction,
exponential, sum and division) is rounded to the type, the two matrix products accumulate in float32
and are rounded once (as ovpool's MatMul). ``softmax_precision`` computes the softmax in the type it
names (1 float, 10 float16, 11 double, 16 bfloat16) and casts the probabilities back.

RotaryEmbedding rotates pairs of values of each head by ``position * frequency``: with cos 0.6 and
sin 0.8 the pair (1, 2) becomes ``(1*0.6 - 2*0.8, 2*0.6 + 1*0.8) = (-1, 2)``; the pairs are the two
halves of the rotated part (or adjacent values with ``interleaved=1``), the first ``rotary_embedding_dim``
values of each head (all by default), the rest passed through.

TensorScatter writes ``update`` into a copy of the cache along ``axis`` from each batch entry's
``write_indices`` (0 by default), wrapping modulo the cache length with ``mode='circular'``.
FlexAttention (ai.onnx.preview) is Attention without masks or caches whose scores and
probabilities may go through the ``score_mod`` / ``prob_mod`` subgraphs, in float32 (float64 for
double inputs) unless ``softmax_precision`` says otherwise; it has no fully-masked-row guard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ovpool import dtypes
from ovpool.engine.ops.base import Kernel, OpNode, normalize_axis, register
from ovpool.engine.ops.checks import float_attr, int_attr, str_attr, type_guard
from ovpool.engine.ops.control import _outer_slices
from ovpool.engine.ops.precision import rounding
from ovpool.engine.ops.softmax import softmax_steps

# softmax_precision values: TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_SOFTMAX_PRECISIONS = (1, 10, 11, 16)


def _work_type(*types: np.dtype) -> np.dtype:
    """float64 when any operand is double, else float32."""
    return np.dtype(np.float64) if any(t == np.float64 for t in types) else np.dtype(np.float32)


def _scaled_scores(
    q: np.ndarray, keys: np.ndarray, scale: float | None, step: Callable[[np.ndarray], np.ndarray], work: np.dtype
) -> np.ndarray:
    """``(Q * f) @ (K * f)^T`` with ``f = sqrt(scale)`` (default scale ``1/sqrt(head size)``)
    computed in float32 and cast to Q's type, as the bodies of Attention and FlexAttention have it:
    head size 4 gives f = sqrt(0.5) = 0.7071. The products are rounded by ``step``; the matrix
    product accumulates in ``work`` and is rounded once."""
    if scale is None:
        scale = float(np.float32(1) / np.sqrt(np.float32(q.shape[-1])))
    factor = np.asarray(np.sqrt(np.float32(scale)), dtype=q.dtype).astype(work)
    return step(np.matmul(step(q.astype(work) * factor), step(keys.astype(work).transpose(0, 1, 3, 2) * factor)))


@dataclass(frozen=True)
class AttentionAttrs:
    """The attributes of one Attention node, defaults applied (``None``: not given)."""

    scale: float | None
    is_causal: bool
    q_num_heads: int | None
    kv_num_heads: int | None
    softcap: float
    softmax_precision: int | None
    mode: int
    left_window: int
    right_window: int


def _scale(node: OpNode) -> float | None:
    """The ``scale`` attribute (None when not given, the head size's default), positive: the
    bodies scale Q and K by its square root."""
    if node.attr("scale") is None:
        return None
    scale = float_attr(node, "scale", 0.0)
    if not scale > 0:
        raise node.fail(f"{scale} is not positive: the schema scales Q and K by sqrt(scale)", "scale")
    return scale


def _attention_attrs(node: OpNode) -> AttentionAttrs:
    scale = _scale(node)
    heads = []
    for name in ("q_num_heads", "kv_num_heads"):
        value = node.attr(name)
        if value is not None:
            value = int_attr(node, name, 0)
            if value < 1:
                raise node.fail(f"{value} is not a positive head count", name)
        heads.append(value)
    precision = node.attr("softmax_precision")
    if precision is not None:
        precision = int_attr(node, "softmax_precision", 0, _SOFTMAX_PRECISIONS)
    windows = [0, 0]
    for i, name in enumerate(("left_window_size", "right_window_size")):
        if node.since < 25:
            if name in node.attrs:
                raise node.fail(f"is not an attribute of {node.op_type}-{node.since} (Attention-25 has it)", name)
            windows[i] = -1
            continue
        windows[i] = int_attr(node, name, -1)
        if windows[i] < -1:
            raise node.fail(f"{windows[i]} is neither -1 (unbounded) nor a size >= 0", name)
    return AttentionAttrs(
        scale=scale,
        is_causal=bool(int_attr(node, "is_causal", 0, (0, 1))),
        q_num_heads=heads[0],
        kv_num_heads=heads[1],
        softcap=float_attr(node, "softcap", 0.0),
        softmax_precision=precision,
        mode=int_attr(node, "qk_matmul_output_mode", 0, (0, 1, 2, 3)),
        left_window=windows[0],
        right_window=windows[1],
    )


def _precision_dtype(precision: int) -> np.dtype:
    return dtypes.np_dtype(dtypes.from_onnx(precision))


def _heads_view(node: OpNode, x: np.ndarray, name: str, heads: int | None, attribute: str) -> np.ndarray:
    """A 3-D input (batch, sequence, heads * size) as (batch, heads, sequence, size)."""
    if heads is None:
        raise node.fail(f"is required with 3-D inputs ({name} has shape {x.shape})", attribute)
    if x.shape[2] % heads:
        raise node.fail(f"{heads} does not divide the hidden size {x.shape[2]} of {name}", attribute)
    return x.reshape(x.shape[0], x.shape[1], heads, x.shape[2] // heads).transpose(0, 2, 1, 3)


def _allowed(q_len: int, kv_len: int, offset: np.ndarray, attrs: AttentionAttrs) -> np.ndarray | None:
    """Which keys each query may see by causality and the windows, (batch or 1, 1, q, kv); None
    when neither applies. ``offset`` has one value per batch (or one for all)."""
    if not attrs.is_causal and attrs.left_window < 0 and attrs.right_window < 0:
        return None
    position = np.arange(q_len)[:, None] + offset.reshape(-1, 1, 1, 1)  # p = offset + i
    distance = position - np.arange(kv_len)  # p - j
    allowed = np.ones(distance.shape, dtype=bool)
    if attrs.is_causal:
        allowed &= distance >= 0
    if attrs.left_window >= 0:
        allowed &= distance <= attrs.left_window
    if attrs.right_window >= 0:
        allowed &= -distance <= attrs.right_window
    return allowed


def _four_d(
    node: OpNode, attrs: AttentionAttrs, q: np.ndarray, k: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K and V as (batch, heads, sequence, size), checked against each other: 3-D inputs split
    by ``q_num_heads`` / ``kv_num_heads``; with 4-D ones the head counts may not be given (25) or
    must be the inputs' own (23, 24)."""
    rank = q.ndim
    if rank not in (3, 4) or k.ndim != rank or v.ndim != rank:
        raise node.fail(f"Q, K and V are all 3-D or all 4-D, not of ranks {q.ndim}, {k.ndim}, {v.ndim}")
    if rank == 3:
        q4 = _heads_view(node, q, "Q", attrs.q_num_heads, "q_num_heads")
        k4 = _heads_view(node, k, "K", attrs.kv_num_heads, "kv_num_heads")
        v4 = _heads_view(node, v, "V", attrs.kv_num_heads, "kv_num_heads")
    else:
        for name, given, actual in (
            ("q_num_heads", attrs.q_num_heads, q.shape[1]),
            ("kv_num_heads", attrs.kv_num_heads, k.shape[1]),
        ):
            if given is not None and (node.since >= 25 or given != actual):
                raise node.fail(f"is for 3-D inputs; the 4-D inputs have {actual} heads", name)
        q4, k4, v4 = q, k, v
    batch, q_heads, _, head_size = q4.shape
    kv_heads = k4.shape[1]
    if k4.shape[0] != batch or v4.shape[0] != batch or v4.shape[1] != kv_heads or k4.shape[3] != head_size:
        raise node.fail(f"Q {q.shape}, K {k.shape} and V {v.shape} do not agree on batch, heads and head size")
    if k4.shape[2] != v4.shape[2]:
        raise node.fail(f"K and V have {k4.shape[2]} and {v4.shape[2]} keys")
    if q_heads % kv_heads:
        raise node.fail(f"{q_heads} query heads are not a multiple of {kv_heads} key/value heads")
    return q4, k4, v4


def _bias(
    node: OpNode,
    attrs: AttentionAttrs,
    attn_mask: np.ndarray | None,
    nonpad_kv_seqlen: np.ndarray | None,
    offset: np.ndarray,
    shape: tuple[int, int, int, int],
    step: Callable[[np.ndarray], np.ndarray],
    work: np.dtype,
) -> np.ndarray:
    """The additive bias in T1 (rounded by ``step``, carried in ``work``), broadcastable to
    ``shape`` (batch, query heads, queries, keys): the mask (a bool one as 0 / -inf, padded with
    -inf to the keys), then -inf where causality, the windows or ``nonpad_kv_seqlen`` disallow."""
    batch, q_heads, q_len, kv_len = shape
    bias = np.zeros((q_len, kv_len), dtype=work)
    if attn_mask is not None:
        if attn_mask.ndim == 0 or attn_mask.shape[-1] > kv_len:
            raise node.fail(f"attn_mask of shape {attn_mask.shape} is not one of at most {kv_len} keys")
        if attn_mask.dtype == np.bool_:
            mask = np.where(attn_mask, work.type(0), work.type(-np.inf))
        else:
            mask = step(attn_mask.astype(work))
        pad = kv_len - mask.shape[-1]
        if pad:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)], constant_values=-np.inf)
        try:
            bias = bias + mask
            np.broadcast_shapes(bias.shape, shape)
        except ValueError:
            raise node.fail(f"attn_mask of shape {attn_mask.shape} does not broadcast to {shape}") from None
    allowed = _allowed(q_len, kv_len, offset, attrs)
    if allowed is not None:
        bias = bias + np.where(allowed, work.type(0), work.type(-np.inf))
    if nonpad_kv_seqlen is not None:
        valid = np.arange(kv_len) < nonpad_kv_seqlen.reshape(batch, 1, 1, 1)
        bias = bias + np.where(valid, work.type(0), work.type(-np.inf))
    return bias


@register("Attention", 23, 25)
def attention(node: OpNode) -> Kernel:
    """Attention-23 (masks, causal, past key/value, softcap, GQA), -24 (``nonpad_kv_seqlen``, its
    per-batch causal offset) and -25 (``left_window_size``/``right_window_size``; head counts refused
    with 4-D inputs): one query [1, 0] and keys [1, 0], [0, 1] of head size 2 score 0.7071 and 0,
    weights 0.67 and 0.33."""
    attrs = _attention_attrs(node)
    check_types = type_guard(node)
    n_outputs = node.n_outputs

    def kernel(
        q: np.ndarray,
        k: np.ndarray,
        v: np.ndarray,
        attn_mask: np.ndarray | None = None,
        past_key: np.ndarray | None = None,
        past_value: np.ndarray | None = None,
        nonpad_kv_seqlen: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        check_types(q, k, v, attn_mask, past_key, past_value)
        if nonpad_kv_seqlen is not None and nonpad_kv_seqlen.dtype != np.int64:
            raise node.fail(f"input 6 (nonpad_kv_seqlen) has type {nonpad_kv_seqlen.dtype}, not int64")
        if (past_key is None) != (past_value is None):
            raise node.fail("past_key and past_value are given together or not at all")
        if nonpad_kv_seqlen is not None and past_key is not None:
            raise node.fail("nonpad_kv_seqlen (an external cache) is not used with past_key and past_value")
        q4, k4, v4 = _four_d(node, attrs, q, k, v)
        batch, q_heads, q_len, head_size = q4.shape
        kv_heads = k4.shape[1]
        if past_key is not None and past_value is not None:
            expected = (batch, kv_heads, past_key.shape[2] if past_key.ndim == 4 else -1)
            for name, past, size in (("past_key", past_key, head_size), ("past_value", past_value, v4.shape[3])):
                if past.ndim != 4 or past.shape[:3] != expected or past.shape[3] != size:
                    raise node.fail(f"{name} has shape {past.shape}, expected ({batch}, {kv_heads}, past length, {size})")
            present_key = np.concatenate((past_key, k4), axis=2)
            present_value = np.concatenate((past_value, v4), axis=2)
            offset = np.array([past_key.shape[2]])
        else:
            present_key, present_value = k4, v4
            offset = np.array([0])
        kv_len = present_key.shape[2]
        if nonpad_kv_seqlen is not None:
            if nonpad_kv_seqlen.shape != (batch,):
                raise node.fail(f"nonpad_kv_seqlen has shape {nonpad_kv_seqlen.shape}, expected ({batch},)")
            offset = nonpad_kv_seqlen.astype(np.int64) - q_len

        t1 = q.dtype
        work = _work_type(q.dtype, v.dtype)
        step = rounding(t1, work)

        bias = _bias(node, attrs, attn_mask, nonpad_kv_seqlen, offset, (batch, q_heads, q_len, kv_len), step, work)

        group = q_heads // kv_heads
        keys = np.repeat(present_key, group, axis=1) if group > 1 else present_key
        values = np.repeat(present_value, group, axis=1) if group > 1 else present_value
        scores = _scaled_scores(q4, keys, attrs.scale, step, work)
        capped = scores
        if attrs.softcap:
            cap = np.asarray(attrs.softcap, dtype=t1).astype(work)
            capped = step(step(np.tanh(step(scores / cap))) * cap)
        with np.errstate(invalid="ignore"):
            biased = step(capped + bias)
        if attrs.softmax_precision is not None:
            precision = _precision_dtype(attrs.softmax_precision)
            soft_work = _work_type(precision, work)
            probabilities = softmax_steps(biased.astype(precision).astype(soft_work), -1, rounding(precision, soft_work))
            probabilities = step(probabilities.astype(precision).astype(work))
        else:
            probabilities = softmax_steps(biased, -1, step)
        masked_rows = np.isneginf(bias.max(axis=-1, keepdims=True))
        probabilities = np.where(masked_rows, work.type(0), probabilities)
        y = np.matmul(probabilities, values.astype(work)).astype(t1)
        if q.ndim == 3:
            y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, -1)
        qk = (scores, capped, biased, probabilities)[attrs.mode]
        results = (y, present_key, present_value, np.broadcast_to(qk, (batch, q_heads, q_len, kv_len)).astype(t1))
        return results[:n_outputs]

    return kernel


@register("RotaryEmbedding", 23)
def rotary_embedding(node: OpNode) -> Kernel:
    """RotaryEmbedding-23: X of (batch, heads, sequence, head_size), or (batch, sequence, hidden)
    with ``num_heads``; the caches (max_position, rotary_dim / 2) indexed by ``position_ids``
    (batch, sequence), or (batch, sequence, rotary_dim / 2) without them. Each pair (x1, x2) becomes
    ``(cos*x1 - sin*x2, sin*x1 + cos*x2)``, each product and sum rounded to X's type: with cos 0.6,
    sin 0.8 the pair (1, 2) becomes (-1, 2)."""
    check_types = type_guard(node)
    interleaved = bool(int_attr(node, "interleaved", 0, (0, 1)))
    rotary_dim_attr = int_attr(node, "rotary_embedding_dim", 0)
    if rotary_dim_attr < 0:
        raise node.fail(f"{rotary_dim_attr} is negative", "rotary_embedding_dim")
    num_heads = node.attr("num_heads")
    if num_heads is not None:
        num_heads = int_attr(node, "num_heads", 0)
        if num_heads < 1:
            raise node.fail(f"{num_heads} is not a positive head count", "num_heads")

    def kernel(
        x: np.ndarray, cos_cache: np.ndarray, sin_cache: np.ndarray, position_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        check_types(x, cos_cache, sin_cache, position_ids)
        if x.ndim == 4:
            heads = x.transpose(0, 2, 1, 3)  # (batch, sequence, heads, head_size)
        elif x.ndim == 3:
            if num_heads is None:
                raise node.fail(f"is required with a 3-D input (X has shape {x.shape})", "num_heads")
            if x.shape[2] % num_heads:
                raise node.fail(f"{num_heads} does not divide the hidden size {x.shape[2]}", "num_heads")
            heads = x.reshape(x.shape[0], x.shape[1], num_heads, x.shape[2] // num_heads)
        else:
            raise node.fail(f"X has rank {x.ndim}; RotaryEmbedding takes 3-D or 4-D inputs")
        batch, length, _, head_size = heads.shape
        rotary_dim = rotary_dim_attr or head_size
        if rotary_dim > head_size or rotary_dim % 2:
            raise node.fail(f"{rotary_dim} is not an even size of at most the head size {head_size}", "rotary_embedding_dim")
        half = rotary_dim // 2
        if cos_cache.shape != sin_cache.shape:
            raise node.fail(f"cos_cache {cos_cache.shape} and sin_cache {sin_cache.shape} differ in shape")
        if position_ids is not None:
            if position_ids.shape != (batch, length) or cos_cache.ndim != 2:
                raise node.fail(
                    f"position_ids {position_ids.shape} and caches {cos_cache.shape} are not (batch, sequence) and (positions, {half})"
                )
            if position_ids.size and not (0 <= position_ids.min() and position_ids.max() < cos_cache.shape[0]):
                raise node.fail(f"position_ids hold positions outside the {cos_cache.shape[0]} of the caches")
            cos, sin = cos_cache[position_ids], sin_cache[position_ids]
        else:
            cos, sin = cos_cache, sin_cache
        if cos.shape != (batch, length, half):
            raise node.fail(f"the caches give {cos.shape} per token, expected ({batch}, {length}, {half})")
        work = np.dtype(np.float32)
        step = rounding(x.dtype, work)
        cos, sin = cos[:, :, None, :].astype(work), sin[:, :, None, :].astype(work)
        rotated = heads[..., :rotary_dim].astype(work)
        if interleaved:
            x1, x2 = rotated[..., 0::2], rotated[..., 1::2]
        else:
            x1, x2 = rotated[..., :half], rotated[..., half:]
        real = step(step(cos * x1) - step(sin * x2))
        imaginary = step(step(sin * x1) + step(cos * x2))
        result = heads.copy()
        if interleaved:
            result[..., 0:rotary_dim:2], result[..., 1:rotary_dim:2] = real, imaginary
        else:
            result[..., :half], result[..., half:rotary_dim] = real, imaginary
        y = result.reshape(x.shape) if x.ndim == 3 else result.transpose(0, 2, 1, 3)
        return (y,)

    return kernel


@register("TensorScatter", 24)
def tensor_scatter(node: OpNode) -> Kernel:
    """TensorScatter-24, the cache update: ``update`` written into a copy of ``past_cache`` along
    ``axis`` (default -2, not the batch axis) from ``write_indices[b]`` (default 0) of each batch
    entry; ``mode='circular'`` wraps the positions modulo the cache length, ``'linear'`` (default)
    requires them to fit: a cache of 4 positions, an update of 2 written from index 3 lands at 3
    and 0 (circular) or is the node's error (linear)."""

    mode = str_attr(node, "mode", "linear", ("linear", "circular"))
    axis_attr = int_attr(node, "axis", -2)

    def kernel(past: np.ndarray, update: np.ndarray, write_indices: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        if update.dtype != past.dtype:
            raise node.fail(f"update has type {update.dtype}, past_cache {past.dtype}")
        if write_indices is not None and write_indices.dtype != np.int64:
            raise node.fail(f"write_indices has type {write_indices.dtype}, not int64")
        rank = past.ndim
        axis = normalize_axis(node, axis_attr, rank)
        if axis == 0:
            raise node.fail("is the batch axis 0", "axis")
        if update.ndim != rank or any(u != p for i, (u, p) in enumerate(zip(update.shape, past.shape)) if i != axis):
            raise node.fail(f"update of shape {update.shape} differs from past_cache {past.shape} off axis {axis}")
        batch, capacity, length = past.shape[0], past.shape[axis], update.shape[axis]
        if length > capacity:
            raise node.fail(f"an update of {length} positions is longer than the cache's {capacity}")
        starts = np.zeros(batch, np.int64) if write_indices is None else write_indices.reshape(-1)
        if starts.shape != (batch,):
            raise node.fail(
                f"write_indices has shape {write_indices.shape if write_indices is not None else ()}, expected ({batch},)"
            )
        if starts.size and starts.min() < 0:
            raise node.fail(f"write_indices {starts.tolist()} holds a negative index")
        if mode == "linear" and starts.size and starts.max() + length > capacity:
            raise node.fail(
                f"write_indices {starts.tolist()} plus {length} positions pass the cache's {capacity} (mode 'linear')"
            )
        present = past.copy()
        into, source = np.moveaxis(present, axis, 1), np.moveaxis(update, axis, 1)  # views, sequence axis 1
        for b in range(batch):
            into[b, (starts[b] + np.arange(length)) % capacity] = source[b]
        return (present,)

    return kernel


def _modifier(node: OpNode, name: str, where: slice | None) -> Callable[[np.ndarray, tuple[np.ndarray, ...]], np.ndarray]:
    """FlexAttention's ``score_mod`` / ``prob_mod`` as a function of the tensor and the kernel's
    arguments (its outer values sit at ``where``); the identity when the node has none. Its result
    keeps the tensor's shape and type."""
    graph = node.subgraphs.get(name)
    if graph is None or where is None:
        return lambda x, args: x
    if len(graph.input_names) != 1 or len(graph.output_names) != 1:
        raise node.fail(
            f"takes {len(graph.input_names)} inputs and returns {len(graph.output_names)}; a modifier takes and returns one", name
        )

    def modify(x: np.ndarray, args: tuple[np.ndarray, ...]) -> np.ndarray:
        (y,) = graph([x], args[where])
        y = np.asarray(y)
        if y.shape != x.shape or y.dtype != x.dtype:
            raise node.fail(f"returned {y.dtype} {y.shape} for {x.dtype} {x.shape}; a modifier keeps shape and type", name)
        return y

    return modify


@register("FlexAttention", 1, domain="ai.onnx.preview")
def flex_attention(node: OpNode) -> Kernel:
    """FlexAttention-1 of ai.onnx.preview, as its function body: Q and K of (B, H, L, E) scaled by
    ``sqrt(scale)`` each (default scale ``1/sqrt(E)``) in their type, their product rounded to it,
    then in ``softmax_precision`` (float32, or double for double inputs): ``score_mod``, softmax,
    ``prob_mod``, the product with V, cast back to Q's type. Grouped heads as Attention's. No
    fully-masked-row guard: a row of ``-inf`` scores gives NaN."""
    check_types = type_guard(node)
    scale_attr = _scale(node)
    precision = node.attr("softmax_precision")
    if precision is not None:
        precision = int_attr(node, "softmax_precision", 0, _SOFTMAX_PRECISIONS)
    where = _outer_slices(node)
    score_mod = _modifier(node, "score_mod", where.get("score_mod"))
    prob_mod = _modifier(node, "prob_mod", where.get("prob_mod"))

    def kernel(q: np.ndarray, k: np.ndarray, v: np.ndarray, *outer: np.ndarray) -> tuple[np.ndarray, ...]:
        args = (q, k, v, *outer)
        check_types(q, k, v)
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise node.fail(f"Q {q.shape}, K {k.shape} and V {v.shape} are not all rank 4")
        batch, q_heads, _, head_size = q.shape
        kv_heads = k.shape[1]
        if k.shape[0] != batch or v.shape[:3] != k.shape[:3] or k.shape[3] != head_size:
            raise node.fail(f"Q {q.shape}, K {k.shape} and V {v.shape} do not agree on batch, heads, keys and head size")
        if q_heads % kv_heads:
            raise node.fail(f"{q_heads} query heads are not a multiple of {kv_heads} key/value heads")
        t1 = q.dtype
        soft = _precision_dtype(precision) if precision is not None else np.dtype(np.float64 if t1 == np.float64 else np.float32)
        work = _work_type(t1, soft)
        step, soft_step = rounding(t1, work), rounding(soft, work)
        group = q_heads // kv_heads
        keys = np.repeat(k, group, axis=1) if group > 1 else k
        values = np.repeat(v, group, axis=1) if group > 1 else v
        scores = _scaled_scores(q, keys, scale_attr, step, work)
        scores = score_mod(soft_step(scores).astype(soft), args).astype(work)
        probabilities = prob_mod(softmax_steps(scores, -1, soft_step).astype(soft), args).astype(work)
        y = soft_step(np.matmul(probabilities, soft_step(values.astype(work))))
        return (y.astype(t1),)

    return kernel

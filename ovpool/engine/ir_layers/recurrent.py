"""LSTMSequence, GRUSequence and RNNSequence-5 on ONNX LSTM/GRU/RNN-14.

The sequences are batch-first (``[batch, seq, input]``, outputs ``[batch, directions, seq,
hidden]``), LSTM gates in the order f, i, c, o (ONNX: i, o, f, c), GRU z, r, h.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, layer
from ovpool.engine.ops.base import Kernel

_GATES = {"LSTMSequence": ("LSTM", 4, (1, 3, 0, 2)), "GRUSequence": ("GRU", 3, (0, 1, 2)), "RNNSequence": ("RNN", 1, (0,))}


def _reordered(w: np.ndarray | None, gates: int, order: Sequence[int]) -> np.ndarray | None:
    """Gate blocks along axis 1 of ``[directions, gates*hidden, ...]`` reordered: OpenVINO's LSTM f, i,
    c, o as ONNX's i, o, f, c."""
    if w is None:
        return None
    blocks = np.split(w, gates, axis=1)
    return np.ascontiguousarray(np.concatenate([blocks[i] for i in order], axis=1))


def _onnx_bias(b: np.ndarray | None, op: str, gates: int, order: Sequence[int], linear_before_reset: bool) -> np.ndarray | None:
    """OpenVINO's one bias ``[directions, gates*hidden]`` (GRU with linear_before_reset: 4 blocks,
    the last the recurrent h bias) as ONNX's ``[directions, 2*gates*hidden]`` (Wb then Rb)."""
    if b is None:
        return None
    if op == "GRU" and linear_before_reset:
        z, r, wh, rh = np.split(b, 4, axis=1)
        zeros = np.zeros_like(z)
        return np.concatenate([z, r, wh, zeros, zeros, rh], axis=1)
    reordered = _reordered(b, gates, order)
    assert reordered is not None
    return np.concatenate([reordered, np.zeros_like(reordered)], axis=1)


_FUNCTIONS = {"LSTM": 3, "GRU": 2, "RNN": 1}


def _activations(node: LayerNode, names: list[str], op: str) -> list[str]:
    """The layer's ``activations``: one function per kind of gate (LSTM f, g, h; GRU f, g; RNN f),
    the same for both directions; OpenVINO reads the first ones and ignores any after them (the
    ONNX frontend writes ONNX's per-direction list: "relu,relu" for a bidirectional RNN is Relu)."""
    needed = _FUNCTIONS[op]
    if len(names) < needed:
        raise node.fail(f"has {len(names)} functions; {node.layer.type} needs {needed}", "activations")
    return names[:needed]


def _sequence(node: LayerNode) -> Kernel:
    """LSTMSequence/GRUSequence/RNNSequence-5 on ONNX LSTM/GRU/RNN-14 with ``layout=1``: inputs
    (X, H0[, C0], sequence_lengths, W, R, B), outputs Y ``[batch, directions, seq, hidden]``, Ho[, Co]."""
    op, gates, order = _GATES[node.layer.type]
    lstm = op == "LSTM"
    direction = node.choice("direction", "forward", ("forward", "reverse", "bidirectional"))
    directions = 2 if direction == "bidirectional" else 1
    names = [n.strip().capitalize() for n in node.text("activations", "").split(",") if n.strip()]
    linear_before_reset = op == "GRU" and node.flag("linear_before_reset", False)
    attrs: dict[str, Any] = {"hidden_size": node.integer("hidden_size"), "direction": direction, "layout": 1}
    if names:
        attrs["activations"] = _activations(node, names, op) * directions
    for name, onnx_name in (("activations_alpha", "activation_alpha"), ("activations_beta", "activation_beta")):
        values = [float(v) for v in node.text(name, "").split(",") if v.strip()]
        if values:
            attrs[onnx_name] = values
    clip = node.number("clip", 0.0)
    if clip > 0:
        attrs["clip"] = clip
    if linear_before_reset:
        attrs["linear_before_reset"] = 1
    w_at = 4 if lstm else 3
    weights = tuple(node.constant(w_at + i) for i in range(3))
    prepared = (
        _reordered(weights[0], gates, order),
        _reordered(weights[1], gates, order),
        _onnx_bias(weights[2], op, gates, order, linear_before_reset),
    )
    onnx_seq = node.onnx(op, 14, attrs, (None, *prepared), n_outputs=3 if lstm else 2)

    def kernel(x: np.ndarray, h0: np.ndarray, *rest: np.ndarray) -> tuple[np.ndarray, ...]:
        c0 = rest[0] if lstm else None
        lengths, w, r, b = rest[1:] if lstm else rest
        w_, r_, b_ = (
            p if p is not None else f(v)
            for p, v, f in zip(
                prepared,
                (w, r, b),
                (
                    lambda v: _reordered(v, gates, order),
                    lambda v: _reordered(v, gates, order),
                    lambda v: _onnx_bias(v, op, gates, order, linear_before_reset),
                ),
            )
        )
        results = onnx_seq(x, w_, r_, b_, lengths.astype(np.int32), h0, *((c0,) if lstm else ()))
        y = np.ascontiguousarray(results[0].transpose(0, 2, 1, 3))
        return (y, *results[1:])

    return kernel


for _type in _GATES:
    layer(_type, 5)(_sequence)

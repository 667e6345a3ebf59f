"""Prepare-time rewrites of a graph's plan that keep each node's meaning: Conv + BatchNormalization
folded into one Conv; in an IR, a convolution and the Add of its per-channel bias made one step
(``fuse_ir_conv_biases``, the same bits).

A BatchNormalization in inference form whose scale, B, mean and var are constants and whose X is
the output of a Conv with a constant W (and a constant B, or none), read by nothing else, is the
Conv with ``W' = W * s`` (each output channel ``m`` scaled by ``s[m]``) and
``B' = (B_conv - mean) * s + B_bn``, ``s = scale / sqrt(var + epsilon)``, as onnxruntime folds
them: with W 2, B_conv 1, scale 3, var 8, epsilon 1, mean 0.5, B_bn 0.25, s = 1, W' = 2 and
B' = 0.75, so an input 1 gives 2.75 either way. The factors are computed in float64 and rounded
once to W's type; the result then differs from the two nodes run apart by rounding (about 1e-7
of the values in float32). Only float32 and float64 weights are folded (a float16 Conv rounds its
output to float16 before the BatchNormalization reads it).

What a run must still see node by node (``GraphSession.run(..., observe=...)``) comes from the
unfused nodes: the session keeps them for observed runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, lookup
from ovpool.engine.plan import Prepared

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def fold_batch_norms(
    prepared: Sequence[Prepared], known: Mapping[str, Any], kept: frozenset[str], fresh: Callable[[str], str]
) -> tuple[list[Prepared], dict[str, Any]]:
    """``prepared`` with each foldable Conv + BatchNormalization pair made one Conv that writes the
    BatchNormalization's output, at the Conv's place; and the new constants (W', B') by the names
    ``fresh(hint)`` gave them. ``kept`` holds names that must stay values of their own (the graph's
    outputs)."""
    readers, producer = _readers_and_producers(prepared)
    replaced: dict[int, Prepared] = {}
    dropped: set[int] = set()
    constants: dict[str, Any] = {}
    for index, entry in enumerate(prepared):
        if entry.folded or not _inference_batch_norm(entry):
            continue
        x = entry.inputs[0]
        source = producer.get(x)
        if source is None or source in replaced or readers.get(x) != 1 or x in kept:
            continue
        conv = prepared[source]
        folded = _folded_weights(conv, entry, known)
        if folded is None:
            continue
        w_name, b_name = fresh(f"{conv.op.name}/W"), fresh(f"{conv.op.name}/B")
        constants[w_name], constants[b_name] = folded
        op = dataclasses.replace(conv.op, constants=(None, *folded))
        row = lookup(conv.op.op_type, conv.op.since, conv.op.domain)
        assert row is not None  # the Conv was prepared from this row
        replaced[source] = conv._replace(
            op=op, kernel=row.factory(op), inputs=(conv.inputs[0], w_name, b_name), outputs=entry.outputs
        )
        dropped.add(index)
    fused = [replaced.get(index, entry) for index, entry in enumerate(prepared) if index not in dropped]
    return fused, constants


def _inference_batch_norm(entry: Prepared) -> bool:
    """A BatchNormalization with one output computing Y from the given statistics per channel."""
    op = entry.op
    if op.op_type != "BatchNormalization" or op.domain or op.n_outputs != 1 or len(entry.inputs) != 5:
        return False
    if op.since < 9 and op.attr("spatial", 1) != 1:
        return False
    return op.since < 14 or op.attr("training_mode", 0) == 0


def _folded_weights(conv: Prepared, norm: Prepared, known: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(W * s, (B_conv - mean) * s + B_bn)`` in W's type, or None when the pair does not fold (a
    non-constant or non-float W, a Conv with more outputs, statistics not of shape (M,))."""
    op = conv.op
    if op.op_type != "Conv" or op.domain or len(conv.outputs) != 1 or len(conv.inputs) not in (2, 3):
        return None
    w = known.get(conv.inputs[1])
    b = known.get(conv.inputs[2]) if len(conv.inputs) == 3 else None
    if not isinstance(w, np.ndarray) or w.dtype not in _FLOATS or w.ndim < 3 or w.size == 0:
        return None
    channels = w.shape[0]
    if len(conv.inputs) == 3 and not (isinstance(b, np.ndarray) and b.dtype == w.dtype and b.shape == (channels,)):
        return None
    params = [known.get(name) for name in norm.inputs[1:5]]
    arrays = [p for p in params if isinstance(p, np.ndarray) and p.dtype.kind == "f" and p.shape == (channels,)]
    if len(arrays) != 4:
        return None
    return _scaled(w, b, arrays, float(norm.op.attr("epsilon", 1e-5)))


def _scaled(
    w: np.ndarray, b: np.ndarray | None, statistics: Sequence[np.ndarray], epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(W * s, (B_conv - mean) * s + B_bn)`` in W's type, ``s = scale / sqrt(var + epsilon)``,
    the factors in float64 rounded once; ``statistics`` are (scale, B_bn, mean, var), W's first
    axis the output channels."""
    scale, bias, mean, var = (p.astype(np.float64) for p in statistics)
    s = scale / np.sqrt(var + epsilon)
    conv_bias = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    weights = w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
    return weights.astype(w.dtype), ((conv_bias - mean) * s + bias).astype(w.dtype)


# The IR layers a BatchNormInference folds into, and the axes of their weights before the output
# channels' (GroupConvolution's weights are (groups, channels per group, ...)).
IR_CONVOLUTIONS = {"Convolution": 0, "GroupConvolution": 1}
# Where a BatchNormInference reads (data, gamma, beta, mean, variance), by version.
_IR_NORM_PORTS = {"opset1": (2, 0, 1, 3, 4), "opset5": (0, 1, 2, 3, 4)}


def fold_ir_batch_norms(
    prepared: Sequence[Prepared],
    known: Mapping[Any, Any],
    kept: frozenset[Any],
    rebuild: Callable[[Prepared, tuple[Any, ...]], Kernel],
    fresh: Callable[[Any, str], Any],
) -> tuple[list[Prepared], dict[Any, Any]]:
    """The IR form of ``fold_batch_norms``: a BatchNormInference of constant statistics whose data
    is the output of a Convolution or GroupConvolution with constant float32/float64 weights, read
    by nothing else (nor in ``kept``, the graph's results), becomes the convolution with ``W * s``
    (``rebuild(entry, constants)`` makes the layer's kernel for new constant inputs) then an Add of
    ``(-mean) * s + beta`` shaped ``(1, C, 1, ...)``, at the BatchNormInference's place, which the
    plan then runs in place on the convolution's output: with W 2, scale 3, var 8, epsilon 1, mean
    0.5, beta 0.25, s = 1, W' = 2 and the Add of -0.25, so an input 1 gives 1.75 either way. The
    rounding differs as ``fold_batch_norms``'s. ``fresh(near, hint)`` names the new constants."""
    readers, producer = _readers_and_producers(prepared)
    replaced: dict[int, Prepared] = {}
    constants: dict[Any, Any] = {}
    add = lookup("Add", 14)
    assert add is not None  # ovpool's operator library has Add-14
    for index, entry in enumerate(prepared):
        ports = _IR_NORM_PORTS.get(getattr(entry.node, "version", ""))
        if entry.folded or entry.kind != "BatchNormInference" or ports is None or len(entry.inputs) != 5:
            continue
        x = entry.inputs[ports[0]]
        source = producer.get(x)
        if source is None or source in replaced or readers.get(x) != 1 or x in kept:
            continue
        conv = prepared[source]
        lead = IR_CONVOLUTIONS.get(conv.kind)
        w = known.get(conv.inputs[1]) if lead is not None and len(conv.inputs) == 2 and len(conv.outputs) == 1 else None
        if lead is None or not isinstance(w, np.ndarray) or w.dtype not in _FLOATS or w.ndim < 3 + lead or w.size == 0:
            continue
        channels = int(np.prod(w.shape[: lead + 1]))
        statistics = [known.get(entry.inputs[i]) for i in ports[1:]]
        arrays = [p for p in statistics if isinstance(p, np.ndarray) and p.dtype.kind == "f" and p.shape == (channels,)]
        epsilon = entry.node.data.get("epsilon")
        try:
            epsilon = float(epsilon)
        except (TypeError, ValueError):
            continue
        if len(arrays) != 4:
            continue
        weights, bias = _scaled(w.reshape((channels, *w.shape[lead + 1 :])), None, arrays, epsilon)
        weights = weights.reshape(w.shape)
        bias = bias.reshape((1, channels) + (1,) * (w.ndim - 2 - lead))
        w_name, b_name = fresh(conv.inputs[1], "fused"), fresh(entry.inputs[ports[4]], "fused")
        constants[w_name], constants[b_name] = weights, bias
        op = OpNode(name=entry.op.name, op_type="Add", since=14, opset=14, constants=(None, bias))
        replaced[source] = conv._replace(kernel=rebuild(conv, (None, weights)), inputs=(conv.inputs[0], w_name))
        replaced[index] = entry._replace(op=op, kernel=add.factory(op), inputs=(x, b_name), kind="Add")
    return [replaced.get(index, entry) for index, entry in enumerate(prepared)], constants


def fuse_ir_conv_biases(
    prepared: Sequence[Prepared],
    known: Mapping[Any, Any],
    kept: frozenset[Any],
    biased: Callable[[Prepared, np.ndarray, np.ndarray, Kernel], Kernel],
    fresh: Callable[[Any, str], Any],
) -> tuple[list[Prepared], dict[Any, Any]]:
    """``prepared`` with each Convolution or GroupConvolution of constant float32/float64 weights
    whose output only an Add reads (numpy broadcasting; not in ``kept``, the graph's results), with
    a constant of the weights' type shaped ``(1, C, 1, ...)`` (or ``(C, 1, ...)``), made one step
    that writes the Add's output at the Add's place: ``biased(conv, weights, bias, separate)`` is
    its kernel of ``(x, w, b)``, ``b`` the ``C`` values under the name ``fresh(near, hint)`` gives
    (the new constants are returned). ONNX Conv adds its bias to each finished sum, as the Add
    does: the same bits (x 1, w 2, bias 0.5: 2.5). A bias holding a NaN is not fused: a NaN sum
    plus a NaN bias keeps one operand's sign and payload, which the compiled loops may swap. An
    OpenVINO Convolution writes its bias so (the ONNX frontend, and ``fold_ir_batch_norms``'s Add
    of ``(-mean) * s + beta``)."""
    readers, producer = _readers_and_producers(prepared)
    replaced: dict[int, Prepared] = {}
    dropped: set[int] = set()
    constants: dict[Any, Any] = {}
    for index, entry in enumerate(prepared):
        if entry.folded or entry.kind != "Add" or len(entry.inputs) != 2 or len(entry.outputs) != 1:
            continue
        if getattr(entry.node, "data", {}).get("auto_broadcast", "numpy") != "numpy":
            continue
        for side in (0, 1):
            x, b = entry.inputs[side], entry.inputs[1 - side]
            source = producer.get(x)
            if source is None or source in replaced or readers.get(x) != 1 or x in kept:
                continue
            conv = prepared[source]
            lead = IR_CONVOLUTIONS.get(conv.kind)
            if lead is None or len(conv.inputs) != 2 or len(conv.outputs) != 1:
                continue
            w, bias = known.get(conv.inputs[1]), known.get(b)
            if not isinstance(w, np.ndarray) or w.dtype not in _FLOATS or w.ndim < 3 + lead or w.size == 0:
                continue
            channels, rank = int(np.prod(w.shape[: lead + 1])), w.ndim - lead
            if not isinstance(bias, np.ndarray) or bias.dtype != w.dtype or bias.ndim > rank:
                continue
            if (1,) * (rank - bias.ndim) + bias.shape != (1, channels) + (1,) * (rank - 2):
                continue
            if bool(np.isnan(bias).any()):
                continue
            flat = bias.reshape(channels)
            b_name = fresh(b, "bias")
            constants[b_name] = flat

            separate = _separately(conv.kernel, entry.kernel, bias, side)
            replaced[source] = conv._replace(
                kernel=biased(conv, w, flat, separate), inputs=(conv.inputs[0], conv.inputs[1], b_name), outputs=entry.outputs
            )
            dropped.add(index)
            break
    return [replaced.get(index, entry) for index, entry in enumerate(prepared) if index not in dropped], constants


def _separately(conv: Kernel, add: Kernel, bias: np.ndarray, side: int) -> Kernel:
    """The two steps ``fuse_ir_conv_biases`` fused, run one after the other: ``(x, w, b) ->
    add(conv(x, w), bias)`` (``side`` 1: ``add(bias, conv(x, w))``), ``b`` the flat bias unread."""

    def kernel(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        y = conv(x, w)[0]
        return add(y, bias) if side == 0 else add(bias, y)

    return kernel


def _readers_and_producers(prepared: Sequence[Prepared]) -> tuple[dict[Any, int], dict[Any, int]]:
    """How many unfolded steps read each value, and the index of the unfolded step whose first
    output each value is: what a fusion asks before it joins two steps (the first step's output
    must have one reader, the second)."""
    readers: dict[Any, int] = {}
    for entry in prepared:
        if not entry.folded:
            for name in entry.inputs:
                readers[name] = readers.get(name, 0) + 1
    producer = {entry.outputs[0]: index for index, entry in enumerate(prepared) if entry.outputs and not entry.folded}
    return readers, producer

"""Softmax and normalisation layers: SoftMax, LogSoftmax, MVN, NormalizeL2, BatchNormInference,
GroupNormalization, LRN, GRN.

- Softmax-1/8 and LogSoftmax-5 normalise along one ``axis``. MVN-6 divides by
  ``sqrt(var + eps)`` (``eps_mode="inside_sqrt"``) or ``sqrt(var) + eps`` (``outside_sqrt``);
  NormalizeL2 by ``sqrt(max(sum(x^2), eps))`` (``eps_mode="max"``) or ``sqrt(sum(x^2) + eps)``.
- BatchNormInference-1 takes (gamma, beta, data, mean, variance), -5 (data, gamma, beta, mean,
  variance).
- LRN-1 sums the squares over a window of ``2 * ((size - 1) // 2) + 1`` elements centred on each
  element, on each axis of its ``axes`` input, clipped to the axis (an even ``size`` of 4 sums 3,
  where ONNX LRN sums 4: the elements c-1 .. c+2), and divides by
  ``(bias + alpha / size^len(axes) * sum)^beta``; GRN-1 divides by ``sqrt(sum_c x^2 + bias)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, ints_of, layer
from ovpool.engine.ops.base import Kernel
from ovpool.engine.ops.normalization import NORMALIZING


@layer("SoftMax", 1, 8)
def softmax(node: LayerNode) -> Kernel:
    """SoftMax-1/8 along ``axis`` (default 1; -1 is the last axis from 8)."""
    return node.onnx("Softmax", 13, {"axis": node.integer("axis", 1)})


@layer("LogSoftmax", 5)
def log_softmax(node: LayerNode) -> Kernel:
    """LogSoftmax-5 along ``axis`` (default 1)."""
    return node.onnx("LogSoftmax", 13, {"axis": node.integer("axis", 1)})


def _normalize_axes(node: LayerNode, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    if any(not -rank <= a < rank for a in axes):
        raise node.fail(f"axes {list(axes)} fall outside a rank-{rank} input")
    return tuple(sorted({a % rank for a in axes}))


def _mvn(node: LayerNode, x: np.ndarray, axes: tuple[int, ...], variance: bool, eps: float, inside: bool) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) (inside) or / (sqrt(var) + eps), over ``axes``, in float64."""
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
    work = x.astype(np.float64)
    centred = work - work.mean(axis=axes, keepdims=True)
    if variance:
        var = np.square(centred).mean(axis=axes, keepdims=True)
        centred /= np.sqrt(var + eps) if inside else np.sqrt(var) + eps
    return centred.astype(x.dtype)


@layer("MVN", 6)
def mvn_6(node: LayerNode) -> Kernel:
    """MVN-6: mean (and variance, ``normalize_variance``) over the ``axes`` input; ``eps_mode``
    inside_sqrt or outside_sqrt: [1, 3] gives [-1, 1] with eps 0."""
    variance = node.flag("normalize_variance", True)
    eps = node.number("eps")
    inside = node.choice("eps_mode", "inside_sqrt", ("inside_sqrt", "outside_sqrt")) == "inside_sqrt"

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        return (_mvn(node, x, _normalize_axes(node, ints_of(axes), x.ndim), variance, eps, inside),)

    return kernel


@layer("MVN", 2)
def mvn_1(node: LayerNode) -> Kernel:
    """MVN-1 (opset2): over ``reduction_axes``, or the spatial axes (and channels when
    ``across_channels``); eps added to the variance, inside the square root."""
    variance = node.flag("normalize_variance", True)
    eps = node.number("eps")
    given = node.ints("reduction_axes", ())
    across = node.flag("across_channels", False)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        axes = _normalize_axes(node, given, x.ndim) if given else tuple(range(1 if across else 2, x.ndim))
        return (_mvn(node, x, axes, variance, eps, inside=True),)

    return kernel


@layer("NormalizeL2", 1)
def normalize_l2(node: LayerNode) -> Kernel:
    """NormalizeL2-1: x / sqrt(max(sum(x^2), eps)) (``eps_mode="max"``) or sqrt(sum(x^2) + eps)
    (``add``) over the ``axes`` input: [3, 4] gives [0.6, 0.8]."""
    eps = node.number("eps")
    add = node.choice("eps_mode", "add", ("add", "max")) == "add"

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        chosen = _normalize_axes(node, ints_of(axes), x.ndim)
        work = x.astype(np.float64)
        total = np.square(work).sum(axis=chosen, keepdims=True)
        norm = np.sqrt(total + eps) if add else np.sqrt(np.maximum(total, eps))
        return ((work / norm).astype(x.dtype),)

    return kernel


@layer("BatchNormInference", 1, 5)
def batch_norm(node: LayerNode) -> Kernel:
    """BatchNormInference: gamma * (x - mean) / sqrt(var + epsilon) + beta per channel (axis 1);
    version 1 takes (gamma, beta, data, mean, variance), 5 (data, gamma, beta, mean, variance)."""
    order = (2, 0, 1, 3, 4) if node.layer.version == "opset1" else (0, 1, 2, 3, 4)
    constants = tuple(node.constant(i) for i in order)
    kernel = node.onnx("BatchNormalization", 15, {"epsilon": node.number("epsilon")}, constants)
    return lambda *inputs: kernel(*(inputs[i] for i in order))


def _window_sums(x: np.ndarray, axis: int, half: int) -> np.ndarray:
    """Along ``axis``, the sum of the elements ``i - half`` .. ``i + half`` that exist, for each ``i``."""
    n = x.shape[axis]
    running = np.cumsum(np.moveaxis(x, axis, 0), axis=0)
    padded = np.concatenate([np.zeros((1,) + running.shape[1:], running.dtype), running])
    i = np.arange(n)
    high, low = np.minimum(i + half + 1, n), np.maximum(i - half, 0)
    return np.moveaxis(padded[high] - padded[low], 0, axis)


@layer("LRN", 1, traits=NORMALIZING)
def lrn(node: LayerNode) -> Kernel:
    """LRN-1: x / (bias + alpha / size^len(axes) * sqr_sum)^beta, ``sqr_sum`` the sum of x^2 over the
    window of each axis of the ``axes`` input from ``i - (size - 1) // 2`` to ``i + (size - 1) // 2``
    (OpenVINO's reference implementation: an even size reaches as far as the odd one below it),
    clipped to the axis. Channels 1, 2, 3 with size 3, alpha 3, beta 1, bias 1: the middle one
    is 2 / (1 + 1/3 * 14) = 0.353."""
    alpha, beta, bias = node.number("alpha"), node.number("beta"), node.number("bias")
    size = node.integer("size")
    if size < 1:
        raise node.fail(f"{size} is below 1", "size")

    def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype.kind != "f":
            raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
        chosen = _normalize_axes(node, ints_of(axes), x.ndim)
        squares = np.square(x.astype(np.float64))
        for a in chosen:
            squares = _window_sums(squares, a, (size - 1) // 2)
        scale = alpha / float(size) ** len(chosen)
        return ((x / np.power(bias + scale * squares, beta)).astype(x.dtype),)

    return kernel


@layer("GRN", 1)
def grn(node: LayerNode) -> Kernel:
    """GRN-1: x / sqrt(sum over the channels (axis 1) of x^2 + bias): channels 3, 4 with bias 0
    give 0.6, 0.8."""
    bias = node.number("bias")

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype.kind != "f" or x.ndim < 2:
            raise node.fail(f"input 0 is {x.dtype} of shape {list(x.shape)}; the layer takes floats with a channel axis")
        work = x.astype(np.float64)
        return ((work / np.sqrt(np.square(work).sum(axis=1, keepdims=True) + bias)).astype(x.dtype),)

    return kernel


@layer("GroupNormalization", 12, traits=NORMALIZING)
def group_normalization(node: LayerNode) -> Kernel:
    """GroupNormalization-12 (data, scale, bias): ONNX GroupNormalization-21, statistics per sample
    over each of ``num_groups`` groups of channels, ``epsilon`` added to the variance, scale and
    bias per channel: channels [1, 3] in one group give [-1, 1] (epsilon 0)."""
    attrs = {"num_groups": node.integer("num_groups"), "epsilon": node.number("epsilon")}
    return node.onnx("GroupNormalization", 21, attrs, node.constants)

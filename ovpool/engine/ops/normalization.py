"""Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
GroupNormalization, LpNormalization, LRN and MeanVarianceNormalization, each version as its schema states it.

BatchNormalization in inference form uses the GIVEN statistics: ``(x - mean) / sqrt(var + epsilon)
* scale + B`` per channel (axis 1); with mean 1, var 3, epsilon 1, scale 2, B 0.5 an input 5 gives
``(5 - 1) / 2 * 2 + 0.5 = 4.5`` whatever the batch holds (no momentum blend of batch statistics).
BatchNormalization-7 with ``spatial=0`` takes statistics per activation, shaped like one sample
(C, D1, ..., Dn), instead of per channel. Version 14 on can train (``training_mode=1``): Y uses the
batch's own mean and population variance over every axis but 1, and the optional outputs are
``running = input * momentum + current * (1 - momentum)``.

Instance, Layer and Group normalization compute mean and (population) variance themselves: per
sample and channel over the spatial axes (Instance), over the axes from ``axis`` on (Layer), per
sample over each group of ``C / num_groups`` channels and the spatial axes (Group). GroupNormalization-18
scales and shifts per GROUP (scale of shape (num_groups,)), GroupNormalization-21 per CHANNEL
(shape (C,)). LpNormalization divides by the L1 or L2 norm along ``axis``; a zero norm gives 0.
LRN divides each value by ``(bias + alpha / size * square_sum) ** beta``, ``square_sum`` taken over
the neighbouring channels of the same sample and position (onnx.reference 1.23 slides its window
over the batch axis instead, so ovpool does not hand LRN to it).

Float16 inputs are computed in float32 and cast back; ``stash_type=1`` (Layer-17, Group-21) computes
the statistics in float32 whatever the input type, as the schema states.
"""

from __future__ import annotations

import numpy as np

from ovpool import dtypes
from ovpool.engine.ops.base import LATEST, Kernel, OpNode, Rule, Traits, normalize_axes, normalize_axis, outputs, register
from ovpool.engine.ops.checks import float_attr, int_attr, type_guard
from ovpool.engine.ops.precision import rounding

FLOAT_STASH = 1  # TensorProto.FLOAT, the one stash_type ovpool computes in


def _work(x: np.ndarray) -> np.ndarray:
    """``x`` in the type arithmetic is done in: float32 and float64 as they are, narrower floats as float32."""
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _check_float(node: OpNode, name: str, value: np.ndarray) -> None:
    if value.dtype.kind in "iub":
        raise node.fail(f"input '{name}' of type {value.dtype} is not a floating-point tensor")


def _per_channel(node: OpNode, name: str, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A statistic or affine parameter of ``shape`` (per channel or per activation), as float64."""
    array = np.asarray(value)
    _check_float(node, name, array)
    if array.shape != shape:
        raise node.fail(f"input '{name}' has shape {array.shape}, expected {shape}")
    return array.astype(np.float64)


def _channel_view(x: np.ndarray) -> tuple[int, ...]:
    """The shape a per-channel vector takes to broadcast along axis 1 of ``x`` (axis 0 of a 1-D input)."""
    return (-1,) + (1,) * (x.ndim - 2) if x.ndim >= 2 else (-1,)


def _stats_shape(x: np.ndarray, per_activation: bool) -> tuple[int, ...]:
    if x.ndim < 2:
        return (1,)  # a 1-D input of N values is one channel (BatchNormalization-9 on)
    return tuple(x.shape[1:]) if per_activation else (x.shape[1],)


def _affine(
    node: OpNode, x: np.ndarray, params: tuple[np.ndarray, ...], epsilon: float, per_activation: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``(multiplier, offset)`` with ``y = x * multiplier + offset``: ``scale / sqrt(var + eps)`` and
    ``B - mean * multiplier``, shaped to broadcast against ``x``."""
    shape = _stats_shape(x, per_activation)
    scale, bias, mean, var = (_per_channel(node, n, v, shape) for n, v in zip(("scale", "B", "mean", "var"), params))
    multiplier = scale / np.sqrt(var + epsilon)
    offset = bias - mean * multiplier
    view = shape if per_activation else _channel_view(x)
    return multiplier.reshape(view), offset.reshape(view)


def _inference(node: OpNode, epsilon: float, per_activation: bool) -> Kernel:
    """The inference kernel. The affine form is laid out like one sample (C, D1, ..., Dn): numpy
    multiplies an (N, C, H, W) input by a (C, H, W) array about twice as fast as by a (C, 1, 1) one.
    When scale, B, mean and var are constants it is kept for the last sample shape seen."""
    constant = all(c is not None for c in node.constants[1:5]) and len(node.constants) == 5
    cache: dict[tuple[tuple[int, ...], np.dtype], tuple[np.ndarray, np.ndarray]] = {}

    def kernel(x: np.ndarray, *params: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "X", x)
        work = _work(x)
        key = (work.shape[1:], work.dtype)
        if key in cache:
            multiplier, offset = cache[key]
        else:
            multiplier, offset = _affine(node, x, params, epsilon, per_activation)
            if x.ndim >= 2:
                multiplier, offset = (np.ascontiguousarray(np.broadcast_to(a, x.shape[1:])) for a in (multiplier, offset))
            multiplier, offset = multiplier.astype(work.dtype), offset.astype(work.dtype)
            if constant:
                cache.clear()
                cache[key] = multiplier, offset
        y = work * multiplier
        y += offset
        return (y.astype(x.dtype, copy=False),)

    return kernel


def _inference_only(node: OpNode) -> None:
    if node.n_outputs > 1:
        raise node.fail(
            f"{node.n_outputs} outputs ask for training statistics (mean, var, saved_mean, saved_var): ovpool runs "
            f"BatchNormalization-{node.since} in inference form only (Y from the given mean and var)"
        )


# Working memory: squares and sums, 2 x input (LRN); BatchNormalization's kernel returns a new array.
NORMALIZING = Traits(work=Rule(3.0, 1.0))
BATCH_NORMALIZING = Traits(work=NORMALIZING.work, fresh=True)


@register("BatchNormalization", 1, 8, traits=BATCH_NORMALIZING)
def batch_normalization_spatial(node: OpNode) -> Kernel:
    """BatchNormalization-1/6/7, inference form (``is_test`` is not needed for it): with ``spatial=1``
    (default) per channel, statistics of shape (C,); with ``spatial=0`` per activation, shape
    (C, D1, ..., Dn): x (N, 2, 3) takes a (2, 3) mean."""
    _inference_only(node)
    spatial = int(node.attr("spatial", 1))
    if spatial not in (0, 1):
        raise node.fail(f"{spatial} is neither 0 nor 1", "spatial")
    return _inference(node, float(node.attr("epsilon", 1e-5)), per_activation=not spatial)


@register("BatchNormalization", 9, 13, traits=BATCH_NORMALIZING)
def batch_normalization(node: OpNode) -> Kernel:
    """BatchNormalization-9, inference form per channel: mean 1, var 3, epsilon 1, scale 2, B 0.5
    take x = 5 to 4.5; a 1-D input is one channel."""
    _inference_only(node)
    return _inference(node, float(node.attr("epsilon", 1e-5)), per_activation=False)


def _training(node: OpNode, epsilon: float, momentum: float) -> Kernel:
    """Y from the batch's statistics; running statistics blended with ``momentum`` in the stats' type."""

    def kernel(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "X", x)
        work = x.astype(np.float32) if x.dtype != np.float64 else x
        axes = (0,) + tuple(range(2, x.ndim))
        current_mean = work.mean(axis=axes)
        centred = work - current_mean.reshape(_channel_view(x))
        current_var = np.mean(centred * centred, axis=axes)
        shape = _stats_shape(x, False)
        multiplier = _per_channel(node, "scale", scale, shape) / np.sqrt(current_var.astype(np.float64) + epsilon)
        y = centred * multiplier.reshape(_channel_view(x)).astype(work.dtype)
        y += _per_channel(node, "B", bias, shape).reshape(_channel_view(x)).astype(work.dtype)
        results = [y.astype(x.dtype, copy=False)]
        for name, given, current in (("input_mean", mean, current_mean), ("input_var", var, current_var)):
            running = _per_channel(node, name, given, shape) * momentum + current * (1 - momentum)
            results.append(running.astype(given.dtype))
        return outputs(*results[: node.n_outputs])

    return kernel


@register("BatchNormalization", 14, LATEST, traits=BATCH_NORMALIZING)
def batch_normalization_training_mode(node: OpNode) -> Kernel:
    """BatchNormalization-14/15: inference form (as 9) unless ``training_mode=1``: then a batch whose
    channel holds [1, 3] gives Y = [-1, 1] * scale + B (mean 2, variance 1, epsilon aside) and
    running_mean = input_mean * 0.9 + 2 * 0.1. Version 15 lets scale/B and mean/var have their own types."""
    training = int(node.attr("training_mode", 0))
    epsilon = float(node.attr("epsilon", 1e-5))
    if training not in (0, 1):
        raise node.fail(f"{training} is neither 0 nor 1", "training_mode")
    if training:
        if node.n_outputs > 3:
            raise node.fail(f"{node.n_outputs} outputs: training mode has Y, running_mean and running_var")
        return _training(node, epsilon, float(node.attr("momentum", 0.9)))
    if node.n_outputs > 1:
        raise node.fail(f"{node.n_outputs} outputs with training_mode=0: extra outputs are invalid in inference")
    return _inference(node, epsilon, per_activation=False)


def _moments(x2: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of the 2-D ``x2``: ``(x2 - mean, mean, 1 / sqrt(population variance + epsilon))``, the
    last two of shape (rows, 1); the centred rows are a new array the caller may scale in place."""
    count = max(x2.shape[1], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.einsum("ij->i", x2)[:, None] / x2.dtype.type(count)
        centred = x2 - mean
        var = np.einsum("ij,ij->i", centred, centred)[:, None] / x2.dtype.type(count)
        inv_std = 1 / np.sqrt(var + x2.dtype.type(epsilon))
    return centred, mean, inv_std


@register("InstanceNormalization", 1, LATEST, traits=NORMALIZING)
def instance_normalization(node: OpNode) -> Kernel:
    """InstanceNormalization-1/6/22: per sample and channel over the spatial axes; a (1, 1, 2)
    input [1, 3] with scale 2, B 0.5 (epsilon 0) gives [-1.5, 2.5]."""
    epsilon = float(node.attr("epsilon", 1e-5))

    def kernel(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "input", x)
        if x.ndim < 3:
            raise node.fail(f"input of rank {x.ndim}: (N x C x D1 x ...) has spatial axes to normalise over")
        n, c = x.shape[:2]
        shape = (c,)
        s = _per_channel(node, "scale", scale, shape)
        b = _per_channel(node, "B", bias, shape)
        if x.size == 0:
            return (x.copy(),)
        centred, _, inv_std = _moments(_work(x).reshape(n * c, -1), epsilon)
        y = centred.reshape(n, c, -1)
        y *= inv_std.reshape(n, c, 1) * s.astype(y.dtype)[:, None]
        y += b.astype(y.dtype)[:, None]
        return (y.reshape(x.shape).astype(x.dtype, copy=False),)

    return kernel


def _stash(node: OpNode) -> None:
    stash = int(node.attr("stash_type", FLOAT_STASH))
    if stash != FLOAT_STASH:
        raise node.fail(f"{stash}: ovpool computes the statistics in float32 (stash_type 1) only", "stash_type")


@register("LayerNormalization", 17, LATEST, traits=NORMALIZING)
def layer_normalization(node: OpNode) -> Kernel:
    """LayerNormalization-17: over the axes from ``axis`` (default -1) on, statistics in float32
    (stash_type 1); a (2, 3, 4) input with axis=1 has Mean and InvStdDev of shape (2, 1, 1), each of
    its 2 samples standardised over 12 values, then ``* Scale + B`` (broadcast to X) in X's type."""
    _stash(node)
    epsilon = float(node.attr("epsilon", 1e-5))
    axis_attr = int(node.attr("axis", -1))
    if node.n_outputs > 3:
        raise node.fail(f"{node.n_outputs} outputs: LayerNormalization has Y, Mean and InvStdDev")

    def kernel(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        _check_float(node, "X", x)
        axis = normalize_axis(node, axis_attr, x.ndim)
        for name, value in (("Scale", scale), ("B", bias)):
            if value is not None and np.broadcast_shapes(x.shape, np.shape(value)) != x.shape:
                raise node.fail(f"input '{name}' of shape {np.shape(value)} does not broadcast to X's {x.shape}")
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        inner = int(np.prod(x.shape[axis:], dtype=np.int64))
        centred, mean, inv_std = _moments(x.astype(np.float32, copy=False).reshape(outer, inner), epsilon)
        centred *= inv_std
        y = centred.reshape(x.shape).astype(x.dtype, copy=False)
        y *= scale.astype(x.dtype, copy=False)
        if bias is not None:
            y += bias.astype(x.dtype, copy=False)
        stats_shape = x.shape[:axis] + (1,) * (x.ndim - axis)
        return outputs(y, mean.reshape(stats_shape), inv_std.reshape(stats_shape))[: node.n_outputs]

    return kernel


@register("RMSNormalization", 23)
def rms_normalization(node: OpNode) -> Kernel:
    """RMSNormalization-23: over the axes from ``axis`` (default -1) on, in the ``stash_type``
    precision (default 1, float32): ``X / sqrt(mean(X * X) + epsilon)``, cast to X's type, then
    ``* scale`` (unidirectionally broadcast to X): [3, 4] with epsilon 0 has RMS sqrt(12.5) = 3.536
    and gives [0.8485, 1.1314] before scaling."""
    check_types = type_guard(node)
    epsilon = float_attr(node, "epsilon", 1e-5)
    axis_attr = int_attr(node, "axis", -1)
    stash = int_attr(node, "stash_type", FLOAT_STASH, (1, 10, 11, 16))  # float, float16, double, bfloat16
    stash_type = dtypes.np_dtype(dtypes.from_onnx(stash))

    def kernel(x: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, ...]:
        check_types(x, scale)
        axis = normalize_axis(node, axis_attr, x.ndim)
        if scale.ndim > x.ndim or any(s not in (1, d) for s, d in zip(scale.shape[::-1], x.shape[::-1])):
            raise node.fail(f"input 'scale' of shape {scale.shape} does not broadcast to X's {x.shape}")
        work = np.dtype(np.float64) if np.float64 in (stash_type, x.dtype, scale.dtype) else np.dtype(np.float32)
        stashed = rounding(stash_type, work)
        xu = stashed(x.astype(stash_type).astype(work))
        squared_mean = stashed(stashed(xu * xu).mean(axis=tuple(range(axis, x.ndim)), keepdims=True))
        rms = stashed(np.sqrt(stashed(squared_mean + np.asarray(epsilon, stash_type).astype(work))))
        normalized = stashed(xu / rms).astype(x.dtype).astype(work)
        y = rounding(scale.dtype, work)(normalized * scale.astype(work))
        return (y.astype(scale.dtype),)

    return kernel


def _group_normalization(node: OpNode, per_channel: bool, float32_stash: bool) -> Kernel:
    groups = node.attr("num_groups")
    if groups is None:
        raise node.fail("is required", "num_groups")
    groups = int(groups)
    if groups <= 0:
        raise node.fail(f"{groups} is not a positive number of groups", "num_groups")
    epsilon = float(node.attr("epsilon", 1e-5))

    def kernel(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "X", x)
        if x.ndim < 2:
            raise node.fail(f"input of rank {x.ndim}: (N x C x ...) has a channel axis")
        n, c = x.shape[:2]
        if c % groups:
            raise node.fail(f"{groups} does not divide the {c} channels", "num_groups")
        shape = (c,) if per_channel else (groups,)
        s = _per_channel(node, "scale", scale, shape)
        b = _per_channel(node, "bias", bias, shape)
        if not per_channel:
            s, b = np.repeat(s, c // groups), np.repeat(b, c // groups)
        if x.size == 0:
            return (x.copy(),)
        work = x.astype(np.float32, copy=False) if float32_stash else _work(x)
        centred, _, inv_std = _moments(work.reshape(n * groups, -1), epsilon)
        y = centred.reshape(n, c, -1)
        y *= np.repeat(inv_std.reshape(n, groups), c // groups, axis=1)[:, :, None] * s.astype(y.dtype)[:, None]
        y += b.astype(y.dtype)[:, None]
        return (y.reshape(x.shape).astype(x.dtype, copy=False),)

    return kernel


@register("GroupNormalization", 18, 20, traits=NORMALIZING)
def group_normalization_per_group(node: OpNode) -> Kernel:
    """GroupNormalization-18: scale and bias per GROUP: 4 channels in 2 groups take scale (2,), channels
    0-1 scaled by scale[0] and 2-3 by scale[1]; statistics per sample over each group's channels."""
    return _group_normalization(node, per_channel=False, float32_stash=False)


@register("GroupNormalization", 21, LATEST, traits=NORMALIZING)
def group_normalization(node: OpNode) -> Kernel:
    """GroupNormalization-21: statistics per group as in 18 (in float32, stash_type 1), scale and bias
    per CHANNEL: 4 channels in 2 groups take scale (4,)."""
    _stash(node)
    return _group_normalization(node, per_channel=True, float32_stash=True)


@register("LpNormalization", 1, LATEST)
def lp_normalization(node: OpNode) -> Kernel:
    """LpNormalization-1/22: ``x / ||x||_p`` along ``axis`` (default -1), p 1 or 2 (default 2):
    [3, -4] gives [0.6, -0.8] (p=2) or [3/7, -4/7] (p=1); [0, 0] gives [0, 0]."""
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.fail(f"{p}: only 1 and 2 are defined", "p")
    axis_attr = int(node.attr("axis", -1))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "input", x)
        axis = normalize_axis(node, axis_attr, x.ndim)
        work = _work(x)
        if p == 1:
            norm = np.abs(work).sum(axis=axis, keepdims=True)
        else:
            norm = np.sqrt((work * work).sum(axis=axis, keepdims=True))
        norm[norm == 0] = 1  # every element of a zero-norm line is 0: 0 / 1 = 0
        return ((work / norm).astype(x.dtype, copy=False),)

    return kernel


@register("LRN", 1, LATEST, traits=NORMALIZING)
def lrn(node: OpNode) -> Kernel:
    """LRN-1/13: ``y = x / (bias + alpha / size * square_sum) ** beta``, ``square_sum`` the sum of x^2
    over channels ``c - floor((size - 1) / 2)`` .. ``c + ceil((size - 1) / 2)`` that exist (axis 1;
    an even size reaches one channel further up than down). Channels 1, 2, 3 with size 3, alpha 3,
    beta 1, bias 1: the middle one is 2 / (1 + 3 / 3 * 14) = 0.133; size 2 gives the first one
    1 / (1 + 3 / 2 * 5) = 0.118 (channels 1 and 2)."""
    size = node.attr("size")
    if size is None:
        raise node.fail("is required", "size")
    size = int(size)
    if size < 1:
        raise node.fail(f"{size} is below 1", "size")
    alpha, beta, bias = (float(node.attr(name, default)) for name, default in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    below, above = (size - 1) // 2, size // 2

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _check_float(node, "X", x)
        if x.ndim < 2:
            raise node.fail(f"input of rank {x.ndim}: (N x C x ...) has a channel axis")
        work = _work(x)
        squares = np.square(work)
        total = squares.copy()
        for offset in range(1, below + 1):  # channel c - offset into channel c
            total[:, offset:] += squares[:, :-offset]
        for offset in range(1, above + 1):  # channel c + offset into channel c
            total[:, :-offset] += squares[:, offset:]
        del squares
        total *= alpha / size
        total += bias
        np.power(total, beta, out=total)
        return ((work / total).astype(x.dtype, copy=False),)

    return kernel


MVN_EPSILON = 1e-9  # the Epsilon constant of MeanVarianceNormalization's function body


@register("MeanVarianceNormalization", 9, LATEST)
def mean_variance_normalization(node: OpNode) -> Kernel:
    """MeanVarianceNormalization-9/13 as its function body computes it over ``axes`` (default
    [0, 2, 3]): ``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)``; X = [1, 3] over axis 0 gives
    mean 2, E[X^2] 5, std 1 and Y = [-1, 1]. Negative axes count from the end; -13 adds bfloat16."""
    axes_attr = node.attr("axes", [0, 2, 3])
    if not isinstance(axes_attr, list) or not all(isinstance(a, int) for a in axes_attr):
        raise node.fail(f"{axes_attr!r} is not a list of integers", "axes")
    check = type_guard(node)

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        axes = normalize_axes(node, axes_attr, x.ndim)
        work = _work(x)
        with np.errstate(all="ignore"):
            mean = work.mean(axis=axes, keepdims=True)
            variance = (work * work).mean(axis=axes, keepdims=True) - mean * mean
            y = (work - mean) / (np.sqrt(variance) + work.dtype.type(MVN_EPSILON))
        return (y.astype(x.dtype, copy=False),)

    return kernel

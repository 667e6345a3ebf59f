"""The Conv operator (versions 1, 11, 22): the kernel, its route chosen once per X shape and type
(``route``), its weights laid out once where W is a constant, and its registration.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ovpool.engine.blas import Gemm, gemm_for
from ovpool.engine.memo import LIMIT, ShapeMemo, dtype_name
from ovpool.engine.native.compiled import Taps, taps_for
from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, register
from ovpool.engine.ops.conv.attributes import _check_bias, _check_kernel, _compute_dtype, parse
from ovpool.engine.ops.conv.buffers import _padded_shape
from ovpool.engine.ops.conv.gemm import _conv_gathered, _conv_im2col, _conv_pointwise, _conv_shifted
from ovpool.engine.ops.conv.plan import ConvPlan, conv_method, conv_plan, conv_weights, route
from ovpool.engine.ops.conv.taps import _conv_taps, _conv_taps_channels_last, _conv_taps_compiled
from ovpool.memory import check_tensor, fits

# Working memory of an im2col Conv: the padded input and a block of columns (1.6 x input for 3x3
# pads 1; columns of up to COLS_BYTES at a time, 9 x a small input for 3x3). ConvInteger,
# QLinearConv, ConvTranspose and the IR's convolution layers run on the same kernels.
CONV_WORK = Rule(3.0, 3.0, 16.0, 8 << 20)


# depthwise: output planes of at most this many cells run channels-last (_conv_taps_channels_last)
SMALL_PLANE = 100


# im2col Convs of at most SMALL_COLUMNS column values gather them in one indexing
# (``_conv_gathered``): silero's (1, 129, 3) by 128x129x3 in 0.6x the time.
SMALL_COLUMNS = 1 << 12


def _conv_factory(node: OpNode) -> Kernel:
    attrs = parse(node, transpose=False)
    constants = node.constants
    w_const = constants[1] if len(constants) > 1 else None
    b_const = constants[2] if len(constants) > 2 else None
    prepared: dict[tuple[str, Any], np.ndarray] = {}
    if w_const is not None:
        _check_kernel(node, attrs, w_const.shape)
        if w_const.shape[0] % attrs.group:
            raise node.fail(f"W's {w_const.shape[0]} output channels do not split into {attrs.group} groups", "group")
        _check_bias(node, b_const, w_const.shape[0])
        attrs.per_axis(node, w_const.ndim - 2)
        if w_const.dtype in (np.float16, np.float32, np.float64) or w_const.dtype.name == "bfloat16":
            dtype = np.dtype(np.float64) if w_const.dtype == np.float64 else np.dtype(np.float32)
            method = conv_method(w_const.shape, attrs.group, attrs.pads)
            prepared[(method, dtype)] = conv_weights(method, w_const, attrs.group, dtype)

    output_what, padded_what = f"{node.label}: output", f"{node.label}: padded input"

    def sized_plan(
        shapes: tuple[tuple[int, ...], tuple[int, ...]],
    ) -> tuple[ConvPlan, tuple[int, ...], tuple[int, ...], int, str]:
        """The plan, the output and padded input dims and their cells together, and the route
        with compiled code, per X and W shape."""
        x_shape, w_shape = shapes
        plan = conv_plan(node, attrs, x_shape, w_shape)
        output_dims, padded_dims = (x_shape[0], w_shape[0]) + plan.out, _padded_shape(x_shape, plan.begin, plan.end)
        return plan, output_dims, padded_dims, math.prod(output_dims) + math.prod(padded_dims), route(x_shape, w_shape, plan)

    plan_for = ShapeMemo(sized_plan)

    def resolved(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> tuple[int, Callable[[np.ndarray], np.ndarray]]:
        """The bytes a Conv of these inputs' shapes and types allocates (the output and the padded
        input) and ``run(x) -> y`` for them: its route chosen, W laid out, the bias cast; checked
        against the node (types, bias) and the budget on the way."""
        dtype = _compute_dtype(node, x, w)
        plan, output_dims, padded_dims, cells, way = plan_for((x.shape, w.shape))
        _check_bias(node, b, w.shape[0], x.dtype)
        # Within the budget before any work: the output, and the padded input the windows read
        # (pads 2**31 on an IR layer whose declared output is small: 408 GiB).
        needed = cells * dtype.itemsize
        if not fits(needed):
            check_tensor(output_what, output_dims, dtype_name(dtype))
            check_tensor(padded_what, padded_dims, dtype_name(dtype))
        gemm = gemm_for(dtype) if way == "shifted" else None
        loop = taps_for(dtype) if way == "compiled" else None
        method = "shifted" if gemm is not None else "compiled taps" if loop is not None else plan.method
        wl = prepared.get((method, dtype)) if w_const is not None else None
        if wl is None:
            wl = conv_weights(method, w, plan.group, dtype)
            if w_const is not None:
                prepared[(method, dtype)] = wl
        spatial = tuple(w.shape[2:])
        bias = None if b is None else b.astype(dtype, copy=False)
        small = x.shape[0] * padded_dims[1] * math.prod(spatial) * math.prod(plan.out) <= SMALL_COLUMNS
        return needed, _bound(plan, wl, spatial, bias, (gemm, loop, small), dtype, x.dtype)

    # (X shape, X type) -> resolved(...) for W and B the node's constants, as they are on every run
    ready: dict[tuple[tuple[int, ...], np.dtype], tuple[int, Callable[[np.ndarray], np.ndarray]]] = {}

    def kernel(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        constant = w is w_const and b is b_const
        if constant:
            entry = ready.get((x.shape, x.dtype))
            if entry is not None and fits(entry[0]):
                return (entry[1](x),)
        needed, run = resolved(x, w, b)
        if constant:
            if len(ready) >= LIMIT:
                ready.clear()
            ready[(x.shape, x.dtype)] = (needed, run)
        return (run(x),)

    return kernel


def _bound(
    plan: ConvPlan,
    wl: np.ndarray,
    spatial: tuple[int, ...],
    bias: np.ndarray | None,
    route: tuple[Gemm | None, Taps | None, bool],
    dtype: np.dtype,
    x_dtype: np.dtype,
) -> Callable[[np.ndarray], np.ndarray]:
    """``run(x) -> y``, the Conv of ``plan`` by weights ``wl`` laid out for its route, ``(gemm,
    loop, small)``: the shifted products where ``gemm`` is given, the compiled taps where ``loop``
    is, else the plan's method (columns gathered where ``small``), chosen once; computed in
    ``dtype`` and given back in X's type ``x_dtype`` (a float16 X is computed in float32, then
    rounded to float16; a float32 X is passed straight through)."""
    gemm, loop, small = route
    if gemm is not None:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_shifted(x, wl, plan, spatial, bias, gemm)

    elif loop is not None:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps_compiled(x, wl, plan, spatial, bias, loop)

    elif plan.method == "taps" and wl.shape[2] == 1 and math.prod(plan.out) <= SMALL_PLANE:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps_channels_last(x, wl, plan, spatial, bias)

    elif plan.method == "taps":

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_taps(x, wl, plan, spatial, bias)

    elif plan.method == "pointwise":

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_pointwise(x, wl, plan, bias)

    elif small:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_gathered(x, wl, plan, spatial, bias)

    else:

        def inner(x: np.ndarray) -> np.ndarray:
            return _conv_im2col(x, wl, plan, spatial, bias)

    if x_dtype == dtype:
        return inner

    def cast(x: np.ndarray) -> np.ndarray:
        return inner(x.astype(dtype)).astype(x_dtype, copy=False)

    return cast


@register("Conv", 1, traits=Traits(work=CONV_WORK, fresh=True))  # a new array, never a view
def conv(node: OpNode) -> Kernel:
    """Conv-1, -11 and -22 share one rule (see the module text): versions differ only in wording
    (Conv-1's SAME "match the input" is ceil(L/s) by its shape inference) and in bfloat16 (22).
    A (1, 2, 5, 5) input, W (4, 1, 3, 3), group 2, pads 1: output (1, 4, 5, 5), output channels
    0-1 read input channel 0, channels 2-3 input channel 1."""
    return _conv_factory(node)

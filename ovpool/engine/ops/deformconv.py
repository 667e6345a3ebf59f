"""DeformConv (19, 22) on numpy, any spatial rank: a convolution whose every kernel tap reads ``X`` at
a position moved by a learned offset, bilinearly (N-linearly).

Output ``o`` (per spatial axis ``a``) at kernel tap ``t`` reads the position
``p_a = o_a * s_a - pb_a + t_a * d_a + offset[n, g, t, a, o]`` (pixel coordinates: pixel ``i`` is at
``i``), where ``offset`` (N, offset_group * K * r, O...) lists, per offset group ``g`` and tap ``t``
(K taps in row-major order), one value per spatial axis in axis order (2-D: dy, dx). The value read
is the N-linear interpolation of the 2^r pixels around ``p`` (``floor(p_a)`` and ``floor(p_a) + 1``),
a pixel outside the input counting 0: on 2 pixels [10, 20], position 0.25 reads 12.5, -0.5 reads 5,
1.5 reads 10. ``mask`` (N, offset_group * K, O...; default ones) multiplies each tap's value;
channel ``c`` uses offset group ``c // (C / offset_group)``. Then the convolution: output channel ``m``
sums ``W[m, c', t]`` times the values of its group's input channels ``c'`` (``group`` as in Conv),
plus ``B[m]``. Output sizes, pads, strides and dilations are Conv's (``conv.conv_plan``); DeformConv
has no ``auto_pad``. A NaN or infinite position reads NaN.

Positions, weights and sums are computed in float64 and rounded once to the input's type
(onnxruntime computes in the type: float32 results differ by a few steps). DeformConv-22 adds
bfloat16: at 19 it is refused, naming 22.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, outputs, register
from ovpool.engine.ops.checks import int_attr, type_guard
from ovpool.engine.ops.conv.attributes import parse
from ovpool.engine.ops.conv.plan import ConvPlan, conv_plan
from ovpool.memory import check_tensor


def deform_sample(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``x`` (N, G, Cg, S1..Sr) read at ``positions`` (N, G, r, Q) N-linearly, pixels outside 0:
    (N, G, Cg, Q) in float64. On one axis of pixels [10, 20], 0.25 reads 12.5 and -0.5 reads 5."""
    n, g, cg = x.shape[:3]
    spatial = x.shape[3:]
    r, q = positions.shape[2], positions.shape[3]
    finite = np.all(np.isfinite(positions), axis=2)  # (N, G, Q)
    if math.prod(spatial) == 0:
        return np.where(finite[:, :, None, :], 0.0, np.nan) * np.ones((1, 1, cg, 1))
    # clip far positions (every pixel read is outside there) so that they fit an int64
    p = np.clip(np.where(finite[:, :, None, :], positions, 0.0), -2.0, np.array(spatial, np.float64)[:, None] + 1.0)
    low = np.floor(p)
    fraction = p - low
    low_index = low.astype(np.int64)
    flat = x.reshape(n, g, cg, math.prod(spatial)).astype(np.float64)
    strides = [math.prod(spatial[a + 1 :]) for a in range(r)]
    total = np.zeros((n, g, cg, q))
    for corner in itertools.product((0, 1), repeat=r):
        index = np.zeros((n, g, q), np.int64)
        weight = np.ones((n, g, q))
        inside = np.ones((n, g, q), bool)
        for a, c in enumerate(corner):
            i = low_index[:, :, a] + c
            inside &= (i >= 0) & (i < spatial[a])
            index += np.clip(i, 0, spatial[a] - 1) * strides[a]
            weight *= fraction[:, :, a] if c else 1 - fraction[:, :, a]
        value = np.take_along_axis(flat, index[:, :, None, :], axis=3)
        total += np.where(inside[:, :, None, :], value, 0.0) * weight[:, :, None, :]
    return np.where(finite[:, :, None, :], total, np.nan)


def deform_conv(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    bias: np.ndarray | None,
    mask: np.ndarray | None,
    plan: ConvPlan,
    offset_group: int,
) -> np.ndarray:
    """The module's DeformConv of checked inputs, in float64: (N, M, O1..Or)."""
    n, c = x.shape[:2]
    m, kernel, out = w.shape[0], w.shape[2:], plan.out
    r, k, p = len(kernel), math.prod(kernel), math.prod(out)
    taps = np.array(list(np.ndindex(*kernel)) or [()], np.float64).reshape(k, r)  # (K, r)
    cells = np.array(list(np.ndindex(*out)) or [()], np.float64).reshape(p, r)  # (P, r)
    base = (
        cells[None, :, :] * np.array(plan.strides, np.float64)
        - np.array(plan.begin, np.float64)
        + taps[:, None, :] * np.array(plan.dilations, np.float64)
    )  # (K, P, r)
    moves = offset.astype(np.float64).reshape(n, offset_group, k, r, p)
    positions = base.transpose(0, 2, 1)[None, None] + moves  # (N, G, K, r, P)
    positions = positions.transpose(0, 1, 3, 2, 4).reshape(n, offset_group, r, k * p)
    grouped = x.reshape(n, offset_group, c // offset_group, *x.shape[2:])
    values = deform_sample(grouped, positions).reshape(n, c, k, p)
    if mask is not None:
        scale = mask.astype(np.float64).reshape(n, offset_group, 1, k, p)
        values = (values.reshape(n, offset_group, c // offset_group, k, p) * scale).reshape(n, c, k, p)
    group = plan.group
    columns = values.reshape(n, group, (c // group) * k, p)
    weights = w.astype(np.float64).reshape(group, m // group, (c // group) * k)
    y = np.einsum("gmj,ngjp->ngmp", weights, columns).reshape(n, m, p)
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None]
    return y.reshape(n, m, *out)


def _deform_conv_factory(node: OpNode) -> Kernel:
    if "auto_pad" in node.attrs:
        raise node.fail("DeformConv has no auto_pad; give pads", "auto_pad")
    attrs = parse(node, transpose=False)
    offset_group = int_attr(node, "offset_group", 1)
    if offset_group < 1:
        raise node.fail(f"{offset_group} is below 1", "offset_group")
    check = type_guard(node)

    def kernel(
        x: np.ndarray, w: np.ndarray, offset: np.ndarray, b: np.ndarray | None = None, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        if x.dtype.name == "bfloat16" and node.since < 22:
            raise node.fail(f"input 0 has type bfloat16, which {node.op_type}-{node.since} does not allow; DeformConv-22 does")
        check(x, w, offset, b, mask)
        plan = conv_plan(node, attrs, x.shape, w.shape)
        n, c = x.shape[:2]
        m, k, r = w.shape[0], math.prod(w.shape[2:]), w.ndim - 2
        if c % offset_group:
            raise node.fail(f"X's {c} channels do not split into {offset_group} offset groups", "offset_group")
        expected = (n, offset_group * k * r, *plan.out)
        if offset.shape != expected:
            raise node.fail(f"offset has shape {list(offset.shape)}; these X, W and attributes need {list(expected)}")
        if mask is not None and mask.shape != (n, offset_group * k, *plan.out):
            raise node.fail(f"mask has shape {list(mask.shape)}; it must be {[n, offset_group * k, *plan.out]}")
        if b is not None and b.shape != (m,):
            raise node.fail(f"B has shape {list(b.shape)}; {m} output channels need one value each")
        check_tensor(f"{node.label}: output", [n, m, *plan.out], x.dtype.name, x.dtype.itemsize)
        check_tensor(f"{node.label}: float64 columns", [n, c, k, math.prod(plan.out)], "float64")
        with np.errstate(invalid="ignore", over="ignore"):
            return outputs(deform_conv(x, w, offset, b, mask, plan, offset_group).astype(x.dtype))

    return kernel


@register("DeformConv", 19)
def deform_conv_op(node: OpNode) -> Kernel:
    """DeformConv-19 and -22 (22 adds bfloat16)."""
    return _deform_conv_factory(node)

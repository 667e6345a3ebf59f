"""GridSample (16, 20, 22) on numpy: ``Y[n, c, o...]`` is ``X[n, c]`` read at the position
``grid[n, o...]``; AffineGrid-20, which makes such grids.

``grid``'s last axis lists one normalized coordinate per spatial axis of ``X``, innermost first (x,
then y, then z). Each coordinate ``g`` maps to a pixel coordinate of an axis of ``L`` pixels:

- ``align_corners=1``: ``(g + 1) / 2 * (L - 1)``, so -1 and 1 are the centres of the end pixels;
- ``align_corners=0``: ``((g + 1) * L - 1) / 2``, so -1 and 1 are their outer edges: g = 0.5 on
  4 pixels is 2.5.

computed in float32 (float64 for a float64 grid), as onnxruntime and OpenVINO do. ``nearest`` rounds
it half to even (2.5 reads pixel 2, 3.5 pixel 4); ``linear`` weighs the 2 pixels around it per axis
(N-linear), ``cubic`` the 4 (Keys' kernel, a = -0.75; N-cubic). ``padding_mode`` says what each of
those pixels is when its index ``i`` is outside ``[0, L)``: ``zeros`` 0, ``border`` pixel
``clip(i, 0, L - 1)``, ``reflection`` the pixel mirrored at the image's edges: at ``-0.5`` and
``L - 0.5`` (align_corners=0: on 3 pixels index -1 reads 0, 3 reads 2, 4 reads 1) or at 0 and ``L - 1``
(align_corners=1: -1 reads 1, 3 reads 1; one pixel reads itself), repeatedly. Padding applies to the
pixels read, not to the coordinate: bicubic at 0.5 pixels left of the image with ``border`` reads
the first pixel three times and the second once, as onnxruntime, PyTorch and OpenVINO compute it.

GridSample-16 is 4-D with modes bilinear/nearest/bicubic; 20 and 22 are N-D (any rank from 3) with
modes linear/nearest/cubic, 22 adds bfloat16. ``X`` may have any numeric type for ``nearest`` (ints
and bools are gathered unchanged); ``linear``/``cubic`` need a float ``X``, and their weights and
sums are computed in float64 and rounded once to ``X``'s type. A position with a NaN or infinite
coordinate gives NaN (0 for non-float ``X``).

AffineGrid-20 (the schema's function body): for ``size`` (N, C, H, W), theta (N, 2, 3), the grid
(N, H, W, 2) holds ``theta[n] @ (x, y, 1)`` at each pixel's normalized position; for (N, C, D, H, W),
theta (N, 3, 4), (N, D, H, W, 3) of ``theta[n] @ (x, y, z, 1)``. Pixel ``i`` of an axis of ``L``
is at ``-1 + step / 2 + i * step`` with ``step = 2 / L`` (``align_corners=0``: W = 4 gives
-0.75, -0.25, 0.25, 0.75) or ``-1 + i * step`` with ``step = 2 / (L - 1)`` (``align_corners=1``:
-1, -1/3, 1/3, 1), each operation in theta's type as the body does; there, an axis of one pixel is
-1 for D (the body's step 0) and NaN for H and W (0 * (2 / 0)), as the body computes it
(onnxruntime's own kernel gives 1, PyTorch 0). The products and sums with theta are computed in
float64 and rounded once to theta's type (the body's MatMul rounds in the type: within a step).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, Rule, Traits, outputs, register
from ovpool.engine.ops.checks import int_attr, type_guard
from ovpool.memory import check_tensor

_MODES = {16: ("bilinear", "nearest", "bicubic"), 20: ("linear", "nearest", "cubic")}
_PADDINGS = ("zeros", "border", "reflection")
_KEYS_A = -0.75
# Past this many pixels outside the image every tap of every mode is outside too (zeros reads 0s,
# border the end pixel whatever the weights), so coordinates are clipped to it before becoming integers.
_FAR = 4


class Site(Protocol):
    """What errors name: an ONNX node (:class:`OpNode`) or an IR layer (``ir_layers.LayerNode``)."""

    @property
    def label(self) -> str: ...

    def fail(self, message: str, attribute: str | None = None) -> Exception: ...


@dataclass(frozen=True)
class Sampling:
    """One GridSample's rule: ``mode`` linear, nearest or cubic; ``padding`` zeros, border or
    reflection; ``align_corners``; ``rank`` 4 for GridSample-16 only, else None (any rank from 3)."""

    mode: str
    padding: str
    align_corners: bool
    rank: int | None = None


@dataclass(frozen=True)
class _Taps:
    """One spatial axis: ``index[k]`` the pixel read by tap ``k`` at every position (N, P) after
    padding, ``weight[k]`` its weight (None for nearest), ``inside[k]`` where the pixel is in the
    image (zeros padding only, else None)."""

    index: tuple[np.ndarray, ...]
    weight: tuple[np.ndarray, ...] | None
    inside: tuple[np.ndarray, ...] | None


def pixel_coordinates(g: np.ndarray, length: int, align_corners: bool) -> np.ndarray:
    """Normalized coordinates ``g`` as pixel coordinates on an axis of ``length`` pixels, in ``g``'s
    type: g = 1 on 4 pixels is 3.0 with align_corners, 3.5 without."""
    one, two = g.dtype.type(1), g.dtype.type(2)
    if align_corners:
        return (g + one) / two * g.dtype.type(length - 1)
    return ((g + one) * g.dtype.type(length) - one) / two


def reflected(index: np.ndarray, length: int, align_corners: bool) -> np.ndarray:
    """Integer pixel indices mirrored into ``[0, length)``: at -0.5 and ``length - 0.5`` without
    align_corners (on 3 pixels -1 -> 0, 3 -> 2, 7 -> 1), at 0 and ``length - 1`` with it (-1 -> 1,
    3 -> 1, 5 -> 1; a single pixel is every index's)."""
    if align_corners:
        if length == 1:
            return np.zeros_like(index)
        period = 2 * (length - 1)
        m = np.mod(index, period)
        return np.where(m > length - 1, period - m, m)
    period = 2 * length
    m = np.mod(index, period)
    return np.where(m >= length, period - 1 - m, m)


def _keys(t: np.ndarray) -> tuple[np.ndarray, ...]:
    """Keys' cubic weights of the 4 pixels at distances ``1 + t``, ``t``, ``1 - t``, ``2 - t`` (a = -0.75)."""
    a = t.dtype.type(_KEYS_A)
    one, two = t.dtype.type(1), t.dtype.type(2)

    def near(d: np.ndarray) -> np.ndarray:
        return ((a + two) * d - (a + t.dtype.type(3))) * d * d + one

    def far(d: np.ndarray) -> np.ndarray:
        return ((a * d - t.dtype.type(5) * a) * d + t.dtype.type(8) * a) * d - t.dtype.type(4) * a

    return far(t + one), near(t), near(one - t), far(two - t)


def _axis_taps(x: np.ndarray, length: int, rule: Sampling) -> _Taps:
    """The pixels (and weights) one spatial axis reads at pixel coordinates ``x`` (finite)."""
    if rule.padding == "reflection":
        # the mirrored indices repeat every period: remove whole periods (fmod is exact), so that
        # far coordinates still fit an int64
        period = 2 * length if not rule.align_corners else max(2 * (length - 1), 2)
        x = np.fmod(x, x.dtype.type(period))
    else:
        x = np.clip(x, -_FAR, length + _FAR)
    weights: tuple[np.ndarray, ...] | None = None
    if rule.mode == "nearest":
        starts = [np.rint(x)]
    else:
        base = np.floor(x)
        fraction = x.astype(np.float64) - base  # exact; the weights are computed in float64
        if rule.mode == "linear":
            starts = [base, base + 1]
            weights = (1 - fraction, fraction)
        else:
            starts = [base - 1, base, base + 1, base + 2]
            weights = _keys(fraction)
    indices = [s.astype(np.int64) for s in starts]
    if rule.padding == "zeros":
        inside = tuple((i >= 0) & (i < length) for i in indices)
        return _Taps(tuple(np.where(ok, i, 0) for i, ok in zip(indices, inside)), weights, inside)
    if rule.padding == "border":
        return _Taps(tuple(np.clip(i, 0, length - 1) for i in indices), weights, None)
    return _Taps(tuple(reflected(i, length, rule.align_corners) for i in indices), weights, None)


def grid_sample(x: np.ndarray, grid: np.ndarray, rule: Sampling, site: Site) -> np.ndarray:
    """``x`` (N, C, D1..Dr) sampled at ``grid`` (N, O1..Or, r) by ``rule``: (N, C, O1..Or) of
    ``x``'s type. 2 pixels [10, 20] read at g = 0 (pixel 0.5, align_corners=0) give 15 (linear),
    10 (nearest: 0.5 rounds to 0), 15 (cubic: Keys' weights -0.09375, 0.59375, 0.59375, -0.09375 on
    pixels 10, 10, 20, 20 with border). Shapes or types the rule cannot take, and outputs over the
    memory budget, are ``site``'s errors."""
    r = x.ndim - 2
    if rule.rank is not None and x.ndim != rule.rank:
        raise site.fail(f"input X has rank {x.ndim}; this version takes {rule.rank}-D inputs only")
    if r < 1:
        raise site.fail(f"input X has rank {x.ndim}; it needs a batch, a channel and at least one spatial axis")
    if grid.shape != (x.shape[0], *grid.shape[1:-1], r) or grid.ndim != x.ndim:
        expected = f"[{x.shape[0]}, {', '.join(['O'] * r)}, {r}]"
        raise site.fail(f"grid of shape {list(grid.shape)} does not fit X of shape {list(x.shape)}: it must be {expected}")
    if grid.dtype.kind != "f" and grid.dtype.name != "bfloat16":
        raise site.fail(f"grid has type {grid.dtype}; it must be a float type")
    floating = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    if rule.mode != "nearest" and not floating:
        raise site.fail(f"mode {rule.mode} needs a float X, got {x.dtype}; only nearest reads other types")
    if x.dtype.kind not in "fiub" and not floating:
        raise site.fail(f"input X has type {x.dtype}, which numpy cannot sample")
    n, c, spatial, out_spatial = x.shape[0], x.shape[1], x.shape[2:], grid.shape[1:-1]
    check_tensor(f"{site.label}: output", [n, c, *out_spatial], x.dtype.name, x.dtype.itemsize)
    if rule.mode != "nearest":
        check_tensor(f"{site.label}: float64 sums", [n, c, *out_spatial], "float64")
    positions = math.prod(out_spatial)
    if n * c * positions == 0:
        return np.zeros((n, c, *out_spatial), x.dtype)
    if math.prod(spatial) == 0:
        if rule.padding != "zeros":
            raise site.fail(f"X has an empty spatial axis ({list(x.shape)}); {rule.padding} padding has no pixel to read")
        return np.zeros((n, c, *out_spatial), x.dtype)
    coordinates = grid.astype(np.float64 if grid.dtype == np.float64 else np.float32).reshape(n, positions, r)
    finite = np.all(np.isfinite(coordinates), axis=-1)
    coordinates = np.where(finite[..., None], coordinates, 0)
    # grid lists x (the innermost axis) first: spatial axis a is coordinate r - 1 - a
    axes = [
        _axis_taps(pixel_coordinates(coordinates[..., r - 1 - a], spatial[a], rule.align_corners), spatial[a], rule)
        for a in range(r)
    ]
    strides = [math.prod(spatial[a + 1 :]) for a in range(r)]
    flat = x.reshape(n, c, -1)
    result = _gathered(flat, axes, strides, rule, floating)
    if not finite.all():
        result = np.where(finite[:, None, :], result, np.nan if floating else 0)
    return result.astype(x.dtype, copy=False).reshape(n, c, *out_spatial)


def _gathered(flat: np.ndarray, axes: list[_Taps], strides: list[int], rule: Sampling, floating: bool) -> np.ndarray:
    """The sum over every combination of one tap per axis of weight x pixel (N, C, P), in float64; zeros
    padding multiplies pixels outside the image by 0 (a NaN pixel inside, even at weight 0, stays NaN)."""
    total: np.ndarray | None = None
    for combo in itertools.product(*(range(len(t.index)) for t in axes)):
        index = sum(t.index[k] * s for t, k, s in zip(axes, combo, strides))
        assert isinstance(index, np.ndarray)
        value = np.take_along_axis(flat, index[:, None, :], axis=2)
        if rule.padding == "zeros":
            inside = np.logical_and.reduce([t.inside[k] for t, k in zip(axes, combo) if t.inside is not None])
            value = np.where(inside[:, None, :], value, value.dtype.type(0))
        if rule.mode == "nearest":
            return value
        weight = np.prod([t.weight[k] for t, k in zip(axes, combo) if t.weight is not None], axis=0)
        term = value.astype(np.float64) * weight[:, None, :]
        total = term if total is None else total + term
    assert total is not None and floating
    return total


def _sampling(node: OpNode) -> Sampling:
    """The node's attributes with their schema defaults; a value the version does not know is the node's error."""
    modes = _MODES[16 if node.since < 20 else 20]
    mode = node.attr("mode", modes[0])
    if mode not in modes:
        raise node.fail(f"'{mode}' is not one of {', '.join(modes)}", "mode")
    padding = node.attr("padding_mode", "zeros")
    if padding not in _PADDINGS:
        raise node.fail(f"'{padding}' is not one of {', '.join(_PADDINGS)}", "padding_mode")
    align = node.attr("align_corners", 0)
    if align not in (0, 1):
        raise node.fail(f"{align} is neither 0 nor 1", "align_corners")
    canonical = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    return Sampling(canonical, padding, bool(align), 4 if node.since < 20 else None)


# Working memory: the taps in float64 (bicubic: 22.7 x the output, 32 x the grid).
SAMPLING = Traits(work=Rule(24.0, 12.0))


@register("GridSample", 16, traits=SAMPLING)
def grid_sample_op(node: OpNode) -> Kernel:
    """GridSample-16 (4-D; bilinear, nearest, bicubic), -20 and -22 (N-D; linear, nearest, cubic)."""
    rule = _sampling(node)

    def kernel(x: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, ...]:
        with np.errstate(invalid="ignore", over="ignore"):
            return outputs(grid_sample(x, grid, rule, node))

    return kernel


def affine_positions(length: int, align_corners: bool, dtype: np.dtype, depth: bool = False) -> np.ndarray:
    """The normalized positions of an axis of ``length`` pixels, each operation in ``dtype`` as
    AffineGrid's body computes them: 4 pixels are [-0.75, -0.25, 0.25, 0.75] without align_corners,
    [-1, -1/3, 1/3, 1] with it. With align_corners, one pixel is -1 on the depth axis (the body's
    step 0) and NaN on the others (0 times 2 / 0)."""
    one, two = dtype.type(1), dtype.type(2)
    size = dtype.type(length)
    with np.errstate(divide="ignore", invalid="ignore"):
        if not align_corners:
            step = two / size
            start = -one + step / two
        else:
            step = dtype.type(0) if depth and length == 1 else two / (size - one)
            start = -one
        return start + np.arange(length).astype(dtype) * step


@register("AffineGrid", 20)
def affine_grid(node: OpNode) -> Kernel:
    """AffineGrid-20 of the module's rule: theta [[[1, 0, 0], [0, 1, 0]]] over size [1, 1, 2, 2]
    gives the identity grid [[[-0.5, -0.5], [0.5, -0.5]], [[-0.5, 0.5], [0.5, 0.5]]]."""
    check = type_guard(node)
    align = bool(int_attr(node, "align_corners", 0, (0, 1)))

    def kernel(theta: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, ...]:
        check(theta, size)
        if size.shape not in ((4,), (5,)):
            raise node.fail(f"input 'size' has shape {list(size.shape)}; it must list N, C, H, W or N, C, D, H, W")
        dims = [int(v) for v in size]
        if any(d < 0 for d in dims):
            raise node.fail(f"input 'size' is {dims}; sizes cannot be negative")
        r = len(dims) - 2
        if theta.shape != (dims[0], r, r + 1):
            raise node.fail(f"input 'theta' has shape {list(theta.shape)}; size {dims} needs [{dims[0]}, {r}, {r + 1}]")
        spatial = dims[2:]
        check_tensor(f"{node.label}: output", [dims[0], *spatial, r], theta.dtype.name, theta.dtype.itemsize)
        check_tensor(f"{node.label}: float64 grid", [dims[0], *spatial, r], "float64")
        # positions x (innermost, W), y (H), z (D): each a float64 copy of the body's typed values
        axes = [
            affine_positions(n, align, theta.dtype, depth=r == 3 and a == 0).astype(np.float64) for a, n in enumerate(spatial)
        ]
        mesh = np.meshgrid(*axes, indexing="ij")
        points = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)  # (..., x, y[, z], 1)
        wide = theta.astype(np.float64)
        grid = np.einsum("nij,...j->n...i", wide, points)
        return outputs(grid.astype(theta.dtype))

    return kernel

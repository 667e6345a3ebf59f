"""FakeQuantize-1 on numpy.

FakeQuantize-1 is the specification's formula computed in float32 operation by operation,
rounding half to even (OpenVINO's reference implementation bit for bit): input range [0, 2.55]
over 256 levels maps 1.005 to round(100.5) = 100.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, aligner, layer, same_type
from ovpool.engine.ops.base import Kernel

_FQ_RANGES = ("input_low", "input_high", "output_low", "output_high")


def _fitted(
    node: LayerNode,
    x: np.ndarray,
    r: np.ndarray,
    name: str,
    align: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None,
) -> np.ndarray:
    """A range input lined up with the data ``x`` (``auto_broadcast``, leading unit dims beyond
    its rank dropped); one that does not broadcast to ``x``'s shape is the layer's error."""
    if align is not None:
        r = align(x, r)[1]
    while r.ndim > x.ndim and r.shape[0] == 1:
        r = r.reshape(r.shape[1:])
    try:
        fits = np.broadcast_shapes(r.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise node.fail(f"{name} of shape {list(r.shape)} does not broadcast to the data's shape {list(x.shape)}")
    return r


@layer("FakeQuantize", 1)
def fake_quantize(node: LayerNode) -> Kernel:
    """FakeQuantize-1: ``x`` mapped onto ``levels`` evenly spaced values of the output range, by
    the specification's formula computed operation by operation in float32 (float64 for f64 data),
    rounding half to even, then cast to the data's type (the arithmetic of OpenVINO's reference
    implementation)::

        x <= min(input_low, input_high): output_low
        x >  max(input_low, input_high): output_high
        otherwise: round((x - input_low) / (input_high - input_low) * (levels - 1))
                   / (levels - 1) * (output_high - output_low) + output_low

    The four range inputs broadcast to the shape of ``x`` by ``auto_broadcast`` (leading unit dims
    beyond its rank dropped), which is the output's shape. Input range [0, 2.55],
    output range [0, 255], 256 levels: 1.004 gives round(100.4) = 100, 1.005 gives round(100.5) =
    100 (half to even), the next float32 up 101, and 3 gives 255."""
    levels = node.integer("levels")
    if not 2 <= levels < 2**64:
        raise node.fail(f"{levels} is not between 2 and 2**64 - 1 (OpenVINO holds it in 64 bits)", "levels")
    align = aligner(node)

    def kernel(
        x: np.ndarray, low: np.ndarray, high: np.ndarray, out_low: np.ndarray, out_high: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        same_type(node, x, low, high, out_low, out_high)
        if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
            raise node.fail(f"input 0 is {x.dtype}; the layer takes floating-point types")
        ranges = [_fitted(node, x, r, name, align) for r, name in zip((low, high, out_low, out_high), _FQ_RANGES)]
        work = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
        v, lo, hi, o_lo, o_hi = (a.astype(work, copy=False) for a in (x, *ranges))
        steps = work.type(levels - 1)
        with np.errstate(all="ignore"):  # an empty input range divides by 0 where it is not used
            inside = np.rint((v - lo) / (hi - lo) * steps) / steps * (o_hi - o_lo) + o_lo
        y = np.where(v <= np.minimum(lo, hi), o_lo, np.where(v > np.maximum(lo, hi), o_hi, inside))
        return (np.asarray(y).astype(x.dtype, copy=False),)

    return kernel

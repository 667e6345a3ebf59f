"""MatMul, Einsum and ScaledDotProductAttention.

- MatMul's ``transpose_a``/``transpose_b`` swap the last two axes of a rank-2+ input.
- Einsum-7's ``equation`` means what ONNX Einsum's does ("ij,jk->ik", "...ii->...i", implicit output).
- ScaledDotProductAttention-13 is ``softmax(Q K^T * scale + mask) V`` with ``scale``
  ``1/sqrt(E)`` by default, a boolean mask keeping where true, ``causal`` masking every key after
  the query's position; float16 and bfloat16 are computed in float32 and rounded once (the
  specification leaves the precision of the steps open; the CPU plugin does the same, and so
  ONNX's float16 Attention cases agree to the step).
- DFT-7, IDFT-7, RDFT-9, IRDFT-9 are numpy's ``fftn``, ``ifftn`` (scaled by 1/n), ``rfftn``
  (the last of ``axes`` halved to n // 2 + 1) and ``irfftn`` (its length 2 * (m - 1) by default)
  over ``axes`` (negative ones counted over the signal's dims), each axis zero-padded or cut to
  ``signal_size`` where that is not -1; a complex value is a trailing axis of 2 (real,
  imaginary). Computed in complex128, rounded once to the data's type.
"""

from __future__ import annotations

import math

import numpy as np

from ovpool.engine.ir_layers.base import LayerNode, layer, same_type
from ovpool.engine.ops.base import Kernel


@layer("MatMul", 1)
def matmul(node: LayerNode) -> Kernel:
    """MatMul-1: ONNX MatMul after ``transpose_a``/``transpose_b`` swap the last two axes of a
    rank-2+ input (a 1-D input is never transposed)."""
    swap = (node.flag("transpose_a", False), node.flag("transpose_b", False))
    b_const = node.constant(1)
    if b_const is not None and swap[1] and b_const.ndim >= 2:
        b_const = np.ascontiguousarray(np.swapaxes(b_const, -1, -2))
    onnx_matmul = node.onnx("MatMul", 13, {}, (None, b_const))

    def kernel(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        if swap[0] and a.ndim >= 2:
            a = np.swapaxes(a, -1, -2)
        if swap[1] and b.ndim >= 2:
            b = np.swapaxes(b, -1, -2)
        return onnx_matmul(a, b)

    return kernel


@layer("Einsum", 7)
def einsum(node: LayerNode) -> Kernel:
    """Einsum-7: ONNX Einsum-12 of the layer's ``equation``: "ij,jk->ik" of (2, 3) and (3, 4) is their product."""
    return node.onnx("Einsum", 12, {"equation": node.text("equation")}, node.constants)


@layer("ScaledDotProductAttention", 13)
def scaled_dot_product_attention(node: LayerNode) -> Kernel:
    """ScaledDotProductAttention-13: softmax(Q K^T * scale + mask) V (see the module text)."""
    causal = node.flag("causal", False)
    product = node.onnx("MatMul", 13)
    normalise = node.onnx("Softmax", 13, {"axis": -1})

    def kernel(
        q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None, scale: np.ndarray | None = None
    ) -> tuple[np.ndarray, ...]:
        same_type(node, q, k, v)
        given = q.dtype
        if given.itemsize < 4:  # float16/bfloat16: in float32, rounded once at the end (as the CPU plugin)
            q, k, v = (t.astype(np.float32) for t in (q, k, v))
        factor = q.dtype.type(1 / math.sqrt(q.shape[-1])) if scale is None else scale.reshape(()).astype(q.dtype)
        scores = product(q, np.swapaxes(k, -1, -2))[0] * factor
        length, keys = scores.shape[-2:]
        if causal:
            scores = np.where(np.tril(np.ones((length, keys), bool)), scores, -np.inf)
        elif mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + mask.astype(scores.dtype)
        return (product(normalise(scores.astype(q.dtype, copy=False))[0], v)[0].astype(given),)

    return kernel


def _fourier(node: LayerNode, transform: str) -> Kernel:
    """The kernel of one of the Fourier layers (see the module text): ``transform`` names numpy's
    function; RDFT takes real data, the others complex data (a trailing axis of 2), and IRDFT
    gives real data. RDFT of [1, 2, 3, 4] over axis 0 is [[10, 0], [-2, 2], [-2, 0]]."""
    complex_in, complex_out = transform != "rfftn", transform != "irfftn"

    def kernel(data: np.ndarray, axes: np.ndarray, signal_size: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        signal = data[..., 0] + 1j * data[..., 1] if complex_in else data.astype(np.float64)
        if complex_in and data.shape[-1:] != (2,):
            raise node.fail(f"complex data ends in an axis of 2, not {list(data.shape)}")
        rank = signal.ndim
        chosen = [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes).reshape(-1)]
        if any(not 0 <= a < rank for a in chosen) or len(set(chosen)) != len(chosen):
            raise node.fail(f"axes {np.asarray(axes).reshape(-1).tolist()} for a signal of rank {rank}")
        sizes = None
        if signal_size is not None:
            given = [int(v) for v in np.asarray(signal_size).reshape(-1)]
            if len(given) != len(chosen):
                raise node.fail(f"{len(given)} signal sizes for {len(chosen)} axes")
            default = [signal.shape[a] for a in chosen]
            if transform == "irfftn":
                default[-1] = 2 * (default[-1] - 1)
            sizes = [d if v == -1 else v for v, d in zip(given, default)]
        lengths = sizes if sizes is not None else [signal.shape[a] for a in chosen]
        if transform == "irfftn" and sizes is None:
            lengths[-1] = 2 * (lengths[-1] - 1)
        if 0 in lengths:  # an empty sum on every bin: RDFT of length 0 has one zero bin, the others none
            dims = list(signal.shape)
            for axis, n in zip(chosen, lengths):
                dims[axis] = n
            if transform == "rfftn":
                dims[chosen[-1]] = lengths[-1] // 2 + 1
            result = np.zeros(dims, np.complex128)
        else:
            result = getattr(np.fft, transform)(signal, s=sizes, axes=chosen)
        out = np.stack([result.real, result.imag], axis=-1) if complex_out else result.real
        return (out.astype(data.dtype),)

    return kernel


@layer("DFT", 7)
def dft(node: LayerNode) -> Kernel:
    """DFT-7: numpy's ``fftn`` of the complex data over ``axes`` (see the module text)."""
    return _fourier(node, "fftn")


@layer("IDFT", 7)
def idft(node: LayerNode) -> Kernel:
    """IDFT-7: numpy's ``ifftn`` (1/n scaled) of the complex data over ``axes``."""
    return _fourier(node, "ifftn")


@layer("RDFT", 9)
def rdft(node: LayerNode) -> Kernel:
    """RDFT-9: numpy's ``rfftn`` of the real data over ``axes``, the last one halved."""
    return _fourier(node, "rfftn")


@layer("IRDFT", 9)
def irdft(node: LayerNode) -> Kernel:
    """IRDFT-9: numpy's ``irfftn`` of the complex data over ``axes``: real data."""
    return _fourier(node, "irfftn")

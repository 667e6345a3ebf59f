"""MatMul, Einsum and ScaledDotProductAttention.

- MatMul's ``transpose_a``/``transpose_b`` swap the last two axes of a rank-2+ input.
- Einsum-7's ``equation`` means what ONNX Einsum's does ("ij,jk->ik", "...ii->...i", implicit output).
- ScaledDotProductAttention-13 is ``softmax(Q K^T * scale + mask) V`` with ``scale``
  ``1/sqrt(E)`` by default, a boolean mask keeping where true, ``causal`` masking every key after
  the query's position.
"""

from __future__ import annotations

import math

import numpy as np

from ovpool.runtime.ir_layers.base import LayerNode, layer, same_type
from ovpool.runtime.ops.base import Kernel


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
        factor = q.dtype.type(1 / math.sqrt(q.shape[-1])) if scale is None else scale.reshape(()).astype(q.dtype)
        scores = product(q, np.swapaxes(k, -1, -2))[0] * factor
        length, keys = scores.shape[-2:]
        if causal:
            scores = np.where(np.tril(np.ones((length, keys), bool)), scores, -np.inf)
        elif mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + mask.astype(scores.dtype)
        return product(normalise(scores.astype(q.dtype, copy=False))[0], v)

    return kernel

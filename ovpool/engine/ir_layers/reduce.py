"""Reduce layers and TopK.

- Reduce layers with an empty ``axes`` input return their input (no axis reduced).
- TopK sorts by value (``sort="value"``, the ``mode`` max or min first) or by index; ties keep
  the lower index first; indices are ``index_element_type`` (i32 by default).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ovpool.engine.ir_layers.base import Builder, LayerNode, int64, int64_input, ints_of, layer
from ovpool.engine.ops.base import Kernel


def _reduction(op_type: str, since: int) -> Builder:
    """Reduce layers (``axes`` input, ``keep_dims``) as ONNX's input-axes form; empty axes reduce nothing."""

    def build(node: LayerNode) -> Kernel:
        attrs = {"keepdims": int(node.flag("keep_dims", False)), "noop_with_empty_axes": 1}
        known, of_axes = int64_input(node, 1)
        kernel = node.onnx(op_type, since, attrs, (None, known))
        return lambda x, axes: kernel(x, of_axes(axes))

    return build


for _type, _onnx, _since, _version in (
    ("ReduceMean", "ReduceMean", 18, 1),
    ("ReduceMax", "ReduceMax", 18, 1),
    ("ReduceMin", "ReduceMin", 18, 1),
    ("ReduceSum", "ReduceSum", 13, 1),
    ("ReduceProd", "ReduceProd", 18, 1),
    ("ReduceL1", "ReduceL1", 18, 4),
    ("ReduceL2", "ReduceL2", 18, 4),
):
    layer(_type, _version)(_reduction(_onnx, _since))


def _logical_reduction(function: Callable[..., np.ndarray]) -> Builder:
    def build(node: LayerNode) -> Kernel:
        keep = node.flag("keep_dims", False)

        def kernel(x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
            chosen = tuple(a % x.ndim for a in ints_of(axes)) if x.ndim else ()
            return (np.asarray(function(x, axis=chosen, keepdims=keep)),)

        return kernel

    return build


layer("ReduceLogicalAnd", 1)(_logical_reduction(np.all))
layer("ReduceLogicalOr", 1)(_logical_reduction(np.any))


@layer("TopK", 1, 3, 11)
def top_k(node: LayerNode) -> Kernel:
    """TopK-1/3/11: the ``k`` largest (``mode="max"``) or smallest values along ``axis`` and their
    indices (``index_element_type``, i32 by default), ordered by value or (``sort="index"``) by index."""
    axis = node.integer("axis")
    largest = node.choice("mode", "max", ("max", "min")) == "max"
    by_index = node.choice("sort", "none", ("value", "index", "none")) == "index"
    index_type = node.element_type("index_element_type", "i32")
    onnx_top_k = node.onnx("TopK", 11, {"axis": axis, "largest": int(largest), "sorted": 1}, n_outputs=2)

    def kernel(x: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
        if largest and k.size == 1 and int(k.reshape(-1)[0]) == 1 and x.size and -x.ndim <= axis < x.ndim:
            # the largest alone (an ArgMax as the frontend writes it): numpy's argmax takes, as
            # ONNX TopK does, the first NaN, else the first of equal values (15 us a call, not 50)
            index = np.argmax(x, axis=axis, keepdims=True)
            return np.take_along_axis(x, index, axis), index.astype(index_type)
        values, indices = onnx_top_k(x, int64(k))
        if by_index:
            order = np.argsort(indices, axis=axis, kind="stable")
            values, indices = np.take_along_axis(values, order, axis), np.take_along_axis(indices, order, axis)
        return values, indices.astype(index_type)

    return kernel

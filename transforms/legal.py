"""Pooling nodes every runtime accepts: no pad as long as the kernel.

ONNX allows a pad up to the dilated window, onnxruntime 1.31 refuses any pad >= ``kernel_shape``
("Pad should be smaller than kernel"). Such pads come from dilation: ``no-ceil`` on kernel 2,
dilation 2 (window 3), stride 2, L=6, ceil turns the third window into end pad 1 + 1 = 2, and
SAME_UPPER with kernel 2, dilation 3, stride 1 on L=5 needs pads (1, 2). Where a pass would write
such a pad, ``legal_nodes`` writes instead an explicit ``Pad`` of every pad (begin, and end widened
by the ceil overhang, ``shape.floor_end_pads``) and a pool with no pads and floor rounding:

- MaxPool: Pad with -inf (the dtype's lowest for int8/uint8), which no maximum picks over a real
  cell. With an Indices output the pool indexes the padded tensor, so the indices are mapped back
  with integer arithmetic: ``(p // prod(P)) * prod(L) + sum(((p // step_i) % P_i - b_i) * ostep_i)``
  over padded dims ``P``, begin pads ``b`` and the row- or column-major steps of the padded and the
  original spatial dims. 1x1x6, pads (1, 2) -> padded 1x1x9: padded index 4 is original index 3.
- AveragePool: Pad with 0, a depthwise ``Conv`` with a ones kernel (group = channels) for the
  window sums, and ``Div`` by the constant count map ``shape.divisor_counts`` of the original node,
  so the divisor stays the ONNX one for either ``count_include_pad`` (include-pad counts the pads,
  not the ceil overhang). 1x1x5, kernel 2, dilation 2, stride 1, pads (2, 2), exclude-pad: the
  7 window sums are divided by [1, 1, 2, 2, 2, 1, 1] (include-pad: by 2 everywhere). The Conv
  carries the pool's name. It needs static channels and spatial dims.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import GraphProto, NodeProto, helper

from ovpool import dtypes, shape
from ovpool.errors import UnsupportedError
from ovpool.names import FreshNames
from ovpool.spec import Padding, PoolKind, PoolSpec, Rounding
from ovpool.transforms import graph
from ovpool.transforms.graph import PoolNode


def pads_reach_kernel(spec: PoolSpec) -> bool:
    """Whether an explicit pad is >= the kernel on its axis (onnxruntime refuses the node):
    kernel 2 with pads (0, 2) does, kernel 3 with pads (2, 2) does not."""
    if spec.padding is not Padding.EXPLICIT or spec.kind not in (PoolKind.AVERAGE, PoolKind.MAX):
        return False
    return any(p >= k for k, b, e in zip(spec.kernel, spec.pads_begin, spec.pads_end) for p in (b, e))


def legal_nodes(model_graph, pool: PoolNode, spec: PoolSpec, names: FreshNames, opset: int, pass_name: str) -> list[NodeProto]:
    """The nodes computing ``spec`` (explicit pads, any rounding; the meaning, e.g. a ceil-mode
    original) on ``pool``'s input with every pad below the kernel: ``spec`` itself when its pads
    already are, else the Pad forms of the module text."""
    floor = spec.with_(rounding=Rounding.FLOOR)
    if not pads_reach_kernel(spec) and spec.rounding is Rounding.FLOOR:
        return [graph.emit(pool, floor, opset)]
    spatial = pool.static_spatial(pass_name, "to move pads as long as the kernel into a Pad node")
    end = shape.floor_end_pads(spec, spatial)
    base = graph.node_label(pool.node)
    padded = names.fresh(f"{base}/padded")
    inner = floor.with_(pads_begin=(0,) * len(spatial), pads_end=(0,) * len(spatial))
    if spec.kind is PoolKind.MAX:
        fill = _lowest(spec, pool)
        pad = graph.pad_node(model_graph, names, opset, base, pool.node.input[0], padded, spec.pads_begin, end, fill, spec.dtype)
        if spec.indices is None:
            return [pad, graph.emit(pool, inner, opset, inputs=[padded])]
        raw = names.fresh(f"{pool.node.output[1]}/padded")
        pooled = graph.emit(pool, inner, opset, inputs=[padded], outputs=[pool.node.output[0], raw])
        padded_spatial = tuple(n + b + e for n, b, e in zip(spatial, spec.pads_begin, end))
        fix = _index_fix(model_graph, names, base, spec, spatial, padded_spatial, raw, pool.node.output[1])
        return [pad, pooled, *fix]
    pad = graph.pad_node(model_graph, names, opset, base, pool.node.input[0], padded, spec.pads_begin, end)
    return [pad, *_window_average(model_graph, pool, spec, spatial, names, padded, pass_name)]


def _lowest(spec: PoolSpec, pool: PoolNode) -> float:
    """-inf for float types, the least value for integer ones (int8: -128, uint8: 0)."""
    if spec.dtype is None:
        raise UnsupportedError(f"{pool.label}: the input's element type is unknown, so the Pad value for a max is too")
    kind = dtypes.np_dtype(spec.dtype)
    return float(np.iinfo(kind).min) if np.issubdtype(kind, np.integer) else -math.inf


def _window_average(
    model_graph: GraphProto,
    pool: PoolNode,
    spec: PoolSpec,
    spatial: tuple[int, ...],
    names: FreshNames,
    padded: str,
    pass_name: str,
) -> list[NodeProto]:
    """Conv (ones, depthwise) over the zero-padded input, then Div by the ONNX divisor map."""
    channels = pool.channels
    if channels is None or spec.dtype is None:
        raise UnsupportedError(
            f"{pool.label}: pass '{pass_name}' needs the static channel count and element type of input "
            f"'{pool.node.input[0]}' to write its pads as a Pad and a window sum"
        )
    base = graph.node_label(pool.node)
    elem = dtypes.to_onnx(spec.dtype)
    weights = names.fresh(f"{base}/ones")
    model_graph.initializer.append(
        helper.make_tensor(weights, elem, [channels, 1, *spec.kernel], [1.0] * (channels * math.prod(spec.kernel)))
    )
    counts = shape.divisor_counts(spec, spatial)
    grid = np.ones([1, 1], dtype=np.float64)
    for axis in counts:
        grid = np.multiply.outer(grid, axis.astype(np.float64))
    divisor = names.fresh(f"{base}/counts")
    model_graph.initializer.append(helper.make_tensor(divisor, elem, list(grid.shape), grid.ravel().tolist()))
    summed = names.fresh(f"{base}/sums")
    conv = helper.make_node(
        "Conv",
        [padded, weights],
        [summed],
        name=pool.node.name,
        group=channels,
        kernel_shape=list(spec.kernel),
        strides=list(spec.strides),
        dilations=list(spec.dilations),
    )
    conv.doc_string = pool.node.doc_string
    divide = helper.make_node("Div", [summed, divisor], [pool.node.output[0]], name=names.fresh(f"{base}/divide"))
    return [conv, divide]


def _index_fix(
    model_graph: GraphProto,
    names: FreshNames,
    base: str,
    spec: PoolSpec,
    spatial: tuple[int, ...],
    padded_spatial: tuple[int, ...],
    raw: str,
    out: str,
) -> list[NodeProto]:
    """Integer nodes mapping flat indices over the padded tensor to the unpadded one (module text)."""
    assert spec.indices is not None
    _, _, padded_steps = shape.index_strides((1, 1, *padded_spatial), spec.indices)
    _, _, steps = shape.index_strides((1, 1, *spatial), spec.indices)
    nodes: list[NodeProto] = []

    def const(value: int) -> str:
        name = names.fresh(f"{base}/index_const")
        model_graph.initializer.append(helper.make_tensor(name, 7, [], [value]))
        return name

    def op(op_type: str, a: str, b: str) -> str:
        result = names.fresh(f"{base}/index_{op_type.lower()}")
        nodes.append(helper.make_node(op_type, [a, b], [result], name=names.fresh(f"{base}/index_{op_type.lower()}")))
        return result

    total = op("Mul", op("Div", raw, const(math.prod(padded_spatial))), const(math.prod(spatial)))
    for length, step, ostep in zip(padded_spatial, padded_steps, steps):
        along = op("Div", raw, const(step))
        coordinate = op("Sub", along, op("Mul", op("Div", along, const(length)), const(length)))
        total = op("Add", total, op("Mul", coordinate, const(ostep)))
    offset = sum(b * o for b, o in zip(spec.pads_begin, steps))
    nodes.append(helper.make_node("Sub", [total, const(offset)], [out], name=names.fresh(f"{base}/index_unpad")))
    return nodes

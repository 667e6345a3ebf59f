"""Pooling nodes every runtime accepts: no pad as long as the kernel.

ONNX allows a pad up to the dilated window, onnxruntime 1.31 refuses any pad >= ``kernel_shape``
("Pad should be smaller than kernel"). Such pads come from dilation: ``no-ceil`` on kernel 2,
dilation 2 (window 3), stride 2, L=6, ceil turns the third window into end pad 1 + 1 = 2, and
SAME_UPPER with kernel 2, dilation 3, stride 1 on L=5 needs pads (1, 2). Where a pass would write
such a pad, ``legal_nodes`` writes instead an explicit ``Pad`` of every pad (begin, and end widened
by the ceil overhang, ``shape.floor_end_pads``) and a pool with no pads and floor rounding:

- MaxPool: Pad with -inf, which no maximum picks over a real cell (int8/uint8 are pooled in
  float32 between two Casts, exact; their lowest value would tie). With an Indices output the
  pool indexes the padded tensor, so the indices are mapped back with integer arithmetic,
  ``(p // prod(P)) * prod(L) + sum(((p // step_i) % P_i - b_i) * ostep_i)`` over padded dims ``P``, begin pads ``b`` and the row- or column-major steps of the padded and the
  original spatial dims. 1x1x6, pads (1, 2) -> padded 1x1x9: padded index 4 is original index 3.
- AveragePool: Pad with 0, a depthwise ``Conv`` with a ones kernel (group = channels) for the
  window sums, and ``Div`` by the constant count map ``shape.divisor_counts`` of the original node,
  so the divisor stays the ONNX one for either ``count_include_pad`` (include-pad counts the pads,
  not the ceil overhang). 1x1x5, kernel 2, dilation 2, stride 1, pads (2, 2), exclude-pad: the
  7 window sums are divided by [1, 1, 2, 2, 2, 1, 1] (include-pad: by 2 everywhere). The Conv
  carries the pool's name. It needs static channels and spatial dims.
- LpPool: Pad with 0 and the unpadded LpPool: a zero adds ``0**p = 0`` to a window's sum, as a
  pad tap does, so the windows are the node's own.

Limit of the max form: a float window whose real cells are all -inf ties with the padding, so its
index may name a padded cell (its value is still -inf; before opset 11 the pad is the lowest
finite value, which such a window returns instead).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import GraphProto, NodeProto, TensorProto, helper

from ovpool import dtypes, shape
from ovpool.errors import UnsupportedError
from ovpool.names import FreshNames
from ovpool.spec import Padding, PoolKind, PoolSpec, Rounding
from ovpool.transforms import graph
from ovpool.transforms.graph import PoolNode


def pads_reach_kernel(spec: PoolSpec) -> bool:
    """Whether an explicit pad is >= the kernel on its axis (onnxruntime refuses the node):
    kernel 2 with pads (0, 2) does, kernel 3 with pads (2, 2) does not."""
    if spec.padding is not Padding.EXPLICIT or not graph.is_windowed(spec):
        return False
    return any(p >= k for k, b, e in zip(spec.kernel, spec.pads_begin, spec.pads_end) for p in (b, e))


def legal_nodes(
    model_graph: GraphProto, pool: PoolNode, spec: PoolSpec, names: FreshNames, opset: int, pass_name: str
) -> list[NodeProto]:
    """The nodes computing ``spec`` (explicit pads, any rounding; the meaning, e.g. a ceil-mode
    original) on ``pool``'s input with every pad below the kernel: ``spec`` itself when its pads
    already are, else the Pad forms of the module text."""
    floor = spec.with_(rounding=Rounding.FLOOR)
    if not pads_reach_kernel(spec) and spec.rounding is Rounding.FLOOR:
        return [graph.emit(pool, floor, opset)]
    spatial = pool.static_spatial(pass_name, "to move pads as long as the kernel into a Pad node")
    end = shape.floor_end_pads(spec, spatial)
    base = graph.node_label(pool.node)
    inner = floor.with_(pads_begin=(0,) * len(spatial), pads_end=(0,) * len(spatial))
    if spec.kind is PoolKind.MAX:
        return _padded_max(model_graph, pool, spec, inner, spatial, end, names, opset)
    padded = names.fresh(f"{base}/padded")
    pad = graph.pad_node(model_graph, names, opset, base, pool.node.input[0], padded, spec.pads_begin, end)
    if spec.kind is PoolKind.LP:  # a zero adds 0 to a p-norm, as a pad tap does
        return [pad, graph.emit(pool, inner, opset, inputs=[padded])]
    return [pad, *_window_average(model_graph, pool, spec, spatial, names, padded, pass_name)]


def _padded_max(
    model_graph: GraphProto,
    pool: PoolNode,
    spec: PoolSpec,
    inner: PoolSpec,
    spatial: tuple[int, ...],
    end: tuple[int, ...],
    names: FreshNames,
    opset: int,
) -> list[NodeProto]:
    """Pad with -inf, then the unpadded MaxPool (and the index map). An int8/uint8 input is
    pooled in float32 between two Casts (exact for 8-bit values): padding with the type's lowest
    would tie with a real lowest value, and onnxruntime's Pad fusion folds a zero Pad (uint8's
    lowest) back into the MaxPool's pads, which it then refuses."""
    base = graph.node_label(pool.node)
    if spec.dtype is None:
        raise UnsupportedError(f"{pool.label}: the input's element type is unknown, so the Pad value for a max is too")
    nodes: list[NodeProto] = []
    source, values = pool.node.input[0], pool.node.output[0]
    if np.issubdtype(dtypes.np_dtype(spec.dtype), np.integer):
        source = names.fresh(f"{base}/float")
        nodes.append(helper.make_node("Cast", [pool.node.input[0]], [source], name=names.fresh(f"{base}/to_float"), to=1))
        values = names.fresh(f"{values}/float")
        inner = inner.with_(dtype="float32")
    padded = names.fresh(f"{base}/padded")
    nodes.append(graph.pad_node(model_graph, names, opset, base, source, padded, spec.pads_begin, end, -math.inf, inner.dtype))
    outputs = [values, *pool.node.output[1:]]
    raw = None
    if spec.indices is not None:
        raw = names.fresh(f"{pool.node.output[1]}/padded")
        outputs[1] = raw
    nodes.append(graph.emit(pool, inner, opset, inputs=[padded], outputs=outputs))
    if values != pool.node.output[0]:
        back = dtypes.to_onnx(spec.dtype)
        nodes.append(helper.make_node("Cast", [values], [pool.node.output[0]], name=names.fresh(f"{base}/from_float"), to=back))
    if raw is not None:
        padded_spatial = tuple(n + b + e for n, b, e in zip(spatial, spec.pads_begin, end))
        nodes += _index_fix(model_graph, names, base, spec, spatial, padded_spatial, raw, pool.node.output[1])
    return nodes


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
        model_graph.initializer.append(helper.make_tensor(name, TensorProto.INT64, [], [value]))
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

"""What the passes read from and write to an ONNX graph: its pooling nodes with their specs and
input dims, fresh names, and opset-dependent helper nodes (Pad, Unsqueeze, Squeeze).

Input dims come from ``transforms.shapes.tensor_types``: onnx's shape inference for other nodes,
ovpool's shape engine for every pooling output, so a pool downstream sees the dims it will
really get. Only the main graph is rewritten: a pooling node inside a subgraph (If, Loop,
Scan) is refused rather than left behind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, helper, numpy_helper

from ovpool import dtypes, shape
from ovpool.errors import UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset
from ovpool.shape import Dim
from ovpool.spec import PoolKind, PoolSpec
from ovpool.transforms.shapes import tensor_types


@dataclass(frozen=True)
class PoolNode:
    """A pooling node of the main graph: its position, the node, its spec (with the input's dtype
    when known), the spatial dims of its input (None when even the rank is unknown) and its
    channel count (None when unknown)."""

    index: int
    node: NodeProto
    spec: PoolSpec
    spatial: tuple[Dim, ...] | None
    channels: Dim = None

    @property
    def label(self) -> str:
        return f"node '{self.spec.name}' ({self.node.op_type})"

    @property
    def rank(self) -> int | None:
        """Spatial rank: from the spec, or for a global pool from its input."""
        if self.spec.rank is not None:
            return self.spec.rank
        return None if self.spatial is None else len(self.spatial)

    def static_spatial(self, pass_name: str, why: str) -> tuple[int, ...]:
        """The input's spatial dims, or an error naming the node and the dynamic axis."""
        if self.spatial is None or not shape.is_static(self.spatial):
            shown = (
                "unknown" if self.spatial is None else "[" + ", ".join("?" if d is None else str(d) for d in self.spatial) + "]"
            )
            raise UnsupportedError.in_file(
                self.label,
                f"pass '{pass_name}' needs the static spatial dims of input "
                f"'{self.node.input[0]}' {why}, and they are {shown}; give the model static input shapes first",
            )
        return tuple(int(d) for d in self.spatial)


def pool_nodes(model: ModelProto) -> list[PoolNode]:
    """Every pooling node of the main graph, in graph order, with its spec and input dims."""
    _refuse_nested_pools(model.graph)
    opset = default_opset(model)
    found = [(i, n) for i, n in enumerate(model.graph.node) if onnx_adapter.is_pool_node(n)]
    if not found:
        return []
    types = tensor_types(model)
    pools = []
    for index, node in found:
        dtype, dims = types.get(node.input[0], (None, None)) if node.input else (None, None)
        spec = onnx_adapter.spec_from_node(node, opset, dtype)
        pools.append(PoolNode(index, node, spec, None if dims is None else tuple(dims[2:]), None if not dims else dims[1]))
    return pools


def pool_labels(model: ModelProto, predicate: Callable[[PoolNode], bool]) -> list[str]:
    """Names of the pooling nodes for which ``predicate(pool)`` is true (property checks)."""
    return [p.spec.name for p in pool_nodes(model) if predicate(p)]


def _refuse_nested_pools(graph: GraphProto) -> None:
    for node in graph.node:
        for sub in _subgraphs(node):
            nested = next((n for n in _all_nodes(sub) if onnx_adapter.is_pool_node(n)), None)
            if nested is not None:
                raise UnsupportedError(
                    f"node '{nested.name or nested.output[0]}' ({nested.op_type}) is inside the subgraph of "
                    f"node '{node.name}' ({node.op_type}); ovpool's passes rewrite the main graph only"
                )


def _subgraphs(node: NodeProto) -> Iterator[GraphProto]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def _all_nodes(graph: GraphProto) -> Iterator[NodeProto]:
    for node in graph.node:
        yield node
        for sub in _subgraphs(node):
            yield from _all_nodes(sub)


def model_names(model: ModelProto) -> FreshNames:
    """Fresh names for a model's graph: every node, tensor, input, output and initializer name is taken."""
    graph = model.graph
    taken = {n.name for n in graph.node} | {o for n in graph.node for o in list(n.input) + list(n.output)}
    taken |= {v.name for v in list(graph.input) + list(graph.output) + list(graph.initializer)}
    return FreshNames(taken)


def node_label(node: NodeProto) -> str:
    """The base for names derived from a node: its name, else its first output."""
    return node.name or node.output[0]


def emit(
    pool: PoolNode, spec: PoolSpec, opset: int, inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None
) -> NodeProto:
    """The node computing ``spec`` at ``opset`` in place of ``pool.node``: same name, doc string
    and (unless given) tensors; windowed kinds keep the op type, global ones become windowed."""
    op_type = pool.node.op_type if not spec.is_global and pool.spec.kind is spec.kind else None
    node = onnx_adapter.node_from_spec(
        spec,
        opset,
        list(pool.node.input if inputs is None else inputs),
        list(pool.node.output if outputs is None else outputs),
        op_type=op_type,
    )
    node.name = pool.node.name
    node.doc_string = pool.node.doc_string
    return node


def replace_nodes(graph: GraphProto, replacements: dict[int, list[NodeProto]]) -> None:
    """Put ``replacements[i]`` where node ``i`` was; other nodes keep their place."""
    nodes = list(graph.node)
    del graph.node[:]
    for index, node in enumerate(nodes):
        graph.node.extend(replacements.get(index, [node]))


def int64_initializer(graph: GraphProto, names: FreshNames, base: str, values: Sequence[int]) -> str:
    """Add a 1-D int64 initializer (pads, axes) and return its name."""
    name = names.fresh(base)
    graph.initializer.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
    return name


def pad_node(
    graph: GraphProto,
    names: FreshNames,
    opset: int,
    base: str,
    src: str,
    dst: str,
    begin: Sequence[int],
    end: Sequence[int],
    value: float = 0.0,
    dtype: str | None = None,
) -> NodeProto:
    """A constant ``Pad`` of the spatial axes of an (N, C, *spatial) tensor with ``value`` (0 or
    -inf, say): attributes ``pads``/``value`` before opset 11, where -inf is written as the
    dtype's lowest finite value (OpenVINO 2026.4's frontend refuses an infinite ``value``:
    float32 -3.4028235e38, which a max picks only where every real cell of a window is -inf); from 11 on an int64 ``pads`` input
    and, for a non-zero ``value``, a ``constant_value`` input of the tensor's ``dtype`` (Pad-1's
    ``paddings`` is not emitted)."""
    pads = [0, 0, *begin, 0, 0, *end]
    if opset < 2:
        raise UnsupportedError(f"node '{base}': opset {opset} has only Pad-1; ovpool emits Pad-2 and later")
    name = names.fresh(f"{base}/pad")
    if opset < 11:
        if math.isinf(value) and dtype is not None:  # OpenVINO's frontend refuses an infinite Pad-2 value
            value = float(np.finfo(dtypes.np_dtype(dtype)).min) if value < 0 else float(np.finfo(dtypes.np_dtype(dtype)).max)
        return helper.make_node("Pad", [src], [dst], name=name, mode="constant", pads=pads, value=value)
    inputs = [src, int64_initializer(graph, names, f"{base}/pads", pads)]
    if value != 0:
        if dtype is None:
            raise UnsupportedError(f"node '{base}': a Pad with value {value} needs the element type of '{src}'")
        fill = names.fresh(f"{base}/pad_value")
        graph.initializer.append(helper.make_tensor(fill, dtypes.to_onnx(dtype), [], [value]))
        inputs.append(fill)
    return helper.make_node("Pad", inputs, [dst], name=name, mode="constant")


def axes_node(
    graph: GraphProto, names: FreshNames, opset: int, op_type: str, base: str, src: str, dst: str, axes: Sequence[int]
) -> NodeProto:
    """``Unsqueeze``/``Squeeze`` of ``axes``: attribute before opset 13, int64 input from 13 on."""
    name = names.fresh(f"{base}/{op_type.lower()}")
    if opset < 13:
        return helper.make_node(op_type, [src], [dst], name=name, axes=list(axes))
    axes_name = int64_initializer(graph, names, f"{base}/{op_type.lower()}_axes", axes)
    return helper.make_node(op_type, [src, axes_name], [dst], name=name)


def is_windowed(spec: PoolSpec) -> bool:
    """An average, max or Lp pool with its own window (not global, not MaxUnpool)."""
    return spec.kind in (PoolKind.AVERAGE, PoolKind.MAX, PoolKind.LP)

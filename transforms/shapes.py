"""Tensor types of a model whose pooling outputs are sized by ovpool's shape engine.

onnx's shape inference is used for every other node; it is never asked about a pooling node,
because onnx 1.23 gets some wrong or gives none (docs/semantics.md, "onnx shape inference"): a
ceil-mode pool whose last window would start in the right padding (input 7, kernel 2, stride 3,
pads 1+1, ceil: 3 windows by the ONNX rule, 4 by onnx's inference), and MaxUnpool with an
``output_shape`` input (no shape at all). So every pooling node is *pinned*: in a copy of the
model its outputs become graph inputs typed by ``shape.output_shape`` /
``shape.unpool_output_spatial`` and the node goes, and inference runs again for the nodes
downstream of it. (A node of a private domain would do for sizing, but onnx's strict inference
stops reporting errors in a graph that holds one.)

A MaxUnpool fed an ``output_shape`` input has a data-dependent size: its output keeps the input's
rank and element type with unknown dims (a 1x1x3 input gives ``(None, None, None)``).
"""

from __future__ import annotations

import onnx
from onnx import GraphProto, ModelProto, NodeProto, helper

from ovpool import dtypes, shape
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset, inferred_types
from ovpool.shape import Dim
from ovpool.spec import PoolKind

TensorType = tuple[str | None, tuple[Dim, ...] | None]


def pool_output_types(node: NodeProto, opset: int, types: dict[str, TensorType]) -> list[TensorType]:
    """The types of a pooling node's outputs by ovpool's rules, given its input's type.

    MaxPool ceil_mode=1, kernel 2, stride 3, pads 1+1 on a float 1x1x7 input: ``[("float32",
    (1, 1, 3))]`` (and ``("int64", (1, 1, 3))`` for an Indices output). An unknown input rank gives
    ``(dtype, None)``. A bad attribute or a window larger than the input raises ``SpecError``
    naming the node.
    """
    dtype, dims = types.get(node.input[0], (None, None)) if node.input else (None, None)
    spec = onnx_adapter.spec_from_node(node, opset, dtype)
    out: tuple[Dim, ...] | None = None
    if dims is not None:
        shape.check_input_rank(spec, len(dims))
        if spec.kind is not PoolKind.UNPOOL:
            out = shape.output_shape(spec, dims)
        elif len(node.input) > 2 and node.input[2]:
            out = (None,) * len(dims)  # data-dependent: the output_shape input's values
        else:
            out = tuple(dims[:2]) + shape.unpool_output_spatial(spec, dims[2:])
    return [(dtype, out), ("int64", out)][: len(node.output)]


def pinned_model(model: ModelProto) -> tuple[ModelProto, dict[str, TensorType]]:
    """A copy of ``model`` with every main-graph pooling node pinned (see the module text), and
    ``{tensor name: (dtype or None, dims or None)}`` for its tensors, pooling outputs by ovpool's
    rules. Pools are pinned in rounds, each one once no unpinned pool is upstream of it, so a
    pool fed by another sees the dims it will really get. ``value_info`` entries of pooling
    outputs are dropped first (they are only hints, often written by onnx's inference)."""
    work = ModelProto()
    work.CopyFrom(model)
    graph = work.graph
    opset = default_opset(work)
    outputs = {o for n in graph.node if onnx_adapter.is_pool_node(n) for o in n.output if o}
    for value in [v for v in graph.value_info if v.name in outputs]:
        graph.value_info.remove(value)
    pinned: dict[str, TensorType] = {}
    while True:
        types = inferred_types(work, required=True, data_prop=True)
        types.update(pinned)
        ready = _ready_pools(graph)
        if not ready:
            return work, types
        nodes = list(graph.node)
        for index in ready:
            node = nodes[index]
            for name, found in zip(node.output, pool_output_types(node, opset, types)):
                if name:
                    pinned[name] = found
                    _declare(graph, name, found)
        del graph.node[:]
        graph.node.extend(n for i, n in enumerate(nodes) if i not in ready)


def tensor_types(model: ModelProto) -> dict[str, TensorType]:
    """``{tensor name: (dtype or None, dims or None)}`` for every tensor of the main graph, with
    pooling outputs sized by ovpool's shape engine (``pinned_model``)."""
    return pinned_model(model)[1]


def complete_value_types(model: ModelProto) -> ModelProto:
    """The model with every graph output typed and shaped, as runtimes see it: onnxruntime and
    OpenVINO load a model whose outputs carry a type without a shape (or no type), the ONNX
    checker does not. A graph output lacking either gets them from ``tensor_types`` (a pooling
    output from ovpool's rules, a dynamic or data-dependent dim unnamed), and a ``value_info``
    entry lacking either, or of a pooling output, is dropped (it is only a hint). An output whose
    rank is unknown even so keeps what it had (the checker then names it)."""
    graph = model.graph
    pool_outputs = {o for n in graph.node if onnx_adapter.is_pool_node(n) for o in n.output if o}
    incomplete = [v for v in graph.output if not _is_complete(v)]
    stale = [v for v in graph.value_info if not _is_complete(v) or v.name in pool_outputs]
    if not incomplete and not stale:
        return model
    work = ModelProto()
    work.CopyFrom(model)
    for value in [v for v in work.graph.value_info if not _is_complete(v) or v.name in pool_outputs]:
        work.graph.value_info.remove(value)
    if not incomplete:
        return work
    types = tensor_types(work)
    for value in work.graph.output:
        dtype, dims = types.get(value.name, (None, None))
        if _is_complete(value) or dims is None:
            continue
        elem = value.type.tensor_type.elem_type or (dtypes.to_onnx(dtype) if dtype else onnx.TensorProto.UNDEFINED)
        value.type.CopyFrom(helper.make_tensor_type_proto(elem, list(dims)))
    return work


def declared_mismatches(model: ModelProto, types: dict[str, TensorType]) -> list[str]:
    """Graph outputs of pooling nodes whose declared dims contradict ovpool's rules, e.g.
    ``graph output 'y': declares dims [1, 1, 4], and node 'pool' (MaxPool) gives [1, 1, 3]``
    (the size onnx 1.23's inference writes for the ceil case of the module text)."""
    producers = {o: n for n in model.graph.node if onnx_adapter.is_pool_node(n) for o in n.output if o}
    found = []
    for value in model.graph.output:
        node = producers.get(value.name)
        tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
        if node is None or tensor is None or not tensor.HasField("shape"):
            continue
        declared = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        dims = types.get(value.name, (None, None))[1]
        if dims is None:
            continue
        clash = len(declared) != len(dims) or any(a is not None and b is not None and a != b for a, b in zip(declared, dims))
        if clash:
            found.append(
                f"graph output '{value.name}': declares dims {_show(declared)}, and node '{node.name or node.output[0]}' "
                f"({node.op_type}) gives {_show(list(dims))}"
            )
    return found


def _show(dims: list[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _ready_pools(graph: GraphProto) -> set[int]:
    """Positions of the pooling nodes with no other pooling node upstream (nodes are in graph
    order, which ONNX requires to be topological)."""
    tainted: set[str] = set()
    ready = set()
    for index, node in enumerate(graph.node):
        upstream = any(name in tainted for name in node.input)
        if onnx_adapter.is_pool_node(node):
            if not upstream:
                ready.add(index)
            tainted.update(node.output)
        elif upstream:
            tainted.update(node.output)
    return ready


def _declare(graph: GraphProto, name: str, found: TensorType) -> None:
    """Make ``name`` a graph input of type ``found`` (its pool is gone from the copy), and retype
    the graph output of that name if there is one (inference reads a graph output's declared
    type)."""
    dtype, dims = found
    elem = dtypes.to_onnx(dtype) if dtype else onnx.TensorProto.UNDEFINED
    shape_dims = None if dims is None else list(dims)
    for value in graph.output:
        if value.name == name:
            value.type.CopyFrom(helper.make_tensor_type_proto(elem, shape_dims))
    graph.input.append(helper.make_tensor_value_info(name, elem, shape_dims))


def _is_complete(value: onnx.ValueInfoProto) -> bool:
    """A value with a type, and if that is a tensor type, with an element type and a shape."""
    if not value.HasField("type"):
        return False
    tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
    return tensor is None or (tensor.HasField("shape") and tensor.elem_type != onnx.TensorProto.UNDEFINED)

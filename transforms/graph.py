"""What the passes read from and write to an ONNX graph: its pooling nodes with their specs and
input dims, fresh names, and opset-dependent helper nodes (Pad, Unsqueeze, Squeeze).

Input dims come from ``onnx.shape_inference``, except that a pooling node's output is always
ovpool's (``shape.output_shape``): where ONNX infers another size (e.g. VALID with ceil_mode) the
node is pinned to ovpool's size and inference runs again, so a pool downstream sees the dims it
will really get. Only the main graph is rewritten: a pooling node inside a subgraph (If, Loop,
Scan) is refused rather than left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, helper, numpy_helper

from ovpool import dtypes, shape
from ovpool.errors import ModelError, UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset, inferred_types
from ovpool.shape import Dim
from ovpool.spec import PoolKind, PoolSpec

_PINNED = "ovpool.pinned"

TensorType = tuple[str | None, tuple[Dim, ...] | None]


@dataclass(frozen=True)
class PoolNode:
    """A pooling node of the main graph: its position, the node, its spec (with the input's dtype
    when known) and the spatial dims of its input (None when even the rank is unknown)."""

    index: int
    node: NodeProto
    spec: PoolSpec
    spatial: tuple[Dim, ...] | None

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
        pools.append(PoolNode(index, node, spec, None if dims is None else tuple(dims[2:])))
    return pools


def pool_labels(model: ModelProto, predicate: Callable[[PoolNode], bool]) -> list[str]:
    """Names of the pooling nodes for which ``predicate(pool)`` is true (property checks)."""
    return [p.spec.name for p in pool_nodes(model) if predicate(p)]


def tensor_types(model: ModelProto) -> dict[str, TensorType]:
    """``{tensor name: (dtype or None, dims or None)}`` for every tensor of the main graph, with
    pooling outputs sized by ovpool's shape engine."""
    work = ModelProto()
    work.CopyFrom(model)
    opset = default_opset(model)
    work.opset_import.append(helper.make_opsetid(_PINNED, 1))
    for _ in range(len(work.graph.node) + 1):
        types = inferred_types(work, required=True, data_prop=True)
        wrong = _first_mis_sized_pool(work, opset, types)
        if wrong is None:
            return types
        _pin(work.graph, wrong, types)
    raise ModelError(f"model '{model.graph.name}': shape inference did not settle")


def complete_value_types(model: ModelProto) -> ModelProto:
    """The model with every graph output typed and shaped, as runtimes see it: onnxruntime and
    OpenVINO load a model whose outputs carry a type without a shape (or no type), the ONNX
    checker does not. A graph output lacking either gets them from ``tensor_types`` (pooling
    outputs sized by ovpool's rules; a dynamic dim stays unnamed), and a ``value_info`` entry
    lacking either is dropped (it is only a hint). A model that lacks neither is returned as it is;
    an output whose rank inference cannot give keeps what it had (the checker then names it)."""
    graph = model.graph
    incomplete = [v for v in graph.output if not _is_complete(v)]
    stale = [v for v in graph.value_info if not _is_complete(v)]
    if not incomplete and not stale:
        return model
    work = ModelProto()
    work.CopyFrom(model)
    for value in [v for v in work.graph.value_info if not _is_complete(v)]:
        work.graph.value_info.remove(value)
    types = tensor_types(work)
    for value in work.graph.output:
        dtype, dims = types.get(value.name, (None, None))
        if _is_complete(value) or dims is None:
            continue
        elem = value.type.tensor_type.elem_type or (dtypes.to_onnx(dtype) if dtype else onnx.TensorProto.UNDEFINED)
        value.type.CopyFrom(helper.make_tensor_type_proto(elem, list(dims)))
    return work


def _is_complete(value: onnx.ValueInfoProto) -> bool:
    """A value with a type, and if that is a tensor type, with an element type and a shape."""
    if not value.HasField("type"):
        return False
    tensor = value.type.tensor_type if value.type.HasField("tensor_type") else None
    return tensor is None or (tensor.HasField("shape") and tensor.elem_type != onnx.TensorProto.UNDEFINED)


def _first_mis_sized_pool(model: ModelProto, opset: int, types: dict[str, TensorType]) -> tuple[NodeProto, list] | None:
    for node in model.graph.node:
        if not onnx_adapter.is_pool_node(node) or node.op_type == "MaxUnpool":
            continue
        dtype, dims = types.get(node.input[0], (None, None))
        if dims is None:
            continue
        spec = onnx_adapter.spec_from_node(node, opset, dtype)
        expected = list(shape.output_shape(spec, dims))
        got = types.get(node.output[0], (None, None))[1]
        if got is None or list(got) != expected:
            return node, expected
    return None


def _pin(graph: GraphProto, wrong: tuple[NodeProto, list], types: dict[str, TensorType]) -> None:
    node, dims = wrong
    dtype = types.get(node.input[0], (None, None))[0]
    node.domain = _PINNED
    for position, name in enumerate(node.output):
        if not name:
            continue
        elem = onnx.TensorProto.INT64 if position == 1 else dtypes.to_onnx(dtype) if dtype else onnx.TensorProto.UNDEFINED
        for existing in [v for v in graph.value_info if v.name == name]:
            graph.value_info.remove(existing)
        graph.value_info.append(helper.make_tensor_value_info(name, elem, dims))


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
    graph: GraphProto, names: FreshNames, opset: int, base: str, src: str, dst: str, begin: Sequence[int], end: Sequence[int]
) -> NodeProto:
    """A zero ``Pad`` of the spatial axes of an (N, C, *spatial) tensor: attribute ``pads`` before
    opset 11, an int64 ``pads`` input from 11 on (Pad-1's ``paddings`` is not emitted)."""
    pads = [0, 0, *begin, 0, 0, *end]
    if opset < 2:
        raise UnsupportedError(f"node '{base}': opset {opset} has only Pad-1; ovpool emits Pad-2 and later")
    if opset < 11:
        return helper.make_node("Pad", [src], [dst], name=names.fresh(f"{base}/pad"), mode="constant", pads=pads, value=0.0)
    pads_name = int64_initializer(graph, names, f"{base}/pads", pads)
    return helper.make_node("Pad", [src, pads_name], [dst], name=names.fresh(f"{base}/pad"), mode="constant")


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
    return spec.kind in (PoolKind.AVERAGE, PoolKind.MAX)

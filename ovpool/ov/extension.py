"""ovpool's ConversionExtension for OpenVINO's ONNX frontend: one per model.

OpenVINO's NodeContext has no node name, output count or opset version, so the extension is made
per model: it knows the model's default-domain opset, and it finds the ONNX node a call is about
by its op type, the tensor name of its first input and its attribute values. The node's PoolSpec
comes from ``onnx_adapter.spec_from_node`` (the one ONNX parsing path), which also tells whether
the node's Indices output is used; ``ovpool.ov.lowering.lower`` builds the OpenVINO nodes. A call that
matches no node (a pool inside a subgraph whose input the frontend renamed) is parsed from the
NodeContext's attributes and keeps an Indices output in case it is used.

Every lowered node is recorded (``PoolExtensions.lowered``) so the finished model can be checked
against the shape engine; an ovpool error raised inside OpenVINO's callback is kept
(``PoolExtensions.errors``) so the caller can raise it as it is rather than OpenVINO's wrapping.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import onnx
import onnx.defs
from onnx import GraphProto, ModelProto, NodeProto, helper

from ovpool.attributes import attributes as onnx_attributes
from ovpool.errors import ModelError, OvpoolError, openvino_reason
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset, graphs
from ovpool.onnx.versions import POOL_OPS
from ovpool.ov import lowering as ov_lowering


@dataclass
class PoolExtensions:
    """The extensions for one ONNX model, and what they did while OpenVINO converted it."""

    proto: ModelProto
    opset: int = 0
    lowered: list[ov_lowering.Lowered] = field(default_factory=list)
    errors: list[OvpoolError] = field(default_factory=list)

    def __post_init__(self) -> None:
        pools = list(_pool_nodes(self.proto.graph))
        # a model of other domains only (ai.onnx.ml) has no default opset, and no pools
        self.opset = default_opset(self.proto) if pools else 0
        self._dequantized = dequantized_tensors(self.proto)
        self._nodes: dict[tuple[str, str], list[NodeProto]] = {}
        for node in pools:
            # OpenVINO hands the extension only the attributes its schema knows: an unknown or
            # out-of-range one must be refused here, before the frontend hides it
            onnx_adapter.spec_from_node(node, self.opset)
            self._nodes.setdefault((node.op_type, node.input[0] if node.input else ""), []).append(node)

    def extensions(self) -> list[object]:
        """One ``ConversionExtension`` per ONNX pooling op type."""
        from openvino.frontend.onnx import ConversionExtension

        return [ConversionExtension(op_type, self.converter(op_type)) for op_type in POOL_OPS]

    def converter(self, op_type: str):
        """The converter of ``op_type``'s nodes (the registry's ``pooling`` entries use it)."""

        def convert(context) -> list:
            try:
                return self._convert(op_type, context)
            except OvpoolError as exc:
                self.errors.append(exc)
                raise

        return convert

    def _convert(self, op_type: str, context) -> list:
        node = self._node_for(op_type, context)
        data = context.get_input(0)
        spec = onnx_adapter.spec_from_node(node, self.opset, ov_lowering.dtype_of(data, f"node '{node.name}'"))
        count = context.get_input_size()
        indices = context.get_input(1) if count > 1 else None
        output_shape = context.get_input(2) if count > 2 else None
        try:
            lowered = ov_lowering.lower(spec, data, indices, output_shape, node.input[0] in self._dequantized)
        except OvpoolError:
            raise
        except Exception as exc:  # OpenVINO's node validation (RuntimeError and its own types)
            raise ModelError(f"node '{node.name}' ({op_type}): OpenVINO refuses it: {openvino_reason(exc)}") from None
        self.lowered.append(lowered)
        return list(lowered.outputs)

    def _node_for(self, op_type: str, context) -> NodeProto:
        attributes = _context_attributes(op_type, self.opset, context)
        names = context.get_input(0).get_names()
        candidates = [
            node
            for name in sorted(names)
            for node in self._nodes.get((op_type, name), [])
            if {name: _plain(value) for name, value in onnx_attributes(node, text=False).items()} == attributes
        ]
        if candidates:
            # Identical nodes on one input differ at most in their outputs: keep one whose
            # Indices output is used, if any is.
            return max(candidates, key=lambda n: len(n.output) > 1 and bool(n.output[1]))
        outputs = ["Y", "Indices"] if _has_indices(op_type, self.opset) else ["Y"]
        return helper.make_node(op_type, ["X"], outputs, name=next(iter(sorted(names)), op_type), **attributes)


# Operators OpenVINO's low-precision execution moves a dequantization through unchanged: a pool
# behind them still pools the integers.
_PRESERVING = frozenset(
    {
        "Identity",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Slice",
        "Split",
        "Gather",
        "Concat",
        "MaxPool",
        "Relu",
        "Pad",
        "DepthToSpace",
        "SpaceToDepth",
        "Resize",
        "Upsample",
    }
)


def dequantized_tensors(proto: ModelProto) -> set[str]:
    """Tensors that are a DequantizeLinear's output, directly or through operators that keep them
    dequantized (``_PRESERVING``): OpenVINO's low-precision execution pools them on the integers."""
    found: set[str] = set()
    for graph in graphs(proto.graph):
        for node in graph.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            if node.op_type == "DequantizeLinear":
                found.update(node.output[:1])
            elif node.op_type in _PRESERVING and node.input and node.input[0] in found:
                found.update(output for output in node.output if output)
    return found


def _pool_nodes(graph: GraphProto) -> Iterator[NodeProto]:
    """The pooling nodes of ``graph`` and its subgraphs (pools in a Loop body convert too)."""
    return (node for sub in graphs(graph) for node in sub.node if onnx_adapter.is_pool_node(node))


def _context_attributes(op_type: str, opset: int, context) -> dict[str, Any]:
    """The attributes a NodeContext carries, for every attribute the node's schema version has
    (``_plain`` values; Any as helper.make_node's attribute **kwargs are)."""
    schema = onnx.defs.get_schema(op_type, opset, "")
    return {name: _plain(context.get_attribute(name)) for name in schema.attributes if context.has_attribute(name)}


def _has_indices(op_type: str, opset: int) -> bool:
    return onnx_adapter.version_row(op_type, opset).indices


def _plain(value: bytes | str | float | list[float] | tuple[float, ...]) -> str | int | list[int]:
    """Attribute values as comparable Python values: bytes -> str, sequences -> lists of ints."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return value if isinstance(value, str) else int(value)

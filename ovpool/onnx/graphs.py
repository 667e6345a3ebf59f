"""Walking an ONNX model's graphs: every subgraph, the constants a graph holds, the default opset.

Below every reader of ONNX nodes (``ovpool.onnx.model``, ``qdq``, ``qoperator``), which all walk
graphs the same way: a Loop body inside an If branch is found by ``graphs`` as a graph of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import AttributeProto, GraphProto, ModelProto, TensorProto

from ovpool.errors import InputFileError


def graphs(graph: GraphProto) -> Iterator[GraphProto]:
    """``graph`` and every subgraph below it (Loop, If and Scan bodies, at any depth), outer first."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from graphs(attribute.g)
            for sub in attribute.graphs:
                yield from graphs(sub)


def constant_tensors(graph: GraphProto) -> dict[str, TensorProto]:
    """The graph's constant tensors by name, as stored: initializers and the outputs of Constant
    nodes holding a ``value`` tensor (external data left out)."""
    found = {init.name: init for init in graph.initializer if init.data_location != TensorProto.EXTERNAL}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            for attribute in node.attribute:
                if attribute.name == "value" and attribute.type == attribute.TENSOR:
                    if attribute.t.data_location != TensorProto.EXTERNAL:
                        found[node.output[0]] = attribute.t
    return found


def default_opset(proto: ModelProto) -> int:
    """The model's default-domain ("" or "ai.onnx") opset version."""
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    raise InputFileError(f"model '{proto.graph.name}' imports no default-domain opset")

"""The quantization a model's tensors carry, as the per-layer walk of ``ovpool compare`` measures
it: each quantized tensor's step (an ONNX model's here, ``onnx_quanta``; an IR's is
``IrGraph.quanta``) and the tensor holding each float tensor's quantized copy (``onnx_views``,
``ir_views``), so a float model's tensor ``r1`` is compared with its quantized model's
``r1_DequantizeLinear_Output``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ovpool.ir.reader import IRDocument, Layer

# The layers that carry a FakeQuantize's output on to the reals, as the ONNX frontend writes
# QuantizeLinear -> DequantizeLinear: FakeQuantize -> Convert u8 -> Convert f32 -> Subtract -> Multiply.
DEQUANTIZE = ("Convert", "Subtract", "Multiply")


def onnx_quanta(proto: Any) -> dict[str, np.ndarray]:
    """The step of each QuantizeLinear output (1: integers) and of each DequantizeLinear output
    whose scale is an initializer: the scale, along
    ``axis`` (default 1) when per axis, as a shape that broadcasts against a rank-``r`` output
    when the output's rank is known from the graph (a scale of 4 along axis 1 of a 4-D output:
    shape (1, 4, 1, 1)); a per-axis scale of unknown rank is left out (blocked scales too)."""
    from onnx import numpy_helper

    initializers = {t.name: t for t in proto.graph.initializer}
    ranks = {
        info.name: len(info.type.tensor_type.shape.dim)
        for info in (*proto.graph.value_info, *proto.graph.output, *proto.graph.input)
        if info.type.tensor_type.HasField("shape")
    }
    quanta: dict[str, np.ndarray] = {}
    for node in proto.graph.node:
        if node.op_type == "QuantizeLinear" and node.domain in ("", "ai.onnx") and node.output:
            quanta[node.output[0]] = np.ones(())  # integers: a step is 1
        if node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
            continue
        scale = initializers.get(node.input[1])
        if scale is None or any(a.name == "block_size" and a.i > 0 for a in node.attribute):
            continue
        value = np.abs(numpy_helper.to_array(scale).astype(np.float64))
        if value.size > 1 or value.ndim == 1:
            rank = ranks.get(node.output[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            if rank is None or value.ndim != 1 or not -rank <= axis < rank:
                continue
            shape = [1] * rank
            shape[axis % rank] = value.size
            value = value.reshape(shape)
        quanta[node.output[0]] = value
    return quanta


def onnx_views(proto: Any) -> dict[str, str]:
    """Each tensor an ONNX model quantizes, mapped to the output of the DequantizeLinear after the
    QuantizeLinear reading it: ``r1`` -> ``r1_DequantizeLinear_Output``."""
    nodes = proto.graph.node
    dequantizers = {node.input[0]: node for node in nodes if node.op_type == "DequantizeLinear" and node.input}
    return {
        node.input[0]: dequantizers[node.output[0]].output[0]
        for node in nodes
        if node.op_type == "QuantizeLinear" and node.input and node.output and node.output[0] in dequantizers
    }


def ir_views(document: IRDocument) -> dict[str, str]:
    """Each tensor an IR quantizes (by its port's names and its tensor name), mapped to the output
    of the FakeQuantize reading it, or of the Multiply ending the ``DEQUANTIZE`` chain after it; a
    chain ending without a Multiply never forms the reals, and maps nothing."""
    producers = document.producers()
    readers: dict[tuple[str, str], list[Layer]] = {}
    for link in document.edges:
        if link.to_layer in document.layers:
            readers.setdefault((link.from_layer, link.from_port), []).append(document.layers[link.to_layer])
    views: dict[str, str] = {}
    for layer in document.layers.values():
        edge = producers.get((layer.id, layer.inputs[0].id)) if layer.type == "FakeQuantize" and layer.inputs else None
        if edge is None or edge.from_layer not in document.layers or not layer.outputs:
            continue
        source = document.layers[edge.from_layer]
        port = next((p for p in source.outputs if p.id == edge.from_port), None)
        names = [n.strip() for n in (port.names if port else "").split(",") if n.strip()]
        chain = [layer]
        while (
            len(after := readers.get((chain[-1].id, chain[-1].outputs[0].id), [])) == 1
            and after[0].type in DEQUANTIZE
            and after[0].outputs
        ):
            chain.append(after[0])
        if len(chain) > 1 and chain[-1].type != "Multiply":
            continue  # the reals are never formed (see check.taps._dequantized)
        target = document.tensor_name(chain[-1], chain[-1].outputs[0].id)
        views.update(dict.fromkeys((*names, document.tensor_name(source, edge.from_port)), target))
    return views

"""Quantized pooling in ONNX models: QDQ patterns and QLinear pooling nodes -> ``QuantizedPool``.

Two spellings of one meaning (``ovpool.quant``):

* the QDQ pattern quantizers and exporters write, ``DequantizeLinear -> pool -> QuantizeLinear``
  (AveragePool, MaxPool without an Indices output, GlobalAveragePool, GlobalMaxPool), where the
  pool's float output feeds only QuantizeLinear nodes and every scale and zero point is a constant;
* onnxruntime's ``com.microsoft`` QLinearAveragePool and QLinearGlobalAveragePool (inputs X,
  x_scale, x_zero_point, y_scale, y_zero_point; ``channels_last`` for NHWC).

``find_qdq_pools`` lists the patterns of a graph; ``qlinear_pool`` parses the fused nodes;
``node_quantization`` reads the scale and zero point of any QuantizeLinear / DequantizeLinear
node; ``check_quantization_nodes`` is the structural check of every such node's constants (a zero
scale, a zero point outside its type, per-axis lengths that differ, a missing scale), each refusal
one line naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from ovpool import dtypes
from ovpool.attributes import attribute, attributes
from ovpool.errors import ModelError, OvpoolError
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.graphs import constant_tensors, default_opset, graphs
from ovpool.onnx.versions import LP_OPS
from ovpool.quant import QUANT_TYPES, Quantization, QuantizedPool

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
MS_DOMAIN = "com.microsoft"
QLINEAR_POOL_OPS = {"QLinearAveragePool": "AveragePool", "QLinearGlobalAveragePool": "GlobalAveragePool"}
# The AveragePool version whose attributes QLinearAveragePool carries (auto_pad, ceil_mode,
# count_include_pad, kernel_shape, pads, strides; no dilations), besides its own channels_last.
QLINEAR_AVERAGE_SINCE = 11

# ONNX element types of the quantized integers ovpool handles, and their names in ovpool.quant.
_ONNX_QUANT_TYPES = {
    TensorProto.UINT8: "uint8",
    TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16",
    TensorProto.INT16: "int16",
    TensorProto.UINT4: "uint4",
    TensorProto.INT4: "int4",
}


@dataclass(frozen=True)
class QdqPool:
    """One ``DequantizeLinear -> pool -> QuantizeLinear`` pattern: the three nodes and the meaning.
    ``quantize`` is the QuantizeLinear node the meaning ends in (a pool feeding two QuantizeLinear
    nodes gives two patterns)."""

    dequantize: NodeProto
    pool: NodeProto
    quantize: NodeProto
    meaning: QuantizedPool


def constants(graph: GraphProto) -> dict[str, np.ndarray]:
    """The graph's constant tensors by name (``ovpool.onnx.graphs.constant_tensors``) as arrays."""
    return {name: numpy_helper.to_array(tensor) for name, tensor in constant_tensors(graph).items()}


def node_label(node: NodeProto) -> str:
    """``node 'dq1' (DequantizeLinear)``, by name or, for an unnamed node, by its first output."""
    return f"node '{node.name or (node.output[0] if node.output else node.op_type)}' ({node.op_type})"


def node_quantization(
    node: NodeProto,
    opset: int,
    known: Mapping[str, np.ndarray],
    rank: int | None = None,
    tensor_type: str | None = None,
    scale_at: int = 1,
) -> Quantization | None:
    """The ``Quantization`` of a QuantizeLinear / DequantizeLinear node (its inputs ``scale_at`` and
    ``scale_at + 1``), or None when its scale or zero point is not a constant, or it is blocked
    (``block_size``) or per-axis along no known axis. ``tensor_type`` is the quantized tensor's
    element type when known (it decides without a zero point: uint8 by default). Bad constants
    raise ``ModelError`` naming the node."""
    where = node_label(node)
    scale_name = node.input[scale_at] if len(node.input) > scale_at else ""
    if not scale_name:
        raise ModelError(f"{where}: the scale input is missing")
    zero_name = node.input[scale_at + 1] if len(node.input) > scale_at + 1 else ""
    if scale_name not in known or (zero_name and zero_name not in known):
        return None
    attrs = attributes(node, text=False)
    if int(attrs.get("block_size", 0) or 0):
        return None
    scale = np.asarray(known[scale_name])
    zero = np.asarray(known[zero_name]) if zero_name else None
    dtype = _quantized_type(node, attrs, zero, tensor_type, where)
    if dtype is None:
        return None
    if scale.dtype.kind != "f":
        raise ModelError(f"{where}: the scale is {scale.dtype.name}, not a float tensor")
    if scale.ndim > 1 or (zero is not None and zero.ndim > 1):
        raise ModelError(f"{where}: a scale or zero point of rank > 1 needs block_size (blocked quantization)")
    if zero is not None and zero.size not in (1, scale.size):
        raise ModelError(f"{where}: {scale.size} scale(s) but {zero.size} zero point(s)")
    axis: int | None = None
    if scale.size > 1:
        axis = int(attrs.get("axis", 1))
        if rank is not None:
            if not -rank <= axis < rank:
                raise ModelError(f"{where}: attribute 'axis' = {axis} is outside a tensor of rank {rank}")
            axis %= rank
        elif axis < 0:
            return None
    zeros = [0] * scale.size if zero is None else [int(v) for v in zero.reshape(-1).astype(np.int64)]
    return Quantization(tuple(float(s) for s in scale.reshape(-1)), tuple(zeros), dtype, axis, where)


def find_qdq_pools(model: ModelProto) -> list[QdqPool]:
    """Every ``DequantizeLinear -> pool -> QuantizeLinear`` pattern of the main graph whose pool
    output feeds QuantizeLinear nodes only (not a graph output) and whose quantizations are
    constants, per tensor or per channel (axis 1), with positive scales."""
    graph = model.graph
    opset = default_opset(model)
    known = constants(graph)
    producers = {output: node for node in graph.node for output in node.output if output}
    consumers: dict[str, list[NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = {output.name for output in graph.output}
    found = []
    for pool in graph.node:
        if not onnx_adapter.is_pool_node(pool) or pool.op_type in ("MaxUnpool", *LP_OPS) or not pool.input:
            continue
        if len(pool.output) > 1 and pool.output[1]:
            continue  # indices: a max pool with a second output is not a quantized pool
        dequantize = producers.get(pool.input[0])
        users = consumers.get(pool.output[0], [])
        if dequantize is None or not _is(dequantize, "DequantizeLinear") or not users or pool.output[0] in graph_outputs:
            continue
        if not all(_is(user, "QuantizeLinear") and user.input[0] == pool.output[0] for user in users):
            continue
        rank = _pool_rank(pool, graph, opset)
        source = node_quantization(dequantize, opset, known, rank, _elem_type(graph, dequantize.input[0]))
        if source is None or not _channel_wise(source) or not source.increasing:
            continue
        spec = onnx_adapter.spec_from_node(pool, opset)
        for user in users:
            target = node_quantization(user, opset, known, rank)
            if target is None or not _channel_wise(target) or not target.increasing:
                continue
            found.append(QdqPool(dequantize, pool, user, QuantizedPool(spec, source, target)))
    return found


def qlinear_pool(node: NodeProto, known: Mapping[str, np.ndarray], tensor_type: str | None = None) -> QuantizedPool:
    """The meaning of a com.microsoft QLinearAveragePool / QLinearGlobalAveragePool node, whose
    scales and zero points must be constants (else ``ModelError`` naming the node). Its pooling
    attributes are AveragePool-11's; ``channels_last`` does not change the meaning, only the layout
    (``is_channels_last``)."""
    where = node_label(node)
    float_op = QLINEAR_POOL_OPS[node.op_type]
    attrs = [a for a in node.attribute if a.name != "channels_last"]
    pool = helper.make_node(float_op, [node.input[0]], [node.output[0]], name=node.name or node.output[0])
    pool.attribute.extend(attrs)
    spec = onnx_adapter.spec_from_node(pool, QLINEAR_AVERAGE_SINCE)
    quantizations = []
    for at in (1, 3):
        found = node_quantization(node, 0, known, scale_at=at, tensor_type=tensor_type)
        if found is None:
            raise ModelError(f"{where}: its scales and zero points must be constants (initializers or Constant nodes)")
        if not found.per_tensor:
            raise ModelError(f"{where}: {node.op_type} takes per-tensor scales and zero points; got {len(found.scale)}")
        quantizations.append(found)
    source, target = quantizations
    if source.dtype != target.dtype:
        raise ModelError(f"{where}: x_zero_point is {source.dtype} but y_zero_point is {target.dtype}; they must be one type")
    return QuantizedPool(spec, source, target)


def is_channels_last(node: NodeProto) -> bool:
    """A QLinear pooling node working on NHWC tensors (``channels_last=1``)."""
    return bool(attribute(node, "channels_last", 0))


def check_quantization_nodes(model: ModelProto) -> None:
    """Refuse, naming the node, a QuantizeLinear, DequantizeLinear or com.microsoft QLinear pooling
    node whose constant scale is zero or not finite, whose zero point has another type than the
    tensor it quantizes or another count than the scales, or whose scale is missing."""
    opset = default_opset(model)
    for graph in graphs(model.graph):
        known = constants(graph)
        for node in graph.node:
            if _is(node, *QDQ_OPS):
                quantized = _elem_type(graph, node.input[0]) if node.op_type == "DequantizeLinear" else None
                found = _check_node(node, opset, known, 1, quantized)
                dims = _declared_dims(graph, node.input[0])
                if found is not None and dims is not None and not found.per_tensor:
                    found.check_rank(tuple(-1 if d is None else d for d in dims))
            elif node.domain == MS_DOMAIN and node.op_type in QLINEAR_POOL_OPS:
                _check_node(node, opset, known, 1, _elem_type(graph, node.input[0]))
                _check_node(node, opset, known, 3)


def _check_node(
    node: NodeProto, opset: int, known: Mapping[str, np.ndarray], at: int, quantized: str | None = None
) -> Quantization | None:
    where = node_label(node)
    scale_name = node.input[at] if len(node.input) > at else ""
    if not scale_name:
        raise ModelError(f"{where}: the scale input is missing")
    scale = known.get(scale_name)
    if scale is not None and scale.dtype.kind == "f":
        values = np.asarray(scale, dtype=np.float64)
        bad = values[~np.isfinite(values) | (values == 0)]
        if bad.size:
            raise ModelError(f"{where}: scale {float(bad.reshape(-1)[0]):g} must be finite and non-zero")
    try:
        return node_quantization(node, opset, known, scale_at=at, tensor_type=quantized)
    except OvpoolError:
        raise
    except (ValueError, TypeError) as exc:
        raise ModelError(f"{where}: {exc}") from None


def _quantized_type(
    node: NodeProto, attrs: Mapping[str, object], zero: np.ndarray | None, tensor_type: str | None, where: str
) -> str | None:
    """ovpool.quant's name of the integer type (None: a float8 or other type it has no rule for)."""
    if zero is not None:
        name = _numpy_quant_type(zero.dtype)
    elif "output_dtype" in attrs and int(attrs["output_dtype"]):  # type: ignore[call-overload]
        name = _ONNX_QUANT_TYPES.get(int(attrs["output_dtype"]))  # type: ignore[call-overload]
    elif tensor_type is not None:
        name = tensor_type if tensor_type in QUANT_TYPES else None
    else:
        name = "uint8"
    if name is None:
        return None
    if tensor_type is not None and tensor_type != name and tensor_type in QUANT_TYPES:
        raise ModelError(f"{where}: the zero point is {name} but the quantized tensor is {tensor_type}")
    return name


def _numpy_quant_type(dtype: np.dtype) -> str | None:
    """uint8 -> "uint8"; onnx's int4/uint4 numpy types (ml_dtypes) -> "int4"/"uint4"; else None."""
    name = np.dtype(dtype).name
    if name in QUANT_TYPES:
        return name
    return name if name in ("int4", "uint4") else None


def tensor_kinds(model: ModelProto) -> dict[str, tuple[str | None, int | None]]:
    """``{tensor: (element type name, rank)}`` of the main graph after ONNX shape inference, None
    where unknown; 4-bit types by ovpool.quant's names ("int4"), where ``dtypes`` has none."""
    import onnx

    try:
        graph = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    except (onnx.shape_inference.InferenceError, RuntimeError, ValueError):
        graph = model.graph
    return graph_kinds(graph)


def graph_kinds(graph: GraphProto) -> dict[str, tuple[str | None, int | None]]:
    """``tensor_kinds`` of a graph as it is (inferred already: ``ModelFacts.tensor_kinds``)."""
    kinds: dict[str, tuple[str | None, int | None]] = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.type.HasField("tensor_type"):
            tensor = info.type.tensor_type
            rank = len(tensor.shape.dim) if tensor.HasField("shape") else None
            kinds[info.name] = (_ONNX_QUANT_TYPES.get(tensor.elem_type) or _dtype_or_none(tensor.elem_type), rank)
    for init in graph.initializer:
        kinds[init.name] = (_ONNX_QUANT_TYPES.get(init.data_type) or _dtype_or_none(init.data_type), len(init.dims))
    return kinds


def _elem_type(graph: GraphProto, name: str) -> str | None:
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.name == name and info.type.HasField("tensor_type"):
            return _ONNX_QUANT_TYPES.get(info.type.tensor_type.elem_type) or _dtype_or_none(info.type.tensor_type.elem_type)
    for init in graph.initializer:
        if init.name == name:
            return _ONNX_QUANT_TYPES.get(init.data_type)
    return None


def _declared_dims(graph: GraphProto, name: str) -> tuple[int | None, ...] | None:
    """The dims a graph input, value_info or initializer declares for ``name`` (None: unknown)."""
    for info in list(graph.input) + list(graph.value_info):
        if info.name == name and info.type.tensor_type.HasField("shape"):
            return tuple(d.dim_value if d.HasField("dim_value") else None for d in info.type.tensor_type.shape.dim)
    for init in graph.initializer:
        if init.name == name:
            return tuple(init.dims)
    return None


def _dtype_or_none(elem_type: int) -> str | None:
    try:
        return dtypes.from_onnx(elem_type)
    except OvpoolError:
        return None


def _pool_rank(pool: NodeProto, graph: GraphProto, opset: int) -> int | None:
    """The rank of a pool's input: 2 + the kernel's length, or for a global pool the declared rank."""
    kernel = attribute(pool, "kernel_shape")
    if kernel is not None:
        return 2 + len(kernel)
    for info in list(graph.input) + list(graph.value_info):
        if info.name == pool.input[0] and info.type.tensor_type.HasField("shape"):
            return len(info.type.tensor_type.shape.dim)
    return None


def _channel_wise(quantization: Quantization) -> bool:
    """Per tensor, or per channel (axis 1 of N, C, *spatial): what a pool keeps apart."""
    return quantization.per_tensor or quantization.axis == 1


def _is(node: NodeProto, *op_types: str) -> bool:
    return node.domain in ("", "ai.onnx") and node.op_type in op_types

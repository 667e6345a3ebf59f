"""ONNX models and OpenVINO IR -> DirectML operator graphs (JSON, or C++ with ``.h``).

Every pooling node becomes one DirectML operator (two for an include-pad average with a ceil
overhang: PADDING then the average), in graph order, named after the node; every other node is
listed under ``skipped`` and on stderr. DirectML tensor descs need static sizes and data types: a
pooling input without them is refused naming the node. Pooling output sizes come from the shape
engine, never from ONNX shape inference.

Quantized average pooling becomes DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING
(``ovpool.dml.quantized``): a QDQ pattern ``DequantizeLinear -> AveragePool/GlobalAveragePool ->
QuantizeLinear`` (``ovpool.onnx.qdq.find_qdq_pools``) is one operator from the DequantizeLinear's
input to the QuantizeLinear's output, its DequantizeLinear and QuantizeLinear absorbed where
nothing else reads them; com.microsoft QLinearAveragePool / QLinearGlobalAveragePool are one
operator each. A QDQ MaxPool stays a float max pool between its (skipped) DequantizeLinear and
QuantizeLinear.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from onnx import ModelProto, NodeProto

from ovpool.dml import adapter as dml_adapter
from ovpool.dml import cpp as dml_cpp
from ovpool.dml.levels import parse_feature_level
from ovpool.dml.quantized import operators_from_quantized
from ovpool.dml.sizes import static_dims
from ovpool.errors import ModelError, SpecError, UnsupportedError
from ovpool.inputs import input_shapes
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.reader import declared_bounds, read_ir
from ovpool.ir.templates import POOL_LAYER_TYPES
from ovpool.names import FreshNames
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.model import default_opset, load
from ovpool.onnx.qdq import (
    MS_DOMAIN,
    QLINEAR_POOL_OPS,
    QdqPool,
    check_quantization_nodes,
    find_qdq_pools,
    is_channels_last,
    node_label,
    qlinear_pool,
)
from ovpool.onnx.qdq import constants as qdq_constants
from ovpool.onnx.static_shapes import with_input_shapes
from ovpool.spec import PoolKind
from ovpool.tensors import onnx_inputs

Shape = tuple[int | None, ...]
Inputs = str | Sequence[str] | Mapping[str, Sequence[int | str]] | None


def document_from_onnx(
    model: str | Path | ModelProto, feature_level: str | None = None, inputs: Inputs = None
) -> dml_adapter.Document:
    """The DirectML document of an ONNX model's pooling nodes (``feature_level`` caps the
    operators' levels, e.g. "4.0"). ``inputs`` gives dynamic graph inputs static shapes first
    (``"x[1,3,640,640]"``, as ``ovpool convert --input`` takes them); the dims of each pooling
    input come from ``ovpool.dml.sizes`` (ONNX inference, else OpenVINO's, else a numpy
    run); one still dynamic is refused naming the node, the tensor and the inputs to give."""
    cap = parse_feature_level(feature_level)
    label = model.graph.name or "model" if isinstance(model, ModelProto) else str(model)
    proto = with_input_shapes(load(model), input_shapes(inputs), label)
    opset = default_opset(proto)
    check_quantization_nodes(proto)
    known = static_dims(proto, _sized_tensors(proto))
    constants = qdq_constants(proto.graph)
    operators: list[dict] = []
    tensors: dict[str, dict] = {}
    values: dict[str, dict] = {}
    skipped: list[dml_adapter.SkippedNode] = []
    taken = FreshNames(set(known) | set(constants) | {o for n in proto.graph.node for o in n.output})
    quantized = _QuantizedAverages(proto)
    for node in proto.graph.node:
        if quantized.absorbs(node):
            continue
        lowered_all = _quantized_lowerings(node, quantized, known, constants, taken, cap)
        for lowered in lowered_all:
            operators.extend(lowered.operators)
            tensors.update(lowered.tensors)
            values.update(lowered.constants)
            for name, desc in lowered.tensors.items():
                known[name] = (dml_adapter.numpy_type(desc["DataType"], name), tuple(desc["Sizes"]))
        if lowered_all and not quantized.keeps_float(node):
            continue
        if not onnx_adapter.is_pool_node(node):
            skipped.append({"name": node.name or (node.output[0] if node.output else ""), "op_type": node.op_type})
            continue
        dtype, input_shape = known.get(node.input[0], (None, None))
        spec = onnx_adapter.spec_from_node(node, opset, dtype)
        where = f"node '{spec.name}' ({node.op_type})"
        if input_shape is None or None in input_shape:
            raise UnsupportedError(_unsized(where, node.input[0], input_shape, proto))
        index_dtype, output_shape = None, None
        if spec.kind is PoolKind.UNPOOL:
            index_dtype = known.get(node.input[1], ("int64", None))[0]
            output_shape = _unpool_output_shape(node, constants, where)
        lowered = dml_adapter.operators_from_spec(
            spec,
            input_shape,
            list(node.input),
            [o for o in node.output if o],
            cap=cap,
            index_dtype=index_dtype,
            output_shape=output_shape,
            pad_tensor=taken.fresh(f"{spec.name}/pad"),
        )
        operators.extend(lowered.operators)
        tensors.update(lowered.tensors)
        for name, desc in lowered.tensors.items():
            known[name] = (dml_adapter.numpy_type(desc["DataType"], name), tuple(desc["Sizes"]))
    if not operators:
        raise UnsupportedError(f"model '{proto.graph.name}' has no pooling node to convert to DirectML")
    return dml_adapter.new_document(operators, tensors, skipped, values)


def _quantized_lowerings(
    node: NodeProto,
    quantized: _QuantizedAverages,
    known: Mapping[str, tuple[str | None, Shape | None]],
    constants: Mapping[str, np.ndarray],
    taken: FreshNames,
    cap: int,
) -> list[dml_adapter.Lowered]:
    """The quantized operators a node starts: one for a com.microsoft QLinear pooling node, one
    per QDQ pattern of a pool (named ``<pool>/<quantize>`` when the pool feeds several), none else."""
    lowered = []
    if node.domain == MS_DOMAIN and node.op_type in QLINEAR_POOL_OPS:
        where = node_label(node)
        if not node.input or not node.input[0] or len(node.output) != 1:
            raise ModelError(f"{where}: needs the input X and one output Y")
        dtype, input_shape = known.get(node.input[0], (None, None))
        pool = qlinear_pool(node, constants, dtype)
        shape_ = _shape_of(node.input[0], input_shape, where)
        lowered.append(
            operators_from_quantized(pool, shape_, node.input[0], node.output[0], taken, cap, is_channels_last(node), where)
        )
    patterns = quantized.patterns.get(node.output[0] if node.output else "", [])
    for pattern in patterns:
        where = node_label(pattern.pool)
        source, meaning = pattern.dequantize.input[0], pattern.meaning
        if len(patterns) > 1:
            quantize_name = pattern.quantize.name or pattern.quantize.output[0]
            meaning = replace(meaning, spec=meaning.spec.with_(name=f"{meaning.spec.name}/{quantize_name}"))
        shape_ = _shape_of(source, known.get(source, (None, None))[1], where)
        lowered.append(operators_from_quantized(meaning, shape_, source, pattern.quantize.output[0], taken, cap, where=where))
    return lowered


class _QuantizedAverages:
    """The QDQ average pools of a model (``find_qdq_pools``) and the nodes they absorb.

    ``patterns`` maps a pool's output to its patterns (one per QuantizeLinear reading it). A
    QuantizeLinear of a pattern is absorbed; a DequantizeLinear is absorbed when only absorbed
    pools read it and it is no graph output; a pool is absorbed (``keeps_float`` False) when
    patterns cover every node reading it.
    """

    def __init__(self, proto: ModelProto) -> None:
        graph = proto.graph
        found: list[QdqPool] = [
            p for p in find_qdq_pools(proto) if p.meaning.spec.kind in (PoolKind.AVERAGE, PoolKind.GLOBAL_AVERAGE)
        ]
        self.patterns: dict[str, list[QdqPool]] = {}
        for pattern in found:
            self.patterns.setdefault(pattern.pool.output[0], []).append(pattern)
        readers: dict[str, list[str]] = {}
        for node in graph.node:
            for name in node.input:
                readers.setdefault(name, []).append(node.output[0] if node.output else "")
        graph_outputs = {o.name for o in graph.output}
        quantizes = {p.quantize.output[0] for p in found}
        self._float_pools = {pool for pool in self.patterns if not set(readers.get(pool, [])) <= quantizes}
        absorbed_pools = set(self.patterns) - self._float_pools
        dequantizes = {p.dequantize.output[0] for p in found}
        self._absorbed = quantizes | {
            dq for dq in dequantizes if dq not in graph_outputs and set(readers.get(dq, [])) <= absorbed_pools
        }

    def absorbs(self, node: NodeProto) -> bool:
        """A DequantizeLinear or QuantizeLinear whose work a quantized operator does."""
        return bool(node.output) and node.output[0] in self._absorbed and node.op_type in ("DequantizeLinear", "QuantizeLinear")

    def keeps_float(self, node: NodeProto) -> bool:
        """A QDQ pool that another node also reads as float: its float operator stays."""
        return bool(node.output) and node.output[0] in self._float_pools


def _shape_of(tensor: str, input_shape: Shape | None, where: str) -> Shape:
    if input_shape is None:
        raise UnsupportedError(f"{where}: the shape of input '{tensor}' is unknown; DirectML tensor descs need sizes")
    return input_shape


def onnx_to_dml(
    src: Path, out_suffix: str, feature_level: str | None = None, inputs: Inputs = None, **_options: object
) -> dict[str, bytes]:
    """Route ("onnx", "dml"): the document as ``.json``, or as C++ when ``out_suffix`` is ``.h``."""
    return render(document_from_onnx(src, feature_level, inputs), out_suffix, src.name)


def _sized_tensors(proto: ModelProto) -> set[str]:
    """The tensors whose dims the document needs: every pooling node's input (float and quantized)."""
    kinds = {*QLINEAR_POOL_OPS, "DequantizeLinear"}
    return {
        node.input[0] for node in proto.graph.node if node.input and (onnx_adapter.is_pool_node(node) or node.op_type in kinds)
    }


def _unsized(where: str, tensor: str, dims: Shape | None, proto: ModelProto) -> str:
    """``node 'pool' (MaxPool): input 'x' has dims [?, 128, ?, ?]; DirectML tensor descs need sizes:
    give the dynamic inputs static shapes with --input NAME[d0,d1,...] (images: float32 [?, 3, ?, ?])``."""
    shown = "unknown dims" if dims is None else "dims [" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    dynamic = "; ".join(d.shown() for d in onnx_inputs(proto) if d.shape is None or None in d.shape)
    hint = f": give the dynamic inputs static shapes with --input NAME[d0,d1,...] ({dynamic})" if dynamic else ""
    return f"{where}: input '{tensor}' has {shown}; DirectML tensor descs need sizes{hint}"


def document_from_ir(src: str | Path, feature_level: str | None = None) -> dml_adapter.Document:
    """The DirectML document of an OpenVINO IR's pooling layers (read with ``ovpool.ir.adapter``, so
    ``ceil`` without the drop rule and ``exclude-pad="false"`` keep OpenVINO's meaning). Tensor
    names are the ports' first ``names`` entry, else the layer's name (``name:port`` for a second
    output). Layers must be in execution order, as OpenVINO writes them."""
    cap = parse_feature_level(feature_level)
    doc = read_ir(Path(src))
    doc.check_structure()
    producers = doc.producers()
    used = {(e.from_layer, e.from_port) for e in doc.edges}
    pool_types = POOL_LAYER_TYPES
    names: dict[tuple[str, str], str] = {}
    operators: list[dict] = []
    tensors: dict[str, dict] = {}
    skipped: list[dml_adapter.SkippedNode] = []
    for layer in doc.layers.values():
        for port in layer.outputs:
            names[(layer.id, port.id)] = doc.tensor_name(layer, port.id)
        if layer.type in ("Parameter", "Result", "Const"):
            continue
        if layer.type not in pool_types:
            skipped.append({"name": layer.name, "op_type": layer.type})
            continue
        where = f"layer {layer.id} '{layer.name}' ({layer.type} {layer.version})"
        edge = producers.get((layer.id, layer.inputs[0].id)) if layer.inputs else None
        if edge is None or (edge.from_layer, edge.from_port) not in names or not layer.outputs:
            raise ModelError.in_file(doc.path, f"{where}: its input is not produced by an earlier layer")
        try:
            bounds = declared_bounds(layer.inputs[0].dims, where)
        except ModelError as exc:
            raise exc.located(doc.path) from None
        static = [b[0] for b in bounds if b is not None and b[0] == b[1]]
        if len(static) != len(bounds):
            raise UnsupportedError(
                f"{where}: input dims [{', '.join(layer.inputs[0].dims)}] are not static; DirectML tensor descs need sizes"
            )
        input_shape = tuple(static)
        with_indices = len(layer.outputs) > 1 and (layer.id, layer.outputs[1].id) in used
        template = template_for(layer.type, layer.version, where)
        try:
            spec = spec_from_layer(template, layer.data, len(input_shape), layer.inputs[0].dtype, layer.name, with_indices)
        except SpecError as exc:
            raise exc.at(where) from None
        outputs = [names[(layer.id, p.id)] for p in layer.outputs[: 2 if with_indices else 1]]
        lowered = dml_adapter.operators_from_spec(
            spec,
            input_shape,
            [names[(edge.from_layer, edge.from_port)]],
            outputs,
            cap=cap,
            pad_tensor=FreshNames(names.values()).fresh(f"{spec.name}/pad"),
            where=where,
        )
        operators.extend(lowered.operators)
        tensors.update(lowered.tensors)
    if not operators:
        raise UnsupportedError.in_file(doc.path, "no pooling layer to convert to DirectML")
    return dml_adapter.new_document(operators, tensors, skipped)


class SkippedNodesWarning(UserWarning):
    """A DirectML document lists nodes it does not express (it holds pooling operators only)."""


def ir_to_dml(src: Path, out_suffix: str, feature_level: str | None = None, **_options: object) -> dict[str, bytes]:
    """Route ("ir", "dml")."""
    return render(document_from_ir(src, feature_level), out_suffix, src.name)


def render(document: dml_adapter.Document, out_suffix: str, source_name: str) -> dict[str, bytes]:
    """``{".json": ...}`` or ``{".h": ...}``; the skipped nodes are also a ``SkippedNodesWarning``
    (the CLI prints it as ``warning: m.onnx: skipped 2 non-pooling node(s): Conv 'conv1', ...``)."""
    skipped = document.get("skipped") or []
    if skipped:
        names = ", ".join(f"{s['op_type']} '{s['name']}'" for s in skipped)
        warnings.warn(f"{source_name}: skipped {len(skipped)} non-pooling node(s): {names}", SkippedNodesWarning, stacklevel=2)
    if out_suffix == ".h":
        return {".h": dml_cpp.render(document, source_name).encode()}
    return {".json": dml_adapter.dumps(document)}


def _unpool_output_shape(node, constants: Mapping[str, np.ndarray], where: str) -> tuple[int, ...] | None:
    """MaxUnpool's ``output_shape`` input when given: it must be a constant for DirectML."""
    if len(node.input) < 3 or not node.input[2]:
        return None
    if node.input[2] not in constants:
        raise UnsupportedError(f"{where}: output_shape '{node.input[2]}' is computed at run time; DirectML needs it constant")
    return tuple(int(v) for v in constants[node.input[2]].reshape(-1))

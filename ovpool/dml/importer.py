"""DirectML operator graphs (ovpool JSON) -> ONNX models, and OpenVINO IR through ``ovpool.ir.writer``.

The graph is rebuilt from the operators' ``inputs``/``outputs`` names: a tensor read before any
operator writes it is a graph input, one written and never read afterwards a graph output; their
data types and shapes are the document's ``tensors`` entries (the source graph's), else the descs'.
Each pooling operator becomes one ONNX node (``dml_adapter.spec_from_operator``; a 4-D desc over
a 3-D tensor is the 1-D pool it legalised, ``shape.drop_unit_axis``), PADDING becomes ``Pad``.
DirectML's unsigned index tensors (UINT64/UINT32) become ONNX's int64 through a ``Cast`` unless
the document says the source tensor was int64 (same bits: indices are never negative).

QUANTIZED_LINEAR_AVERAGE_POOLING becomes com.microsoft ``QLinearAveragePool`` where it can
(per-tensor scales, no dilations, one data type; ``channels_last=1`` for a channels-last view):
that node is what onnxruntime's DirectML execution provider compiles into this descriptor, and
onnxruntime's quantizer writes it in its QOperator format. onnxruntime fuses a QDQ average pool
into QLinearAveragePool for its CPU provider only, so on DirectML a QDQ pattern runs as
dequantize, float pooling, quantize. Per-channel scales, dilations (which QLinearAveragePool lacks)
or an int8 -> uint8 pool become the QDQ pattern ``DequantizeLinear -> AveragePool ->
QuantizeLinear`` (per-channel along axis 1). OpenVINO IR has no integer form of it in ovpool: that
import is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, helper, numpy_helper

from ovpool import dtypes, shape
from ovpool.dml import adapter as dml_adapter
from ovpool.dml.adapter import Operator, shown
from ovpool.dml.quantized import nchw_shape, nhwc_shape, quantized_pool_from_operator
from ovpool.errors import ModelError, UnsupportedError
from ovpool.files import read_input
from ovpool.ir.writer import IRGraph
from ovpool.names import FreshNames
from ovpool.onnx import adapter as onnx_adapter
from ovpool.onnx.qdq import MS_DOMAIN, QLINEAR_AVERAGE_SINCE
from ovpool.quant import Quantization, QuantizedPool
from ovpool.spec import Indices, PoolKind, PoolSpec

IMPORT_OPSET = 22


def read_document(src: str | Path) -> dict:
    """A DirectML document from a regular file of at most ``dml_adapter.MAX_JSON_BYTES``."""
    path = Path(src)
    return dml_adapter.loads(read_input(path, dml_adapter.MAX_JSON_BYTES, "DirectML JSON"), str(path))


@dataclass(frozen=True)
class Step:
    """One operator restated on the graph's own tensors: its PoolSpec (1-D again where the descs
    carry a unit axis), or for PADDING its (start, end, value); for a quantized pool also its
    ``quantized`` meaning (whose spec is ``spec``)."""

    op: Operator
    spec: PoolSpec | None
    padding: tuple[tuple[int, ...], tuple[int, ...], float] | None
    quantized: QuantizedPool | None = None


@dataclass(frozen=True)
class Graph:
    """A document as a graph: steps in order, the graph's inputs and outputs, and each tensor's
    (dtype, sizes or None)."""

    steps: tuple[Step, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    types: dict[str, tuple[str, tuple[int, ...] | None]]


def read_graph(document: Mapping[str, object]) -> Graph:
    """Check every operator and restate it on the graph's tensors.

    Operators must be in execution order and write each tensor once: an operator that reads a
    tensor a later operator writes (a cycle, or the wrong order) or writes a tensor already
    written is refused, naming both operators. A ``tensors`` entry must have the DataType of the
    descs that read or write the tensor (int64/int32 for UINT64/UINT32 indices: the same bits).
    """
    # ``loads`` has checked that operators is a list and tensors an object.
    operators = [dml_adapter.check_operator(op, i) for i, op in enumerate(cast("Iterable[object]", document["operators"]))]
    logical = _logical_tensors(cast("Mapping[str, object]", document.get("tensors") or {}))
    constants = document.get("constants") or {}
    if not isinstance(constants, dict):
        raise ModelError("'constants' must be an object of tensor name -> {DataType, Sizes, Values}")
    writer = _writers(operators)
    written_constant = next((t for t in writer if t in constants), None)
    if written_constant is not None:
        raise ModelError(f"operator '{writer[written_constant][1]}': writes tensor '{written_constant}', which 'constants' holds")
    types: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    read_first: list[str] = []
    written: list[str] = []
    steps = []
    for position_of_op, op in enumerate(operators):
        late = [t for t in op.inputs if t in writer and writer[t][0] >= position_of_op]
        if late:
            raise ModelError(
                f"operator '{op.name}': reads tensor '{late[0]}', which operator '{writer[late[0]][1]}' writes "
                "at or after it; operators must be listed in execution order, without cycles"
            )
        unit = _unit_axis(op, logical)
        # a quantized pool's scales and zero points are constants, not graph tensors
        data_inputs = op.inputs[:1] if op.row.quantized else op.inputs
        for position, tensor in enumerate(data_inputs):
            desc_type = op.index_type if position == 1 else op.dtype
            assert desc_type is not None  # check_operator refuses a MAX_UNPOOLING without IndicesTensor
            _check_entry(op, tensor, desc_type, op.input_sizes, unit, logical)
            if tensor not in written and tensor not in read_first:
                read_first.append(tensor)
                types[tensor] = logical.get(tensor) or (desc_type, _default_sizes(op, op.input_sizes, unit))
        for position, tensor in enumerate(op.outputs):
            desc_type = op.index_type if position else op.output_dtype
            assert desc_type is not None  # a second output is the OutputIndicesTensor check_operator found
            _check_entry(op, tensor, desc_type, op.output_sizes, unit, logical)
            types[tensor] = logical.get(tensor) or (desc_type, _default_sizes(op, op.output_sizes, unit))
        written.extend(op.outputs)
        if op.row.kind is None:
            steps.append(Step(op, None, _padding(op, unit)))
        elif op.row.quantized:
            meaning = quantized_pool_from_operator(op, constants)
            spec = shape.drop_unit_axis(meaning.spec) if unit else meaning.spec
            steps.append(Step(op, spec, None, QuantizedPool(spec, meaning.input, meaning.output)))
        else:
            spec = dml_adapter.spec_from_operator(op)
            steps.append(Step(op, shape.drop_unit_axis(spec) if unit else spec, None))
    both = next((t for t in types if t in constants), None)
    if both is not None:
        raise ModelError(f"tensor '{both}': an operator reads or writes it as data, and 'constants' holds it too")
    consumed = {t for op in operators for t in op.inputs}
    outputs = tuple(t for t in dict.fromkeys(written) if t not in consumed)
    return Graph(tuple(steps), tuple(read_first), outputs, types)


def model_from_document(document: Mapping[str, object], name: str = "dml") -> ModelProto:
    """An ONNX model (default opset ``IMPORT_OPSET``) computing the document's operators."""
    graph = read_graph(document)
    nodes: list[onnx.NodeProto] = []
    initializers: dict[str, TensorProto] = {}
    names = FreshNames(list(graph.types) + [s.op.name for s in graph.steps] + list(_constant_names(document)))
    for step in graph.steps:
        if step.padding is not None:
            new_nodes, inits = _pad_node(step)
        elif step.quantized is not None:
            new_nodes, inits = _quantized_nodes(step, names, initializers)
        else:
            new_nodes, inits = _pool_nodes(step, graph.types)
        nodes.extend(new_nodes)
        initializers.update((init.name, init) for init in inits)
    proto = helper.make_graph(
        nodes,
        name,
        [_value_info(t, graph.types[t]) for t in graph.inputs],
        [_value_info(t, graph.types[t]) for t in graph.outputs],
        initializer=list(initializers.values()),
    )
    opsets = [helper.make_opsetid("", IMPORT_OPSET)]
    if any(node.domain == MS_DOMAIN for node in nodes):
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(proto, opset_imports=opsets, producer_name="ovpool")
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def ir_from_document(document: Mapping[str, object], name: str = "dml") -> dict[str, bytes]:
    """OpenVINO IR v11 (``{".xml", ".bin"}``) computing the document's operators: PADDING as Pad-12,
    pooling as the oldest AvgPool/MaxPool version that says it. OpenVINO has no MaxUnpool, so
    MAX_UNPOOLING is refused; MaxPool indices are i64 (i32 for UINT32 descs), the same bits."""
    graph = read_graph(document)
    ir = IRGraph(name)
    tensors = {}
    for tensor in graph.inputs:
        dtype, sizes = graph.types[tensor]
        if sizes is None:
            raise ModelError(f"tensor '{tensor}': its Sizes are unknown (no 'tensors' entry); an IR Parameter needs them")
        tensors[tensor] = ir.parameter(tensor, sizes, dtype)
    for step in graph.steps:
        op = step.op
        if step.padding is not None:
            begin, end, value = step.padding
            tensors[op.outputs[0]] = ir.pad(tensors[op.inputs[0]], begin, end, value, name=op.name)
            continue
        assert step.spec is not None  # a step is a padding or a pool
        if step.quantized is not None:
            raise UnsupportedError(
                f"operator '{op.name}': {op.row.op_type} has no OpenVINO IR form in ovpool; convert it to ONNX "
                "(QLinearAveragePool or the QDQ pattern) and that to IR"
            )
        if step.spec.kind is PoolKind.UNPOOL:
            raise UnsupportedError(f"operator '{op.name}': OpenVINO IR has no MaxUnpool layer; convert to ONNX instead")
        tensors.update(zip(op.outputs, ir.pool(step.spec, tensors[op.inputs[0]])))
    for tensor in graph.outputs:
        ir.result(tensors[tensor], tensor)
    return ir.render()


def dml_to_onnx(src: Path, out_suffix: str, **_options: object) -> dict[str, bytes]:
    """Route ("dml", "onnx")."""
    return {".onnx": model_from_document(read_document(src), Path(src).stem).SerializeToString()}


def dml_to_ir(src: Path, out_suffix: str, **_options: object) -> dict[str, bytes]:
    """Route ("dml", "ir")."""
    return ir_from_document(read_document(src), Path(src).stem)


def _logical_tensors(tensors: Mapping[str, object]) -> dict[str, tuple[str, tuple[int, ...]]]:
    logical = {}
    for name, value in tensors.items():
        where = f"tensors['{name}']"
        if not isinstance(value, dict) or not isinstance(value.get("Sizes"), list):
            raise ModelError(f"{where}: expected an object with DataType and Sizes")
        sizes = value["Sizes"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in sizes):
            raise ModelError(f"{where}: Sizes must be integers >= 1, got {shown(sizes)}")
        logical[name] = (dml_adapter.numpy_type(value.get("DataType"), where), tuple(sizes))
    return logical


def _writers(operators: list[Operator]) -> dict[str, tuple[int, str]]:
    """``{tensor: (position, operator name)}`` of the one operator that writes each tensor."""
    writer: dict[str, tuple[int, str]] = {}
    for position, op in enumerate(operators):
        for tensor in op.outputs:
            if tensor in writer:
                raise ModelError(
                    f"operator '{op.name}': writes tensor '{tensor}', already written by operator '{writer[tensor][1]}'"
                )
            writer[tensor] = (position, op.name)
    return writer


# A tensors entry may name an index tensor by the signed type of its source graph (same bits).
_SAME_BITS = {("uint64", "int64"), ("uint32", "int32")}


def _check_entry(
    op: Operator,
    tensor: str,
    desc_type: str,
    desc_sizes: tuple[int, ...],
    unit: bool,
    logical: Mapping[str, tuple[str, tuple[int, ...]]],
) -> None:
    """A ``tensors`` entry must be the desc's tensor: the same DataType (or the signed type of the
    same bits for indices) and the desc's Sizes, or for a unit-axis operator the Sizes the desc
    views with a unit axis (1x3x8 for a 1x3x1x8 desc)."""
    entry = logical.get(tensor)
    if entry is None:
        return
    if entry[0] != desc_type and (desc_type, entry[0]) not in _SAME_BITS:
        raise ModelError(
            f"operator '{op.name}': tensor '{tensor}' is {dtypes.dml_type(desc_type)} in its desc "
            f"but {dtypes.dml_type(entry[0])} in 'tensors'"
        )
    viewed = _viewed(op, entry[1], unit)
    if tuple(viewed) != tuple(desc_sizes):
        raise ModelError(
            f"operator '{op.name}': tensor '{tensor}' has Sizes {list(entry[1])} in 'tensors' but {list(desc_sizes)} in its desc"
        )


def _unit_axis(op: Operator, logical: Mapping[str, tuple[str, tuple[int, ...]]]) -> bool:
    """Whether the operator's descs are the unit-axis form of 1-D tensors: its input is a
    ``tensors`` entry of one rank less whose elements the 4-D desc views unchanged."""
    entry = logical.get(op.inputs[0])
    if entry is None:
        return False
    sizes = nchw_shape(entry[1]) if op.channels_last and len(entry[1]) > 1 else entry[1]
    if sizes == op.input_sizes:
        return False
    if shape.unit_axis_shape(sizes) == op.input_sizes:
        return True
    raise ModelError(
        f"operator '{op.name}': InputTensor Sizes {list(op.input_sizes)} do not view tensor "
        f"'{op.inputs[0]}' of Sizes {list(sizes)}"
    )


def _viewed(op: Operator, sizes: tuple[int, ...], unit: bool) -> tuple[int, ...]:
    """A tensors entry's Sizes as the operator's desc views them: channels-last ones channels first
    (1x5x6x3 as 1x3x5x6), a 1-D pool's with its unit axis (1x3x8 as 1x3x1x8)."""
    if op.channels_last and len(sizes) > 1:
        sizes = nchw_shape(sizes)
    return shape.unit_axis_shape(sizes) if unit else sizes


def _default_sizes(op: Operator, desc_sizes: tuple[int, ...], unit: bool) -> tuple[int, ...] | None:
    """A tensor's Sizes when the document has no ``tensors`` entry for it: the desc's, channels
    last again for a channels-last view; unknown for a unit-axis view (its rank is ambiguous)."""
    if unit:
        return None
    return nhwc_shape(desc_sizes) if op.channels_last else desc_sizes


def _constant_names(document: Mapping[str, object]) -> list[str]:
    constants = document.get("constants")
    return [str(name) for name in constants] if isinstance(constants, dict) else []


def _quantized_nodes(
    step: Step, names: FreshNames, emitted: Mapping[str, TensorProto]
) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
    """A quantized pool as com.microsoft QLinearAveragePool (per-tensor scales, no dilations, one
    data type) or else as DequantizeLinear -> AveragePool -> QuantizeLinear. The scales and zero
    points become initializers named as the document's constants (a null zero point: a fresh
    ``<operator>/input_zero_point`` holding 0)."""
    op, pool, spec = step.op, step.quantized, step.spec
    assert pool is not None and spec is not None  # a quantized step
    present = [m for m in dml_adapter.QUANTIZED_INPUTS if op.desc.get(m) is not None]
    tensor_of = dict(zip(present, op.inputs))
    qlinear = (
        pool.input.per_tensor
        and pool.output.per_tensor
        and pool.input.dtype == pool.output.dtype
        and spec.dilations == (1,) * len(spec.kernel)
    )
    if op.channels_last and not qlinear:
        raise UnsupportedError(
            f"operator '{op.name}': a channels-last view has an ONNX form only as QLinearAveragePool "
            "channels_last=1, which takes per-tensor scales of one data type and no dilations"
        )
    inits: list[TensorProto] = []
    quantization_inputs = []
    for side, quantization in (("Input", pool.input), ("Output", pool.output)):
        scale = np.asarray(quantization.scale, dtype=np.float32)
        zero = np.asarray(quantization.zero_point, dtype=dtypes.np_dtype(quantization.dtype))
        if qlinear:
            scale, zero = scale.reshape(()), zero.reshape(())
        for member, value in ((f"{side}ScaleTensor", scale), (f"{side}ZeroPointTensor", zero)):
            wanted = tensor_of.get(member) or names.fresh(f"{op.name}/{side.lower()}_zero_point")
            init = numpy_helper.from_array(value, wanted)
            if wanted in emitted and emitted[wanted] != init:
                init = numpy_helper.from_array(value, names.fresh(wanted))
            inits.append(init)
            quantization_inputs.append(init.name)
    x, y = op.inputs[0], op.outputs[0]
    if qlinear:
        base = onnx_adapter.node_from_spec(spec.with_(dtype=None), QLINEAR_AVERAGE_SINCE, [x], [y], "AveragePool")
        node = helper.make_node("QLinearAveragePool", [x, *quantization_inputs], [y], name=op.name, domain=MS_DOMAIN)
        node.attribute.extend(base.attribute)
        if op.channels_last:
            node.attribute.append(helper.make_attribute("channels_last", 1))
        return [node], inits
    dequantized, pooled = names.fresh(f"{op.name}/dequantized"), names.fresh(f"{op.name}/pooled")
    return [
        _qdq_node(
            "DequantizeLinear", [x, *quantization_inputs[:2]], dequantized, names.fresh(f"{op.name}/dequantize"), pool.input
        ),
        onnx_adapter.node_from_spec(spec.with_(dtype="float32"), IMPORT_OPSET, [dequantized], [pooled]),
        _qdq_node("QuantizeLinear", [pooled, *quantization_inputs[2:]], y, names.fresh(f"{op.name}/quantize"), pool.output),
    ], inits


def _qdq_node(op_type: str, inputs: list[str], output: str, name: str, quantization: Quantization) -> onnx.NodeProto:
    """A DequantizeLinear / QuantizeLinear node, per channel along axis 1 unless per tensor."""
    attrs: dict[str, Any] = {} if quantization.per_tensor else {"axis": 1}
    return helper.make_node(op_type, inputs, [output], name=name, **attrs)


def _padding(op: Operator, unit: bool) -> tuple[tuple[int, ...], tuple[int, ...], float]:
    begin, end, value = dml_adapter.padding_of(op)
    if unit:
        if begin[2] or end[2]:
            raise ModelError(f"operator '{op.name}': pads the unit axis of a 1-D tensor")
        begin, end = begin[:2] + begin[3:], end[:2] + end[3:]
    return begin, end, value


def _pad_node(step: Step) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
    op = step.op
    assert step.padding is not None  # a padding step
    begin, end, value = step.padding
    pads = numpy_helper.from_array(np.array(begin + end, dtype=np.int64), f"{op.name}/pads")
    inits = [pads]
    inputs = [op.inputs[0], pads.name]
    if value != 0.0:
        constant = numpy_helper.from_array(np.array(value, dtype=dtypes.np_dtype(op.dtype)), f"{op.name}/value")
        inits.append(constant)
        inputs.append(constant.name)
    return [helper.make_node("Pad", inputs, [op.outputs[0]], name=op.name, mode="constant")], inits


def _pool_nodes(step: Step, types: Mapping[str, tuple[str, object]]) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
    op, spec = step.op, step.spec
    assert spec is not None  # a pooling step
    nodes: list[onnx.NodeProto] = []
    inputs, outputs = list(op.inputs), list(op.outputs)
    if spec.kind is PoolKind.UNPOOL and types[inputs[1]][0] != "int64":
        cast = f"{op.name}/indices_int64"
        nodes.append(helper.make_node("Cast", [inputs[1]], [cast], name=cast, to=TensorProto.INT64))
        inputs[1] = cast
    cast_after = None
    if spec.indices is not None:
        target = types[outputs[1]][0]
        spec = spec.with_(indices=Indices())
        if target != "int64":
            cast_after = (f"{op.name}/indices_int64", outputs[1], target)
            outputs[1] = cast_after[0]
    nodes.append(onnx_adapter.node_from_spec(spec, IMPORT_OPSET, inputs, outputs))
    if cast_after:
        nodes.append(
            helper.make_node(
                "Cast", [cast_after[0]], [cast_after[1]], name=f"{op.name}/indices", to=dtypes.to_onnx(cast_after[2])
            )
        )
    return nodes, []


def _value_info(name: str, info: tuple[str, tuple[int, ...] | None]) -> onnx.ValueInfoProto:
    dtype, sizes = info
    return helper.make_tensor_value_info(name, dtypes.to_onnx(dtype), list(sizes) if sizes is not None else None)

"""ONNX -> OpenVINO: the whole model through OpenVINO's ONNX frontend, pooling through ovpool.

Public functions:

* ``onnx_to_ov_model(model: str | PathLike | onnx.ModelProto) -> openvino.Model`` converts in
  memory (``ovpool run``/``bench`` use it). Every AveragePool, MaxPool, MaxUnpool,
  GlobalAveragePool and GlobalMaxPool node is lowered by ``ovpool.ov.lowering`` (exact ONNX semantics,
  see docs/semantics.md); every other operator is OpenVINO's. Input and output tensor names are the
  ONNX ones.
* ``onnx_to_ir(src, out_suffix, inputs=None, compress_to_fp16=False) -> {".xml": bytes, ".bin": bytes}``
  is the ``("onnx", "ir")`` route of ``ovpool.convert``: the IR files, for ``ovpool convert
  model.onnx``. Weights stay float32 unless ``compress_to_fp16`` (then they are stored as f16
  constants, each followed by a Convert to f32, as ``ovc --compress_to_fp16`` writes them).
  The files are saved by OpenVINO when written (``ovpool.files.Unwritten``: to temporary names
  beside the outputs, then renamed into place) or read: a failure there (a full disk or a file
  size limit) is an ``OutputError`` (``ovpool.convert`` names the output in it).

Before OpenVINO's frontend sees the model, ``ovpool.ov.translate`` rewrites the nodes it
converts otherwise than ONNX (Softmax-11 axes, Resize antialias and other coordinate cases,
Constant-12 attributes, RoiAlign max, integer Div) into nodes it converts exactly, or refuses the
model naming the node (``allow_inexact``: a warning instead, and OpenVINO's conversion).

``target_openvino`` (``"2023.3"``, both functions) leaves only layers that OpenVINO release
reads (``ovpool.ov.backport``).

``inputs`` sets input shapes before conversion, as ``ovc --input`` does: ovc's text
(``"x[1,3,640,640]"``) or a mapping (``{"x": [1, 3, 640, 640]}``), see ``ovpool.inputs``. The
shapes are set on the frontend's input places, so the pooling lowering and the shape check below
see them (NPU wants static shapes; a SAME pool with indices on static dims converts). A name the
model's inputs lack, or dims of another rank than the input's, is a ``ModelError``.

The model is read once into an ``ovpool.onnx.facts.ModelFacts`` (``ovpool.convert`` reads it and
hands the same facts to ``--verify``), and every stage asks it: ``onnx_to_ov_model`` ->
``_convert_and_warn`` -> ``_convert_through_frontend``, which runs ``_fix_frontend_defects``
(types inferred once, ``--input`` pinned), ``_rewrite_quantization`` (the same tensor kinds) and
``_run_frontend`` (``_set_input_shapes``, then the pools' shapes checked), then the CPU deviation
warnings (the same types); ``refuse_unknown_rank`` and the backport last.

A file is read by ``ovpool.onnx.model.load`` first (a non-ONNX or truncated file, or external data that
is missing or points outside the model's folder, is an ``InputFileError`` before OpenVINO opens
anything); OpenVINO then reads the file itself, external data included, so models over 2 GB
convert. An operator neither OpenVINO nor ovpool converts is an ``UnsupportedError`` naming it
(``FooBar-13``); when OpenVINO fails on an operator it has, the error carries OpenVINO's own
reason (``Loop-13 (node 'loop'): The provided loop body graph canonical inputs size (41), ...``). Before a model is returned, every pooling node whose input dims are static is
checked against the shape engine: the OpenVINO output shape must be ``shape.output_shape`` of the
node's spec (MaxUnpool: ``shape.unpool_output_spatial``), else ``ModelError`` names the node.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnx import ModelProto, NodeProto, helper

from ovpool import dtypes, shape
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError, openvino_reason
from ovpool.files import OutputError, Unwritten
from ovpool.inputs import InputShape, input_shapes
from ovpool.ir import releases
from ovpool.names import FreshNames
from ovpool.onnx.facts import ModelFacts, input_index
from ovpool.onnx.versions import POOL_OPS
from ovpool.ov import cpu_deviations, translate
from ovpool.ov.backport import backport
from ovpool.ov.extension import PoolExtensions
from ovpool.ov.lowering import Lowered
from ovpool.spec import PoolKind
from ovpool.tensors import TensorDecl, onnx_inputs

if TYPE_CHECKING:
    import openvino

    from ovpool.ov.quantized import QuantExtensions

_PROTOBUF_LIMIT = 2**31 - 1
_NO_RULE = re.compile(r"No conversion rule found for operations?: ([^\n]+)")
# OpenVINO's report of operators it has but could not convert: "-- Loop-13 with a message:" and the
# lines up to the next blank line; the node is in "While validating ONNX node '<Node(Loop): name>'".
_FAILED_OP = re.compile(r"^-- (\S+) with a message:\n(.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
_FAILED_NODE = re.compile(r"While validating ONNX node '<Node\([^)]*\): ([^>]*)>'")

Inputs = str | Sequence[str] | Mapping[str, Sequence[int | str]] | None


def onnx_to_ir(
    src: Path | ModelFacts,
    out_suffix: str = ".xml",
    inputs: Inputs = None,
    compress_to_fp16: bool = False,
    exact_quantization: bool = False,
    allow_inexact: bool = False,
    target_openvino: str | None = None,
) -> Unwritten:
    """The ``("onnx", "ir")`` route: ``{".xml": ..., ".bin": ...}`` of the converted model, with
    ``inputs`` shapes set (``src`` may be the conversion's ``ModelFacts``, which hold them) and, with ``compress_to_fp16``, f16 weights (half the .bin); with
    ``exact_quantization``, quantization in exact forms; with ``allow_inexact``, the nodes
    ``frontend_fixes`` refuses written as OpenVINO converts them (``onnx_to_ov_model``). With
    ``target_openvino`` (``"2023.3"``), every layer is one that release reads: newer layers in
    their exact older forms (``ovpool.ov.backport``; MaxPool-14 -> MaxPool-8 on 2023.3), or an
    ``UnsupportedError`` naming the layer that has none."""
    return ir_files(onnx_to_ov_model(src, inputs, exact_quantization, allow_inexact, target_openvino), compress_to_fp16)


def onnx_to_ov_model(
    model: str | os.PathLike | ModelProto | ModelFacts,
    inputs: Inputs = None,
    exact_quantization: bool = False,
    allow_inexact: bool = False,
    target_openvino: str | None = None,
) -> openvino.Model:
    """An ``openvino.Model`` of the ONNX model (a path, a ModelProto, or the ``ModelFacts`` of a
    conversion, which hold its input shapes) with exact pooling;
    ``inputs`` sets input shapes first (``"x[1,3,640,640]"``, see the module docstring);
    ``exact_quantization`` writes QuantizeLinear, DequantizeLinear and quantized pools in the exact
    forms of ``ovpool.ov.quantized`` instead of FakeQuantize and OpenVINO's low-precision pipeline.
    A node OpenVINO's frontend converts wrong is lowered by ``ovpool.ov.translate`` or refused
    (``UnsupportedError`` naming it); ``allow_inexact`` leaves a refused node to OpenVINO with a warning.
    ``target_openvino`` (``"2023.3"``) leaves only layers that release reads: newer layers in
    their exact older forms (``ovpool.ov.backport``; MaxPool-14 -> MaxPool-8 on 2023.3), or an
    ``UnsupportedError`` naming the layer that has none.

    The stages, each given the one ``ModelFacts`` (read once, types inferred once):
    ``_convert_and_warn`` (``_fix_frontend_defects``, ``_rewrite_quantization``,
    ``_run_frontend``, then the CPU deviation warnings), ``refuse_unknown_rank``, ``backport``."""
    release = releases.parse(target_openvino) if target_openvino is not None else None
    facts = model if isinstance(model, ModelFacts) else ModelFacts.read(model, input_shapes(inputs))
    converted = _convert_and_warn(facts, exact_quantization, allow_inexact)
    refuse_unknown_rank(converted, facts.label)
    if release is not None:
        try:
            backport(converted, release)
        except OvpoolError as exc:
            raise exc.located(facts.label) from None
        stable_names(converted)  # the Slices and Constants of the older forms
    return converted


def _convert_and_warn(facts: ModelFacts, exact_quantization: bool, allow_inexact: bool) -> openvino.Model:
    """``onnx_to_ov_model`` before ``target_openvino``: the model through OpenVINO's frontend
    (``_convert_through_frontend``), then a ``CpuDeviationWarning`` for each node OpenVINO CPU may
    compute otherwise on some data (``cpu_deviations.warn_deviations``)."""
    converted = _convert_through_frontend(facts, exact_quantization, allow_inexact)
    cpu_deviations.warn_deviations(facts.proto, facts.label, facts)
    return converted


def _convert_through_frontend(facts: ModelFacts, exact_quantization: bool, allow_inexact: bool) -> openvino.Model:
    """Frontend fixes (``_fix_frontend_defects``), quantization forms (``_rewrite_quantization``),
    then OpenVINO's frontend (``_run_frontend``): on the file itself when neither rewrote the
    model (OpenVINO reads its weights and external data), else on the rewritten model's bytes (or,
    beyond protobuf's 2 GiB, a temporary file with its weights as external data)."""
    fixed = _fix_frontend_defects(facts, allow_inexact)
    rewritten, quant = _rewrite_quantization(fixed if fixed is not None else facts.proto, facts, exact_quantization)
    rewritten = rewritten if rewritten is not None else fixed
    if rewritten is None and facts.path is not None:
        return _run_frontend(facts, facts.proto, str(facts.path))
    whole = rewritten if rewritten is not None else facts.proto
    serialized = _serialize(whole)
    if serialized is None:
        with tempfile.TemporaryDirectory(prefix="ovpool-") as folder:
            path = Path(folder) / "model.onnx"
            import onnx

            onnx.save_model(whole, str(path), save_as_external_data=True, location="model.onnx.data")
            return _run_frontend(facts, whole, str(path), quant, fixed is not None)
    return _run_frontend(facts, whole, io.BytesIO(serialized), quant, fixed is not None)


def _fix_frontend_defects(facts: ModelFacts, allow_inexact: bool) -> ModelProto | None:
    """The model with ``ovpool.ov.translate``'s lowerings in place (None: it needs none); a model read
    from a file is rewritten whole (``ModelFacts.with_data``: its weights and external data read)."""
    try:
        replaced = translate.rewrite(facts.proto, facts.label, facts.shapes, allow_inexact, facts.weights, facts)
    except OvpoolError as exc:
        raise exc.located(facts.label) from None
    if not replaced:
        return None
    return translate.apply(facts.with_data, replaced)


def _rewrite_quantization(proto: ModelProto, facts: ModelFacts, exact: bool) -> tuple[ModelProto | None, QuantExtensions | None]:
    """The model as OpenVINO's frontend is to see it (None: as it is) and the extensions of its
    exact quantization. com.microsoft QOperator nodes and per-channel QLinearConv / QLinearMatMul
    nodes become DequantizeLinear -> op -> QuantizeLinear (``ovpool.onnx.qoperator.expands``); with
    ``exact``, quantization goes into ``ovpool.ov.quantized``'s private nodes (without, only what
    OpenVINO's own forms get wrong: 16-bit QuantizeLinear and DequantizeLinear, average pools to a
    finer output scale, and the weights of some ConvTranspose). ``proto`` is the model as read
    (``facts.proto``) or as the frontend fixes left it; a model read from a file is rewritten whole
    (``ModelFacts.with_data``: its external data read). The tensors' kinds are the facts' (one
    shape inference for the conversion) unless a QuantizeLinear or DequantizeLinear reads a tensor
    the model as read lacks (a QOperator expanded, a lowering that quantizes): then the model is
    inferred anew (``qdq.tensor_kinds``)."""
    if not exact and not any(_may_quantize(node) for node in proto.graph.node):
        return None, None  # no quantization: nothing of ovpool.onnx.qoperator (and its imports) needed
    from ovpool.onnx import qoperator

    has_qoperators = any(qoperator.expands(node) for node in proto.graph.node)
    has_quantization = any(node.op_type in ("QuantizeLinear", "DequantizeLinear") for node in proto.graph.node)
    if not (exact or has_qoperators or has_quantization):
        return None, None
    from ovpool.ov.quantized import QuantExtensions

    if facts.path is not None and any(i.data_location == 1 for i in proto.graph.initializer):
        proto = facts.with_data
    try:
        expanded = qoperator.expand_model(proto, every=exact)
        kinds = facts.tensor_kinds if expanded is proto and _known_kinds(facts, expanded) else None
        quant = QuantExtensions(expanded, exact, kinds)
    except OvpoolError as exc:
        raise exc.located(facts.label) from None
    if quant is not None and quant.changed:
        return quant.model, quant
    return (expanded if expanded is not proto else None), None


def _known_kinds(facts: ModelFacts, proto: ModelProto) -> bool:
    """Whether ``facts.tensor_kinds`` hold every tensor the quantization forms look up in
    ``proto``: the input and output of each QuantizeLinear and DequantizeLinear of the main graph.
    A frontend fix keeps every tensor name of the model as read, with its type and shape (its last
    node writes the replaced node's output), so those tensors' kinds are the facts'."""
    kinds = facts.tensor_kinds
    return all(
        name in kinds
        for node in proto.graph.node
        if node.op_type in _QUANTIZE_OPS and node.domain in ("", "ai.onnx")
        for name in [*node.input[:1], *node.output[:1]]
    )


def _may_quantize(node: NodeProto) -> bool:
    """Whether ``_rewrite_quantization`` may rewrite the node: a QuantizeLinear, DequantizeLinear or QLinear*
    node, or one of another domain (com.microsoft's QOperators). A model with none is left as it is."""
    return node.domain not in ("", "ai.onnx") or node.op_type.startswith("QLinear") or node.op_type in _QUANTIZE_OPS


_QUANTIZE_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})


def _serialize(model: ModelProto) -> bytes | None:
    """The model's bytes, or None beyond protobuf's limit of 2 GiB - 1 (its weights must then go to
    external data). Serialized once: ``ByteSize`` serializes too (12 MB: ~17 ms), and like
    ``SerializeToString`` raises ``EncodeError`` beyond the limit."""
    from google.protobuf.message import EncodeError

    try:
        serialized = model.SerializeToString()
    except EncodeError:
        return None
    return serialized if len(serialized) <= _PROTOBUF_LIMIT else None


def _run_frontend(
    facts: ModelFacts,
    proto: ModelProto,
    source: object,
    quant: QuantExtensions | None = None,
    fixes: bool = False,
) -> openvino.Model:
    """``proto`` (the model as read, or rewritten) through OpenVINO's ONNX frontend, read from
    ``source`` (its file, or its bytes), with ovpool's extensions (pooling, ``quant``'s, the
    frontend fixes' when ``fixes``: ``ovpool.ov.translate``'s registry) and the input shapes of ``facts`` set on its input places; the
    pools' output shapes checked against the shape engine, inputs and nodes named stably."""
    from openvino.frontend import FrontEndManager

    label = facts.label

    pools = PoolExtensions(proto)
    if quant is not None:
        # one list, in the order OpenVINO called the extensions: the first error is the cause (an
        # exact pool refused leaves a dynamic-rank output that a later pool then refuses too)
        quant.errors = pools.errors
    frontend = FrontEndManager().load_by_framework("onnx")
    for extension in translate.conversion_extensions(pools, quant, fixes):
        frontend.add_extension(extension)
    try:
        input_model = frontend.load(source)
    except Exception as exc:
        raise _conversion_error(label, exc) from None
    _set_input_shapes(input_model, proto, facts.shapes, label)
    try:
        converted = frontend.convert(input_model)
    except Exception as exc:  # OpenVINO's OpConversionFailure/GeneralFailure derive from Exception
        ours = frozenset(POOL_OPS) | (quant.reported_op_types if quant is not None else frozenset())
        if pools.errors and not _failed_elsewhere(exc, ours):
            raise pools.errors[0].located(label) from None
        # an operator OpenVINO converts failed first: ovpool's errors are its consequences (a pool
        # behind it sees a dynamic rank), OpenVINO's reason is the one to give
        raise _conversion_error(label, exc, ours if pools.errors else frozenset()) from None
    if pools.errors:
        raise pools.errors[0].located(label)
    try:
        check_shapes(pools.lowered)
    except ModelError as exc:
        raise exc.located(label) from None
    if proto.graph.name:
        converted.set_friendly_name(proto.graph.name)
    keep_input_names(converted, proto)
    stable_names(converted)
    return converted


def _set_input_shapes(input_model: Any, proto: ModelProto, shapes: Sequence[InputShape], label: str) -> None:
    """Set each given shape on its input's place (``input_index``: by name, or by position when
    unnamed); a name the model lacks, or dims of another rank than the input's, is a ``ModelError``."""
    from openvino import Dimension, PartialShape

    declared = onnx_inputs(proto)
    _check_openvino_inputs(declared)
    takes = "; ".join(d.shown() for d in declared)
    names = [d.name for d in declared]
    for given in shapes:
        index = input_index(names, given)
        if index is None and given.name is None:
            raise ModelError.in_file(label, f"input shape {given}: the model has {len(declared)} input(s) ({takes})")
        if index is None:
            raise ModelError.in_file(label, f"input shape {given}: the model has no input '{given.name}' (it takes {takes})")
        decl = declared[index]
        if given.dims is None:
            continue
        if decl.shape is not None and len(decl.shape) != len(given.dims):
            raise ModelError.in_file(
                label, f"input shape {given}: {len(given.dims)} dim(s) for input {decl.shown()}, of rank {len(decl.shape)}"
            )
        place = input_model.get_place_by_tensor_name(decl.name)
        dims = [Dimension(low, -1 if high is None else high) for low, high in given.dims]
        input_model.set_partial_shape(place, PartialShape(dims))


def _check_openvino_inputs(declared: Sequence[TensorDecl]) -> None:
    """Refuse an input OpenVINO's side of ovpool holds no form of (``onnx_inputs`` takes every one
    the numpy executor runs): a sequence or optional input, or a tensor of an element type outside
    ``dtypes.TABLE`` and ``dtypes.NARROW`` (string, FNUZ float8, 2-bit): ``input 'x': element type
    string has no OpenVINO form ovpool handles (ovpool run --device numpy runs it)``."""
    for decl in declared:
        if not decl.is_tensor:
            raise UnsupportedError(f"input {decl.shown()}: OpenVINO takes tensor inputs only (ovpool run --device numpy runs it)")
        if decl.dtype not in dtypes.NAMES and dtypes.narrow_row(decl.dtype) is None:
            raise UnsupportedError(
                f"input '{decl.name}': element type {decl.dtype} has no OpenVINO form ovpool handles (ovpool run --device numpy runs it)"
            )


def check_shapes(lowered: list[Lowered]) -> None:
    """Every lowered pool with static input dims has the output shape the shape engine gives."""
    for pool in lowered:
        pshape = pool.data.get_partial_shape()
        if not pshape.is_static:
            continue
        input_shape = tuple(d.get_length() for d in pshape)
        spec = pool.spec
        if spec.kind is PoolKind.UNPOOL and pool.shape_given:
            continue
        if spec.kind is PoolKind.UNPOOL:
            want = input_shape[:2] + shape.unpool_output_spatial(spec, input_shape[2:])
        else:
            want = shape.output_shape(spec, input_shape)
        for output in pool.outputs:
            got = output.get_partial_shape()
            if not got.is_static or tuple(d.get_length() for d in got) != tuple(want):
                raise ModelError(
                    f"node '{spec.name}': OpenVINO gives output shape {got} where the shape engine gives "
                    f"{list(want)} (input {list(input_shape)})"
                )


def keep_input_names(ov_model: openvino.Model, proto: ModelProto) -> None:
    """Give each Parameter its ONNX input's name. A node that passes its input through (inference
    Dropout, a one-input Max) leaves a Parameter wired straight to a Result, and the IR then names
    the Parameter after the output only (``y``): a feed by the input's name (``x``) fails. Such a
    Result gets a Convert to the same type in between (the identity), which carries the output's
    names; the Parameter keeps the input's. Parameters follow the graph's inputs in order (an
    input OpenVINO folded away is put back first, ``_restore_empty_inputs``); when the counts still
    differ nothing is renamed."""
    from openvino import opset1

    initializers = {t.name for t in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in initializers]
    _restore_empty_inputs(ov_model, proto, names)
    parameters = ov_model.get_parameters()
    if len(parameters) != len(names):
        return
    graph_outputs = {o.name for o in proto.graph.output}
    for result in ov_model.get_results():
        source = result.input_value(0)
        outputs = (set(result.output(0).get_names()) | set(source.get_names())) & graph_outputs
        if source.get_node().get_type_name() != "Parameter" or not outputs or outputs & set(names):
            continue  # not a pass-through, or the graph's output is its input itself
        identity = opset1.convert(source, source.get_element_type())
        identity.set_friendly_name(f"{source.get_node().get_friendly_name()}/identity")
        result.input(0).replace_source_output(identity.output(0))
        source.set_names(set(source.get_names()) - outputs)
        identity.output(0).set_names(outputs)
    for parameter, name in zip(parameters, names):
        parameter.set_friendly_name(name)
        parameter.output(0).add_names({name})


def _restore_empty_inputs(ov_model: openvino.Model, proto: ModelProto, names: Sequence[str]) -> None:
    """Put back the graph inputs of a static shape with a zero dim that OpenVINO's frontend folded
    into a Const: an input of zero elements has one value only, so the folded model is exact, but
    the IR lacked the input and a feed by its name failed. Each comes back as an unused Parameter
    of its type and shape ([0, 3] float32), in the graph's order of inputs."""
    from openvino import PartialShape, Type, opset1

    present = {name for p in ov_model.get_parameters() for name in [p.get_friendly_name(), *p.output(0).get_names()]}
    declared = {i.name: i for i in proto.graph.input}
    restored = []
    for name in names:
        tensor_type = declared[name].type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim]
        if name in present or 0 not in dims or -1 in dims or not tensor_type.HasField("shape"):
            continue
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        element = dtypes.ov_type(dtype.name) if dtype.name in dtypes.ML_DTYPES else Type(dtype)
        parameter = opset1.parameter(PartialShape(dims), element, name=name)
        parameter.output(0).set_names({name})
        restored.append(parameter)
    if not restored:
        return
    ov_model.add_parameters(restored)
    by_name = {p.get_friendly_name(): p for p in ov_model.get_parameters()}
    if all(name in by_name for name in names):
        ordered = [by_name[name] for name in names]
        for parameter in ordered:
            ov_model.remove_parameter(parameter)
        ov_model.add_parameters(ordered)


def stable_names(ov_model: openvino.Model) -> None:
    """Name the nodes nobody named after the model alone. OpenVINO names them from a counter of the
    whole process (``Pad_10`` here, ``Pad_38`` when another model was converted first), so one
    model gave different IRs in one process and another, or with ``--jobs``; they become
    ``Constant_1``, ``Constant_2``, ``Pad_3``... in the model's order, past the names it has."""
    ops = ov_model.get_ordered_ops()
    unnamed = [op for op in ops if op.get_friendly_name() == op.get_name()]
    names = FreshNames(op.get_friendly_name() for op in ops if op.get_friendly_name() != op.get_name())
    for number, op in enumerate(unnamed, 1):
        op.set_friendly_name(names.fresh(f"{op.get_type_name()}_{number}"))


def refuse_unknown_rank(converted: openvino.Model, label: str) -> None:
    """An ``UnsupportedError`` naming the first input of unknown rank (an ONNX input without a
    shape): OpenVINO's CPU plugin compiles no Parameter of dynamic rank, so the IR would not run;
    ``--input x[1,3,224,224]`` gives the shape (a rank of 4 with dynamic dims, ``x[?,3,?,?]``, compiles)."""
    for parameter in converted.get_parameters():
        if parameter.get_output_partial_shape(0).rank.is_dynamic:
            names = sorted(parameter.output(0).get_names()) or [parameter.get_friendly_name()]
            raise UnsupportedError.in_file(
                label,
                f"input '{names[0]}' has no shape (unknown rank), which OpenVINO CPU does not compile; "
                f"give it one: ovpool convert --input '{names[0]}[1,3,224,224]' (dims may be ?)",
            )


def ir_files(converted: openvino.Model, compress_to_fp16: bool = False) -> Unwritten:
    """``{".xml": ..., ".bin": ...}`` of an ``openvino.Model`` as ``ov.save_model`` writes it (f16
    weights with ``compress_to_fp16``), saved when written (``ovpool.files.Unwritten``:
    ``write_atomic`` has OpenVINO save it straight beside the outputs) or read (through a temporary
    folder). A failed save (a full disk, ``ulimit -f``: "iostream error") is an ``OutputError``."""

    def save(xml: Path) -> None:
        import openvino as ov

        try:
            ov.save_model(converted, str(xml), compress_to_fp16=compress_to_fp16)
        except (RuntimeError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else openvino_reason(exc)
            raise OutputError(f"cannot write: OpenVINO could not save the IR in {xml.parent} ({reason})") from None

    return Unwritten((".xml", ".bin"), save)


def _failed_elsewhere(exc: Exception, ours: frozenset[str]) -> bool:
    """OpenVINO's failure report names an operator that ovpool's extensions do not convert."""
    return any(op.rsplit("-", 1)[0] not in ours for op, _log in _FAILED_OP.findall(str(exc)))


def _conversion_error(label: str, exc: Exception, skip: frozenset[str] = frozenset()) -> OvpoolError:
    """OpenVINO's conversion failure as one error; the operators of ``skip`` (op types) are left
    out of its list of failed operators."""
    text = str(exc)
    missing = _NO_RULE.search(text)
    if missing:
        return UnsupportedError.in_file(label, f"no OpenVINO conversion rule for {missing.group(1).strip()}")
    if "Cannot recognize" in text or "Unable to read" in text:
        return InputFileError.in_file(label, "OpenVINO cannot read the model")
    failed = [_failed_op(op, log) for op, log in _FAILED_OP.findall(text) if op.rsplit("-", 1)[0] not in skip]
    reason = "; ".join(failed) if failed else openvino_reason(exc)
    return ModelError.in_file(label, f"OpenVINO could not convert the model: {reason}")


def _failed_op(op: str, log: str) -> str:
    """One operator of OpenVINO's failure report as ``Loop-13 (node 'name'): <OpenVINO's reason>``."""
    node = _FAILED_NODE.search(log)
    reason = openvino_reason(Exception(log)) if log.strip() else "no reason given"
    return f"{op}{f' (node {node.group(1)!r})' if node else ''}: {reason}"

"""The structural check every ONNX model passes before OpenVINO or an executor sees it.

``check_model`` refuses, with one line naming the file, the node and what is wrong (a
``ModelError``, exit 1):

* opset imports: none at all, a version below 1, or a version newer than the installed onnx
  knows for a domain it has schemas for; an IR version below 1 or newer than onnx knows;
* nodes: an operator whose domain is not imported, or has no schema at the imported version
  (domains onnx has no schemas for are taken only when OpenVINO's frontend converts them:
  ``com.microsoft``, ``org.openvinotoolkit``, ``ai.onnx.contrib``); inputs and outputs outside the
  schema's counts, an omitted ("") input the schema requires; a required attribute missing, a
  known attribute of the wrong type (``kernel_shape`` as floats), an attribute given twice;
* names: an input that is not a graph input, an initializer, an output of some node or (in a
  Loop/If/Scan body) a name of an enclosing graph; a tensor written twice; a graph output nothing
  defines; nodes that feed each other in a cycle (nodes need not be listed in order);
* types: a tensor element type onnx does not know (999), a graph input without one;
  a declared dim below -1 (-1 and 0 are how some exporters write a dynamic dim);
* initializers: negative dims, or data whose size is not what the dims need (raw bytes or typed
  values); external data is checked by ``ovpool.onnx.model.check_external_data``;
* quantization (``ovpool.onnx.model.check_quantization``, run by ``load`` after this check, above
  the readers of quantization nodes): the constant scales and zero points of QuantizeLinear,
  DequantizeLinear and the com.microsoft QOperator nodes (a zero or infinite scale, a zero point
  outside its type, counts that differ: ``ovpool.onnx.qdq.check_quantization_nodes``,
  ``ovpool.onnx.qoperator``).

Model-local functions are checked as graphs of their own (their inputs and their opset imports);
a node calling one is checked against the function's input and output counts. Attributes a schema
does not declare are left alone (OpenVINO ignores them; ovpool's pooling adapter refuses them on
pooling nodes).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
import onnx.defs
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto

from ovpool.attributes import attribute_value
from ovpool.errors import ModelError, SpecError
from ovpool.onnx.protobuf_wire import raw_data_sizes
from ovpool.shape import dim_problem

# Domains onnx has no schemas for, whose operators OpenVINO's ONNX frontend converts.
FRONTEND_DOMAINS = frozenset({"com.microsoft", "org.openvinotoolkit", "ai.onnx.contrib"})
# Every element type onnx knows (999 is not one; UNDEFINED is none).
DATA_TYPES = frozenset(TensorProto.DataType.values()) - {TensorProto.UNDEFINED}
# Element types whose typed values sit in one field, one value per element (complex: two).
_TYPED_FIELDS = {
    TensorProto.FLOAT: ("float_data", 1),
    TensorProto.COMPLEX64: ("float_data", 2),
    TensorProto.DOUBLE: ("double_data", 1),
    TensorProto.COMPLEX128: ("double_data", 2),
    TensorProto.INT64: ("int64_data", 1),
    TensorProto.UINT32: ("uint64_data", 1),
    TensorProto.UINT64: ("uint64_data", 1),
    TensorProto.STRING: ("string_data", 1),
    **{t: ("int32_data", 1) for t in (6, 5, 3, 4, 2, 9, 10, 16)},  # int32/16/8, uint16/8, bool, float16, bfloat16
}
_SUB_BYTE_BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}  # UINT4, INT4, FLOAT4E2M1, UINT2, INT2
_UNSIZED = frozenset({TensorProto.STRING, 27, 28})  # 6-bit floats: packing not fixed by the spec text
_ATTRIBUTE_FIELDS = {
    AttributeProto.FLOAT: "f",
    AttributeProto.INT: "i",
    AttributeProto.STRING: "s",
    AttributeProto.TENSOR: "t",
    AttributeProto.GRAPH: "g",
    AttributeProto.SPARSE_TENSOR: "sparse_tensor",
    AttributeProto.TYPE_PROTO: "tp",
    AttributeProto.FLOATS: "floats",
    AttributeProto.INTS: "ints",
    AttributeProto.STRINGS: "strings",
    AttributeProto.TENSORS: "tensors",
    AttributeProto.GRAPHS: "graphs",
    AttributeProto.SPARSE_TENSORS: "sparse_tensors",
    AttributeProto.TYPE_PROTOS: "type_protos",
}


def check_model(proto: ModelProto, label: str, data: bytes | None = None, sizes: list[int | None] | None = None) -> None:
    """Raise ``ModelError`` naming ``label`` (the file) for the first structural problem of
    ``proto`` (see the module docstring); return quietly for a sound model. ``data``, the bytes
    ``proto`` was parsed from, gives the initializers' raw data sizes without copying the data out
    (``ovpool.onnx.protobuf_wire.raw_data_sizes``); or ``sizes`` gives them, one for each main-graph
    initializer in order, None where one holds no raw data (``ovpool.onnx.protobuf_wire.without_weights``'
    of a model whose weights were left out)."""
    try:
        _Checker(proto, data, sizes).model()
    except _Problem as exc:
        raise ModelError.in_file(label, str(exc)) from None
    except ModelError as exc:
        raise exc.located(label) from None


def _all_graphs(graph: GraphProto) -> Iterable[GraphProto]:
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for body in _graphs(attribute):
                yield from _all_graphs(body)


def attribute_type(attribute: AttributeProto) -> int:
    """An attribute's type: its ``type`` field, or for old models that leave it unset the field
    that holds a value (``ints`` set: INTS); UNDEFINED when none does."""
    if attribute.type != AttributeProto.UNDEFINED:
        return attribute.type
    for kind, name in _ATTRIBUTE_FIELDS.items():
        value = getattr(attribute, name)
        singular = name in ("f", "i", "s", "t", "g", "sparse_tensor", "tp")
        if attribute.HasField(name) if singular else len(value):
            return kind
    return AttributeProto.UNDEFINED


def fill_attribute_types(proto: ModelProto) -> None:
    """Set the ``type`` of every attribute that leaves it unset (old exporters did) to the field
    holding its value (``attribute_type``), so readers that go by ``type`` (onnx's
    ``get_attribute_value``) read it: ``dilations`` with ``ints: [1, 1]`` and no type is INTS."""

    def nodes(graph_nodes: Iterable[NodeProto]) -> None:
        for node in graph_nodes:
            for attribute in node.attribute:
                if attribute.type == AttributeProto.UNDEFINED:
                    attribute.type = attribute_type(attribute)
                for graph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                    nodes(graph.node)

    nodes(proto.graph.node)
    for function in proto.functions:
        nodes(function.node)


def check_attribute_types(node: NodeProto, schema: onnx.defs.OpSchema, where: str) -> None:
    """Every attribute the schema declares has its type, none is given twice, none required is
    missing (a ``SpecError`` said of ``where``): ``kernel_shape`` stored as floats ``[2.5, 2.0]``
    is refused, not read as ``[2, 2]``."""
    seen: set[str] = set()
    types, required = _declared_attributes(schema)
    for attribute in node.attribute:
        if attribute.name in seen:
            raise SpecError(node.name, attribute.name, _value(attribute), "is given twice", where)
        seen.add(attribute.name)
        want = types.get(attribute.name)
        if want is None or attribute.ref_attr_name:
            continue
        got = attribute_type(attribute)
        if got != want:
            message = f"is {_type_name(got)}; {node.op_type}-{schema.since_version} takes {_type_name(want)}"
            raise SpecError(node.name, attribute.name, _value(attribute), message, where)
    for name in required:
        if name not in seen:
            missing: list[object] | None = [] if _type_name(types[name]).endswith("S") else None
            raise SpecError(node.name, name, missing, "is required", where)


_DECLARED: dict[tuple[str, str, int], tuple[dict[str, int], tuple[str, ...]]] = {}


def _declared_attributes(schema: onnx.defs.OpSchema) -> tuple[dict[str, int], tuple[str, ...]]:
    """A schema's attributes as ({name: AttributeProto type}, the required names in schema order),
    worked out once per schema (``schema.attributes`` builds a new dict at every read)."""
    key = (schema.domain, schema.name, schema.since_version)
    found = _DECLARED.get(key)
    if found is None:
        attributes = schema.attributes
        found = _DECLARED[key] = (
            {name: _attr_type(declared) for name, declared in attributes.items()},
            tuple(name for name, declared in attributes.items() if declared.required),
        )
    return found


@functools.cache
def _schema(op_type: str, version: int, domain: str) -> onnx.defs.OpSchema | None:
    """``onnx.defs.get_schema`` (None: no such operator at that version), looked up once."""
    try:
        return onnx.defs.get_schema(op_type, version, domain)
    except onnx.defs.SchemaError:
        return None


def _value(attribute: AttributeProto) -> object:
    """An attribute's value for messages (None if it holds none onnx can read)."""
    try:
        return attribute_value(attribute, text=False)
    except Exception:  # onnx raises ValueError or its own errors for an attribute without a value
        return None


class _Problem(Exception):
    """The first problem found, said without the file."""


@dataclass(frozen=True)
class _Scope:
    """What a graph's nodes may read: names of enclosing graphs, and the opsets and functions in force."""

    outer: frozenset[str]
    opsets: Mapping[str, int]
    functions: Mapping[tuple[str, str], FunctionProto]


class _Checker:
    def __init__(self, proto: ModelProto, data: bytes | None = None, sizes: list[int | None] | None = None) -> None:
        self.proto = proto
        self.versions = onnx.defs.C.schema_version_map()  # domain -> (oldest, newest) opset
        self.raw_sizes = sizes if sizes is not None else _raw_sizes(proto, data) if data is not None else None
        self.free: dict[int, tuple[NodeProto, set[str]]] = {}  # _free_names' answers

    def model(self) -> None:
        proto = self.proto
        _check_text(proto, "model")
        if proto.ir_version < 1 or proto.ir_version > onnx.IR_VERSION:
            raise _Problem(f"IR version {proto.ir_version} is not one onnx {onnx.__version__} reads (1 to {onnx.IR_VERSION})")
        opsets = self._opsets(proto.opset_import, "the model")
        functions = {(_domain(f.domain), f.name): f for f in proto.functions}
        scope = _Scope(frozenset(), opsets, functions)
        for function in proto.functions:
            own = self._opsets(function.opset_import, f"function '{function.name}'") if function.opset_import else opsets
            self._nodes(
                function.node,
                set(function.input),
                function.output,
                _Scope(frozenset(), own, functions),
                f"function '{function.name}'",
            )
        self.graph(proto.graph, scope, top=True)

    def _opsets(self, imports: Iterable[onnx.OperatorSetIdProto], where: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for entry in imports:
            domain = _domain(entry.domain)
            if domain in found:
                raise _Problem(f"{where} imports domain '{domain or 'ai.onnx'}' twice")
            newest = self.versions.get(domain, (1, None))[1]
            if entry.version < 1 or (newest is not None and entry.version > newest):
                known = f"1 to {newest}" if newest is not None else "1 or more"
                raise _Problem(
                    f"{where} imports opset {entry.version} of '{domain or 'ai.onnx'}'; onnx {onnx.__version__} knows {known}"
                )
            found[domain] = entry.version
        if not found:
            raise _Problem(f"{where} imports no opset (opset_import is empty)")
        return found

    def graph(self, graph: GraphProto, scope: _Scope, top: bool = False) -> None:
        where = f"graph '{graph.name}'" if not top else "the graph"
        defined: set[str] = set()
        for value in graph.input:
            self._value_type(value, f"{where}: input '{value.name}'", required=top)
            if value.name in defined:
                raise _Problem(f"{where}: input '{value.name}' is declared twice")
            defined.add(value.name)
        for value in list(graph.output) + list(graph.value_info):
            self._value_type(value, f"{where}: tensor '{value.name}'", required=False)
        sizes = self.raw_sizes if top else None
        for index, tensor in enumerate(graph.initializer):
            _check_initializer(tensor, f"{where}: initializer '{tensor.name}'", sizes[index] if sizes is not None else None)
            defined.add(tensor.name)
        for sparse in graph.sparse_initializer:
            defined.add(sparse.values.name)
        self._nodes(graph.node, defined, [o.name for o in graph.output], scope, where)

    def _nodes(self, nodes: Sequence[NodeProto], defined: set[str], outputs: Iterable[str], scope: _Scope, where: str) -> None:
        writer: dict[str, int] = {}
        for index, node in enumerate(nodes):
            self._node(node, scope)
            for name in node.output:
                if not name:
                    continue
                if name in defined or name in writer:
                    other = f"node {_label(nodes[writer[name]])}" if name in writer else "a graph input or initializer"
                    raise _Problem(f"node {_label(node)}: writes '{name}', which {other} already defines")
                writer[name] = index
        visible = defined | set(writer) | scope.outer
        waiting = [0] * len(nodes)
        readers: dict[int, list[int]] = {}
        for index, node in enumerate(nodes):
            needs = set(node.input) | _free_names(node, self.free)
            for name in needs:
                if not name:
                    continue
                if name not in visible:
                    raise _Problem(
                        f"node {_label(node)}: input '{name}' is not produced by any node, nor a graph input or initializer"
                    )
                source = writer.get(name)
                if source is not None and source != index:
                    waiting[index] += 1
                    readers.setdefault(source, []).append(index)
                elif source == index:
                    raise _Problem(f"node {_label(node)}: reads '{name}', its own output")
            for attribute in node.attribute:
                for body in _graphs(attribute):
                    self.graph(body, _Scope(frozenset(visible), scope.opsets, scope.functions))
        ready = [i for i, n in enumerate(waiting) if n == 0]
        done = 0
        while ready:
            index = ready.pop()
            done += 1
            for reader in readers.get(index, ()):
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    ready.append(reader)
        if done < len(nodes):
            stuck = ", ".join(_label(nodes[i]) for i, n in enumerate(waiting) if n)
            raise _Problem(f"nodes {stuck} feed each other in a cycle")
        for name in outputs:
            if name not in visible:
                raise _Problem(f"{where}: output '{name}' is not produced by any node, nor a graph input or initializer")

    def _node(self, node: NodeProto, scope: _Scope) -> None:
        label = f"node {_label(node)}"
        if not node.op_type:
            raise _Problem(f"{label}: has no op_type")
        domain = _domain(node.domain)
        function = scope.functions.get((domain, node.op_type))
        if function is not None:
            _counts(label, "inputs", len(_trimmed(node.input)), 0, len(function.input))
            _counts(label, "outputs", len(_trimmed(node.output)), 1, len(function.output))
            return
        if domain not in scope.opsets:
            imported = ", ".join(f"'{d or 'ai.onnx'}'" for d in scope.opsets)
            raise _Problem(f"{label}: domain '{domain or 'ai.onnx'}' is not imported by the model (imports: {imported})")
        if domain not in self.versions:
            if domain in FRONTEND_DOMAINS:
                return
            raise _Problem(f"{label}: domain '{domain}' has no operators onnx or OpenVINO know")
        version = scope.opsets[domain]
        schema = _schema(node.op_type, version, domain)
        if schema is None:
            raise _Problem(f"{label}: ONNX has no operator {node.op_type} in opset {version} of domain '{domain or 'ai.onnx'}'")
        where = f"{label} ({node.op_type}-{schema.since_version})"
        inputs = _trimmed(node.input)
        _counts(where, "inputs", len(inputs), schema.min_input, schema.max_input)
        _counts(where, "outputs", len(_trimmed(node.output)), schema.min_output, schema.max_output)
        formal = list(schema.inputs) if "" in inputs else []
        for position, name in enumerate(inputs):
            if name or not formal:
                continue
            declared = formal[min(position, len(formal) - 1)]
            if declared.option == onnx.defs.OpSchema.FormalParameterOption.Single:
                raise _Problem(f"{where}: input {position} ('{declared.name}') is required but empty")
        try:
            check_attribute_types(node, schema, where)
        except SpecError as exc:
            raise _Problem(str(exc)) from None

    def _value_type(self, value: onnx.ValueInfoProto, where: str, required: bool) -> None:
        kind = value.type.WhichOneof("value")
        if kind is None and required:
            raise _Problem(f"{where} has no type")
        if kind not in ("tensor_type", "sparse_tensor_type"):
            return
        tensor = getattr(value.type, kind)
        if tensor.elem_type == TensorProto.UNDEFINED:
            if required:
                raise _Problem(f"{where} has no element type")
        elif tensor.elem_type not in DATA_TYPES:
            raise _Problem(f"{where} has element type {tensor.elem_type}, which onnx does not know")
        if tensor.HasField("shape"):
            for axis, dim in enumerate(tensor.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value < -1:
                    raise _Problem(f"{where} declares dim {dim.dim_value} on axis {axis}")
                problem = dim_problem(dim.dim_value, axis) if dim.HasField("dim_value") else None
                if problem:
                    raise _Problem(f"{where}: {problem}")


def _raw_sizes(proto: ModelProto, data: bytes) -> list[int | None] | None:
    """``raw_data_sizes`` of ``data`` if they are the main graph's initializers' (one size for each,
    None exactly where one has no raw data), else None (``len(raw_data)`` is then read)."""
    initializers = proto.graph.initializer
    if not any(tensor.HasField("raw_data") for tensor in initializers):
        return None  # nothing to copy out: no scan (a 5 MB model of 672 nodes: ~0.4 ms)
    sizes = raw_data_sizes(data)
    if sizes is None or len(sizes) != len(initializers):
        return None
    if any((size is not None) != tensor.HasField("raw_data") for size, tensor in zip(sizes, initializers)):
        return None
    return sizes


def _check_initializer(tensor: TensorProto, where: str, raw_size: int | None = None) -> None:
    """Known element type, dims >= 0, and data of the size the dims need (``raw_size``: the
    length of its raw data when known, else it is read)."""
    if tensor.data_type not in DATA_TYPES:
        raise _Problem(f"{where} has element type {tensor.data_type}, which onnx does not know")
    if any(d < 0 for d in tensor.dims):
        raise _Problem(f"{where} has negative dims {list(tensor.dims)}")
    if tensor.data_location == TensorProto.EXTERNAL:
        return  # ovpool.onnx.model.check_external_data checks it against its file
    count = math.prod(tensor.dims)
    if tensor.HasField("raw_data"):
        needed = raw_bytes(tensor.data_type, count)
        held = len(tensor.raw_data) if raw_size is None else raw_size
        if needed is not None and held != needed:
            raise _Problem(f"{where} {list(tensor.dims)} needs {needed} bytes of data and holds {held}")
        return
    field, per_element = _TYPED_FIELDS.get(tensor.data_type, ("", 0))
    if field and len(getattr(tensor, field)) != count * per_element:
        raise _Problem(
            f"{where} {list(tensor.dims)} needs {count * per_element} values in {field} and holds {len(getattr(tensor, field))}"
        )


def raw_bytes(data_type: int, count: int) -> int | None:
    """Bytes ``count`` elements of an ONNX element type take as raw data: sub-byte types pack
    (5 INT4 values: 3 bytes); None where onnx gives no fixed size (strings, 6-bit floats)."""
    if data_type in _UNSIZED:
        return None
    bits = _SUB_BYTE_BITS.get(data_type)
    if bits is not None:
        return (count * bits + 7) // 8
    return count * onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize


def _counts(where: str, what: str, count: int, least: int, most: int) -> None:
    if count < least or count > most:
        allowed = f"{least}" if least == most else f"{least} to {most}" if most < 2**31 - 1 else f"at least {least}"
        raise _Problem(f"{where}: has {count} {what}; it takes {allowed}")


def _trimmed(names: Sequence[str]) -> list[str]:
    """Names without the trailing omitted ("") ones."""
    names = list(names)
    while names and not names[-1]:
        names.pop()
    return names


def _graphs(attribute: AttributeProto) -> list[GraphProto]:
    if attribute.type == AttributeProto.GRAPH or attribute.HasField("g"):
        return [attribute.g]
    return list(attribute.graphs)


def _free_names(node: NodeProto, known: dict[int, tuple[NodeProto, set[str]]]) -> set[str]:
    """Names a node's subgraphs read from outside themselves (at any depth): they order the node
    after their writers as its inputs do. ``known`` keeps each node's answer by the node (held, so
    its ``id`` stays its own), so the nodes of a body nested n deep are read once, not n times."""
    found = known.get(id(node))
    if found is not None:
        return found[1]
    free: set[str] = set()
    for attribute in node.attribute:
        for body in _graphs(attribute):
            own = {v.name for v in body.input} | {t.name for t in body.initializer} | {o for n in body.node for o in n.output}
            for inner in body.node:
                free |= {name for name in set(inner.input) | _free_names(inner, known) if name and name not in own}
            free |= {o.name for o in body.output if o.name not in own}
    known[id(node)] = (node, free)
    return free


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def _check_text(message: Message, where: str) -> None:
    """Every string field holds UTF-8 text (protobuf hands an undecodable one over as bytes, which
    no name lookup expects): ``model.graph.node[2].op_type: is not UTF-8 text``. Fields are read
    in field-number order; of a TensorProto the string and message fields only, so a weight's
    ``raw_data`` is never copied out of its message (that took ~20 ms of a 54 MB model's check)."""
    _text_walk(message, (where, "", None))


_Where = tuple[Any, str, "int | None"]  # (the enclosing message's, field name, index): a path made on error only


def _text_walk(message: Message, where: _Where) -> None:
    fields = _text_fields(message.DESCRIPTOR)
    if fields is None:
        listed = [(f.name, f.type == _STRING, v) for f, v in message.ListFields() if f.type in _TEXT_OR_MESSAGE]
    else:
        listed = [
            (name, is_text, getattr(message, name)) for name, is_text, repeated in fields if repeated or message.HasField(name)
        ]
    for name, is_text, value in listed:
        if is_text:
            if isinstance(value, bytes) or (not isinstance(value, str) and not _all_text(value)):
                raise _Problem(f"{_path(where)}.{name}: is not UTF-8 text")
        elif isinstance(value, Message):
            _text_walk(value, (where, name, None))
        else:
            for index, item in enumerate(value):
                _text_walk(item, (where, name, index))


def _all_text(values: Iterable[str | bytes]) -> bool:
    """Whether every value is a str (joining them fails on the first bytes)."""
    try:
        "".join(values)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def _path(where: _Where) -> str:
    """``(("model", "", None), "graph", None), "node", 2)`` -> ``model.graph.node[2]``."""
    parent, name, index = where
    if not name:
        return str(parent)
    return f"{_path(parent)}.{name}" + (f"[{index}]" if index is not None else "")


_STRING = FieldDescriptor.TYPE_STRING
_TEXT_OR_MESSAGE = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE)


@functools.cache
def _text_fields(descriptor: Any) -> tuple[tuple[str, bool, bool], ...] | None:
    """TensorProto's string and message fields as (name, is a string, is repeated) by number; None
    for another message type (``ListFields`` reads it whole: fewer calls for its few set fields)."""
    if descriptor.full_name != "onnx.TensorProto":
        return None
    fields = sorted(descriptor.fields, key=lambda field: field.number)
    return tuple(
        (field.name, field.type == field.TYPE_STRING, field.is_repeated)
        for field in fields
        if field.type in (field.TYPE_STRING, field.TYPE_MESSAGE)
    )


def _label(node: NodeProto) -> str:
    """A node for messages: ``'pool1'`` by name, else its first output ``'relu'``, else ``(Relu)``."""
    return f"'{node.name}'" if node.name else f"'{node.output[0]}'" if node.output and node.output[0] else f"({node.op_type})"


def _type_name(kind: int) -> str:
    try:
        return str(AttributeProto.AttributeType.Name(kind))
    except ValueError:
        return f"type {kind}"


def _attr_type(declared: Any) -> int:
    """A schema attribute's type as AttributeProto's number (``AttrType.INT`` is 2: an int enum at
    run time, typed as a plain enum in onnx's stubs)."""
    return int(declared.type)

"""Reading OpenVINO IR XML (v10/v11) safely into plain values, without OpenVINO.

The parser never expands entities, loads a DTD or touches the network, and an IR has no DOCTYPE:
any document with one is refused before its entities are looked at (billion laughs, external
entities). Malformed XML is an ``InputFileError`` (exit 2) with its line and column; so is a
document that is not an IR (root not ``<net>``, no ``<layers>``). Dims keep their text: ``6``,
``-1``, ``?`` and ranges ``1..10``, ``..10``, ``4..`` (``dim_bounds`` reads them).
"""

from __future__ import annotations

import io
import os
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ovpool import dtypes
from ovpool.errors import InputFileError, ModelError
from ovpool.files import read_input, regular_size
from ovpool.memory import budget, check_bytes
from ovpool.names import port_tensor_name
from ovpool.shape import Bound, dim_problem
from ovpool.shape import format_bound as format_bound  # moved to the shape engine; still here

if TYPE_CHECKING:
    from lxml import etree

# The largest IR XML read: ten times the largest real IR seen (~100 MB), and within what lxml
# parses without its huge-tree option.
MAX_XML_BYTES = 1 << 30


class Port(NamedTuple):
    """One ``<port>``: its id, precision (e.g. "FP32", "" when absent) and dims as written.
    (Port and Layer are NamedTuples: immutable, and cheap to make by the ten thousand.)"""

    id: str
    precision: str
    dims: tuple[str, ...]
    names: str = ""

    @property
    def dtype(self) -> str | None:
        return dtypes.from_ir_precision(self.precision)


class Layer(NamedTuple):
    """One ``<layer>`` with its ``<data>`` attributes (read-only: layers with the same ``<data>``
    share one mapping) and ports; ``line`` is its line in the file (worked out when asked)."""

    id: str
    name: str
    type: str
    version: str
    data: Mapping[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    position: int
    lines: SourceLines

    @property
    def line(self) -> int:
        """The line where the layer's start tag ends, as lxml numbers elements (the layer is the
        ``position``-th top-level layer of the file)."""
        return self.lines.layer_line(self.position)

    def output(self, port_id: str) -> Port | None:
        for port in self.outputs:
            if port.id == port_id:
                return port
        return None

    def input(self, port_id: str) -> Port | None:
        for port in self.inputs:
            if port.id == port_id:
                return port
        return None


class Edge(NamedTuple):
    from_layer: str
    from_port: str
    to_layer: str
    to_port: str
    position: int
    lines: SourceLines

    @property
    def line(self) -> int:
        """The line where the edge's tag ends (the ``position``-th edge of the file's ``<edges>``)."""
        return self.lines.edge_line(self.position)


class SourceLines:
    """Line numbers of a document's top-level layers and edges, found when first asked for.

    Reading takes no line numbers (lxml gives them only with a tree, and building the tree of a
    20,000-layer IR costs more than reading it); a finding or an error asks for a few, and the
    first question reads them all in one streaming pass over the same bytes with the same parser
    options: the 3rd top-level ``<layer>``, its start tag ending on line 40, gives ``layer_line(2) == 40``."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._lines: tuple[list[int], list[int]] | None = None

    def layer_line(self, position: int) -> int:
        return self._all()[0][position]

    def edge_line(self, position: int) -> int:
        return self._all()[1][position]

    def _all(self) -> tuple[list[int], list[int]]:
        if self._lines is None:
            from lxml import etree

            layers: list[int] = []
            edges: list[int] = []
            events = etree.iterparse(io.BytesIO(self._data), events=("end",), tag=("layer", "edge"), **PARSER_OPTIONS)
            try:
                for _, node in events:
                    parent = node.getparent()
                    grandparent = parent.getparent()
                    if grandparent is None or grandparent.getparent() is not None:
                        continue  # inside a layer's <body>, or not under <net>
                    if node.tag == "edge" and parent.tag == "edges":
                        edges.append(node.sourceline or 0)
                    elif node.tag == "layer" and parent.tag == "layers":
                        layers.append(node.sourceline or 0)
                    else:
                        continue
                    node.clear()
                    while node.getprevious() is not None:
                        del parent[0]
            except etree.XMLSyntaxError:
                pass  # an error found while reading: the lines before it are all there is to ask for
            self._lines = layers, edges
        return self._lines


class IRDocument:
    """A parsed IR: ``version`` of ``<net>`` (10, 11), its layers by id in file order, its edges."""

    def __init__(self, path: str, name: str, version: int | None, layers: dict[str, Layer], edges: tuple[Edge, ...]) -> None:
        self.path, self.name, self.version, self.layers, self.edges = path, name, version, layers, edges
        self._input_names: frozenset[str] | None = None

    def layer(self, layer_id: str) -> Layer | None:
        """The layer with this id, or None."""
        return self.layers.get(layer_id)

    def producers(self) -> dict[tuple[str, str], Edge]:
        """(to layer, to port) -> the edge feeding it."""
        return {(e.to_layer, e.to_port): e for e in self.edges}

    def edge_problems(self) -> Iterator[tuple[int, str, str]]:
        """(line, layer id, why) of each edge that connects nothing: a layer or port that does not
        exist (an edge from port 9 of a layer with ports 0 and 1) or an input port fed by a second
        edge; then of each layer with an input port no edge feeds. The layer id is the edge's
        target where it exists, else its source, else ""."""
        fed: set[tuple[str, str]] = set()
        layers = self.layers
        for edge in self.edges:
            source, target = layers.get(edge.from_layer), layers.get(edge.to_layer)
            fed_here = (edge.to_layer, edge.to_port)
            if (
                source is None
                or target is None
                or source.output(edge.from_port) is None
                or target.input(edge.to_port) is None
                or fed_here in fed
            ):
                yield _edge_problem(edge, source, target)
            fed.add(fed_here)
        for layer in layers.values():
            for port in layer.inputs:
                if (layer.id, port.id) not in fed:
                    yield layer.line, layer.id, f"layer '{layer.name}' ({layer.type}): input port {port.id} is not connected"

    def check_structure(self) -> None:
        """A ``ModelError`` at the first edge that connects nothing (``edge_problems``) or the
        layers of a cycle: what every reader that runs or converts the graph needs first."""
        for line, _, problem in self.edge_problems():
            raise ModelError.in_file(f"{self.path}:{line}", problem)
        self.execution_order()

    def execution_order(self) -> tuple[Layer, ...]:
        """Every layer after the layers that feed it (Kahn's algorithm; ready layers in file order).
        An edge naming a layer that does not exist, or a cycle, is a ``ModelError``."""
        layers = self.layers
        waiting = dict.fromkeys(layers, 0)
        after: dict[str, list[str]] = {}
        for edge in self.edges:
            source, target = edge.from_layer, edge.to_layer
            if source not in layers or target not in layers:
                raise ModelError.in_file(f"{self.path}:{edge.line}", f"edge from layer {source} to {target}: no such layer")
            waiting[target] += 1
            followers = after.get(source)
            if followers is None:
                after[source] = [target]
            else:
                followers.append(target)
        ready = deque(lid for lid, n in waiting.items() if n == 0)
        order = []
        while ready:
            lid = ready.popleft()
            order.append(layers[lid])
            for nxt in after.get(lid, ()):
                left = waiting[nxt] = waiting[nxt] - 1
                if left == 0:
                    ready.append(nxt)
        if len(order) < len(self.layers):
            stuck = ", ".join(repr(self.layers[lid].name) for lid, n in waiting.items() if n)
            raise ModelError.in_file(self.path, f"layers {stuck} form a cycle")
        return tuple(order)

    def tensor_name(self, layer: Layer, port_id: str) -> str:
        """The tensor behind output port ``port_id`` of ``layer`` (``ovpool.names.port_tensor_name``,
        the Parameters' names as the model's inputs)."""
        port = layer.output(port_id)
        first = bool(layer.outputs) and layer.outputs[0].id == port_id
        if self._input_names is None:
            self._input_names = frozenset(
                name.strip()
                for parameter in self.layers.values()
                if parameter.type == "Parameter"
                for out in parameter.outputs
                for name in out.names.split(",")
            )
        return port_tensor_name(port.names if port else "", layer.name, port_id, first, self._input_names)


def _edge_problem(edge: Edge, source: Layer | None, target: Layer | None) -> tuple[int, str, str]:
    """(line, layer id, why) of an edge ``IRDocument.edge_problems`` found connecting nothing (the
    first of: a missing layer, a missing port, an input port fed twice)."""
    where = f"edge from layer {edge.from_layer} port {edge.from_port} to layer {edge.to_layer} port {edge.to_port}"
    at = edge.to_layer if target is not None else edge.from_layer if source is not None else ""
    if source is None or target is None:
        return edge.line, at, f"{where}: no layer {edge.from_layer if source is None else edge.to_layer}"
    if source.output(edge.from_port) is None:
        return edge.line, at, f"{where}: layer '{source.name}' has no output port {edge.from_port}"
    if target.input(edge.to_port) is None:
        return edge.line, at, f"{where}: layer '{target.name}' has no input port {edge.to_port}"
    return edge.line, at, f"{where}: input port {edge.to_port} of layer '{target.name}' is fed by another edge too"


PARSER_OPTIONS = {"resolve_entities": False, "load_dtd": False, "no_network": True, "huge_tree": False, "remove_comments": True}


def parser() -> etree.XMLParser:
    """The only way ovpool parses untrusted XML: no entities, no DTD, no network, no huge trees
    (``read_ir`` reads with the same options)."""
    from lxml import etree

    return etree.XMLParser(**PARSER_OPTIONS)


def read_ir(source: str | os.PathLike | bytes, name: str | None = None) -> IRDocument:
    """Parse an IR ``.xml`` (a path, or its bytes with ``name`` for messages).

    An IR written as OpenVINO writes one is read by ``ovpool.ir.fast_reader`` (the same document, ~3x
    sooner); any other, no tree is built: lxml hands each start tag, text and end tag to ``_IRTarget``, which keeps
    the top-level ``<layer>`` and ``<edge>`` elements as plain values (a whole lxml tree of a
    15 MB IR takes ~250 MB, and allocating it costs more than parsing). Layers nested in a
    ``<body>`` (TensorIterator, Loop) are part of their outer layer, not of the document."""
    from ovpool.ir.fast_reader import read_plain

    data, label = _source_bytes(source, name)
    _refuse_doctype(data, label)
    lines = SourceLines(data)
    plain = read_plain(data, label, lines)
    if plain is not None:
        return plain
    from lxml import etree

    target = _IRTarget(label, lines)
    try:
        etree.fromstring(data, etree.XMLParser(target=target, **PARSER_OPTIONS))
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno, 0)
        message = re.sub(r", line \d+, column \d+$", "", exc.msg)
        raise InputFileError.in_file(f"{label}:{line}:{column}", f"malformed XML: {message}") from None
    finally:
        read = target.release()
    if read.doctype_seen:
        raise InputFileError.in_file(label, "refusing XML with a DOCTYPE (an IR has none)")
    if read.root_tag != "net":
        raise InputFileError.in_file(label, f"not an OpenVINO IR (root element <{read.root_tag}>, expected <net>)")
    if not read.has_layers:
        raise InputFileError.in_file(label, "not an OpenVINO IR (no <layers>)")
    version_text = read.root_attributes.get("version", "")
    version = int(version_text) if version_text.isascii() and version_text.isdigit() else None
    return IRDocument(label, read.root_attributes.get("name", ""), version, read.layers, tuple(read.edges))


class _Read(NamedTuple):
    """What ``_IRTarget`` read."""

    root_tag: str
    root_attributes: Mapping[str, str]
    has_layers: bool
    doctype_seen: bool
    layers: dict[str, Layer]
    edges: list[Edge]


def _source_bytes(source: str | os.PathLike | bytes, name: str | None) -> tuple[bytes, str]:
    """The document's bytes and the label its messages use: a regular file of at most
    ``MAX_XML_BYTES`` (``ovpool.files.read_input``)."""
    if isinstance(source, bytes):
        return source, name or "<bytes>"
    path = Path(source)
    try:
        return read_input(path, MAX_XML_BYTES, "IR XML"), name or str(path)
    except InputFileError as exc:
        if name:
            exc.file = name
        raise


def weights_file(xml: str | os.PathLike) -> Path | None:
    """The IR's ``.bin`` beside its ``.xml``, checked to be a regular file (OpenVINO reads it
    whole: a FIFO would block it, ``/dev/zero`` fill memory), or None when there is none."""
    path = Path(xml).with_suffix(".bin")
    if not os.path.lexists(path):
        return None
    regular_size(path)
    return path


def read_weights(xml: str | os.PathLike) -> bytes:
    """The bytes of the IR's ``.bin`` (``weights_file``), empty when there is none; a file over the
    memory budget (``ovpool.memory``) is refused before it is read."""
    path = weights_file(xml)
    if path is None:
        return b""
    check_bytes(f"{path}: is", regular_size(path))
    return read_input(path, budget(), "IR weights (.bin) within the memory budget")


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def ir_int(text: str) -> int | None:
    """An integer as OpenVINO reads one whole from IR text: ASCII digits, an optional sign and
    blanks around (``" -2"`` -> -2); None for anything else. Python's ``int`` would also take
    ``"3_0"`` (30, where OpenVINO reads 3) and other scripts' digits (``"٣"`` is 3)."""
    return int(text) if _INTEGER.fullmatch(text) else None


def dim_bounds(text: str) -> Bound | None:
    """(lower, upper) of a dim's text; upper None is unbounded. ``6`` -> (6, 6), ``-1``/``?`` ->
    (0, None), ``1..10`` -> (1, 10), ``..10`` -> (0, 10), ``4..`` -> (4, None); None if unreadable
    (``1_0``, ``abc``, a negative dim)."""
    text = text.strip()
    if text in ("-1", "?"):
        return 0, None
    if ".." in text:
        low_text, high_text = text.split("..", 1)
        low = ir_int(low_text) if low_text else 0
        high = ir_int(high_text) if high_text and high_text != "-1" else None
        if low is None or (high_text and high_text != "-1" and high is None):
            return None
        return (low, high) if low >= 0 and (high is None or high >= low) else None
    value = ir_int(text)
    return (value, value) if value is not None and value >= 0 else None


def declared_bounds(texts: Sequence[str], where: str) -> list[Bound | None]:
    """``dim_bounds`` of each dim of a port or a Parameter's shape; a dim or bound past the
    longest dim ovpool takes (``shape.dim_problem``: an IR may write 2**63, which is no int64) is a
    ``ModelError`` naming ``where`` and the axis, the refusal every reader of IR dims gives."""
    bounds = [dim_bounds(text) for text in texts]
    for axis, bound in enumerate(bounds):
        for value in bound or ():
            problem = None if value is None else dim_problem(value, axis)
            if problem:
                raise ModelError(f"{where}: {problem}")
    return bounds


def _refuse_doctype(data: bytes, label: str) -> None:
    """An IR never has a DOCTYPE; one is how entity bombs and external entities get in."""
    root_at = data.find(b"<net")
    head = data[: root_at if root_at >= 0 else len(data)]
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise InputFileError.in_file(label, "refusing XML with a DOCTYPE or entity declarations (an IR has none)")


class _IRTarget:
    """lxml parser target: start tags, text and end tags in, Layers and Edges out.

    Depth 1 is ``<net>``, 2 its sections, 3 a top-level ``<layer>`` (in ``<layers>``) or ``<edge>``
    (in ``<edges>``), 4 the layer's ``<data>``/``<input>``/``<output>``, 5 a ``<port>``, 6 a
    ``<dim>``, whose text is what the dim says (text after a child of ``<dim>`` is not). Layers
    share what they repeat, ``<data>`` mappings and dims: 20,000 identical pooling layers then take
    ~20 MB instead of ~55 MB, and fresh memory (page faults) costs more here than the lookups.
    Every text goes to a list's ``append`` (no Python call per text, most of them are the
    whitespace between tags); a ``<dim>`` start clears the list and its end joins it."""

    def __init__(self, label: str, lines: SourceLines) -> None:
        self.label = label
        self._reset(lines)

    def _reset(self, lines: SourceLines) -> None:
        self.lines = lines
        self.layers: dict[str, Layer] = {}
        self.edges: list[Edge] = []
        self.root_tag = ""
        self.root_attributes: Mapping[str, str] = _NO_DATA
        self.has_layers = False
        self.doctype_seen = False
        self._depth = 0
        self._section = ""
        self._layer: Mapping[str, str] | None = None
        self._layer_data: Mapping[str, str] = _NO_DATA
        self._inputs: tuple[Port, ...] = ()
        self._outputs: tuple[Port, ...] = ()
        self._ports: list[Port] | None = None
        self._port: Mapping[str, str] | None = None
        self._port_dims: list[str] = []
        self._dim = False
        self._dim_text: str | None = None
        self._texts: list[str] = []
        self.data = self._texts.append
        self._shared_data: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self._shared_dims: dict[tuple[str, ...], tuple[str, ...]] = {}

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        depth = self._depth = self._depth + 1
        if depth == 6:
            if self._port is not None and tag == "dim":
                self._dim, self._dim_text = True, None
                self._texts.clear()
        elif depth == 5:
            if self._ports is not None and tag == "port":
                self._port = attrib
                self._port_dims = []
        elif depth == 4:
            if self._layer is not None:
                if tag == "data":
                    items = tuple(attrib.items())
                    shared = self._shared_data
                    self._layer_data = shared.get(items) or shared.setdefault(items, MappingProxyType(attrib))
                elif tag == "input" or tag == "output":
                    self._ports = []
        elif depth == 3:
            if tag == "layer" and self._section == "layers":
                self._layer = attrib
                self._layer_data, self._inputs, self._outputs = _NO_DATA, (), ()
            elif tag == "edge" and self._section == "edges":
                get = attrib.get
                self.edges.append(
                    Edge(
                        get("from-layer", ""),
                        get("from-port", ""),
                        get("to-layer", ""),
                        get("to-port", ""),
                        len(self.edges),
                        self.lines,
                    )
                )
        elif depth == 2:
            self._section = tag
            self.has_layers = self.has_layers or tag == "layers"
        elif depth == 1:
            self.root_tag, self.root_attributes = tag, attrib
        elif self._dim and self._dim_text is None:
            self._dim_text = "".join(self._texts)  # a child of <dim>: the dim's text is what came before it

    def end(self, tag: str) -> None:
        depth = self._depth
        self._depth = depth - 1
        if depth == 6:
            if self._dim:
                self._port_dims.append("".join(self._texts) if self._dim_text is None else self._dim_text)
                self._dim = False
        elif depth == 5:
            if self._port is not None and self._ports is not None:  # a <port> is only read inside a port list
                get = self._port.get
                dims = tuple(self._port_dims)
                self._ports.append(
                    Port(get("id", ""), get("precision", ""), self._shared_dims.setdefault(dims, dims), get("names", ""))
                )
                self._port = None
        elif depth == 4:
            if self._ports is not None:
                if tag == "input":
                    self._inputs = tuple(self._ports)
                else:
                    self._outputs = tuple(self._ports)
                self._ports = None
        elif depth == 3:
            if self._layer is not None:
                get = self._layer.get
                layer = Layer(
                    get("id", ""),
                    get("name", ""),
                    get("type", ""),
                    get("version", ""),
                    self._layer_data,
                    self._inputs,
                    self._outputs,
                    len(self.layers),
                    self.lines,
                )
                if layer.id in self.layers:
                    raise InputFileError.in_file(f"{self.label}:{layer.line}", f"layer id {layer.id} appears twice")
                self.layers[layer.id] = layer
                self._layer = None

    def release(self) -> _Read:
        """What was read, handed over and dropped here with everything else reading built. The
        parser and its context refer to each other, and so to this target, until the cyclic
        collector runs: kept here, a document would outlive its last user (and a collection in
        between would scan all its objects, ~0.15 s for 20,000 layers)."""
        read = _Read(self.root_tag, self.root_attributes, self.has_layers, self.doctype_seen, self.layers, self.edges)
        self._reset(SourceLines(b""))
        return read

    def doctype(self, *_: object) -> None:
        self.doctype_seen = True

    def close(self) -> None:
        return None


_NO_DATA: Mapping[str, str] = MappingProxyType({})


class PortMapEntry(NamedTuple):
    """One ``<input>``/``<output>`` of a ``<port_map>`` as written: ``external`` the layer's port
    id ("-1" for a special port), ``internal`` the body's Parameter or Result layer id, the
    slicing attributes of a sliced input or a concatenated output (``axis`` None when not
    sliced) and ``purpose`` (Loop-5's "current_iteration" / "execution_condition", else "").
    ``<input axis="1" external_port_id="0" internal_layer_id="1" start="-1" end="0" stride="-1"
    part_size="1"/>`` -> ("0", "1", 1, -1, 0, -1, 1, "")."""

    external: str
    internal: str
    axis: int | None
    start: int
    end: int
    stride: int
    part_size: int
    purpose: str


class Body(NamedTuple):
    """A sub-graph of a layer (If ``then_body``/``else_body``, Loop and TensorIterator ``body``) and
    how its ports meet the layer's: ``inputs`` maps an input port id of the layer to the body's
    Parameter layer id, ``outputs`` an output port id of the layer to the body's Result layer id;
    ``data`` the body as an IR of its own (``read_bodies(body.data, inner_layer)`` reads a body
    inside it); ``input_map``/``output_map`` every port-map entry in file order, ``back_edges``
    each ``<back_edges>`` edge as (Result layer id, Parameter layer id)."""

    document: IRDocument
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]
    data: bytes
    input_map: tuple[PortMapEntry, ...] = ()
    output_map: tuple[PortMapEntry, ...] = ()
    back_edges: tuple[tuple[str, str], ...] = ()


def read_bodies(source: str | os.PathLike | bytes, layer: Layer, name: str | None = None) -> dict[str, Body]:
    """The bodies of a top-level ``layer`` of the IR ``source``, by tag (``{"then_body": ...,
    "else_body": ...}`` for an If, each with its ``then_port_map``/``else_port_map``).

    ``read_ir`` keeps no nested layers; this reads the file again with the same safe parser and
    reads each body as an IR of its own (named ``<file>: If 'cond' then_body``; its line numbers
    count from the body's ``<layers>``). A layer with no body gives ``{}``."""
    from lxml import etree

    data, label = _source_bytes(source, name)
    _refuse_doctype(data, label)
    element = None
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag="layer", **PARSER_OPTIONS)
    try:
        for _, node in events:
            parent = node.getparent()
            grandparent = parent.getparent() if parent is not None else None
            if grandparent is None or grandparent.getparent() is not None or parent.tag != "layers":
                continue
            if node.get("id") == layer.id:
                element = node
                break
    except etree.XMLSyntaxError as exc:
        raise InputFileError.in_file(label, f"malformed XML: {exc.msg}") from None
    if element is None:
        raise ModelError.in_file(label, f"layer '{layer.name}' (id {layer.id}) is not in the file")
    bodies: dict[str, Body] = {}
    for child in element:
        if not isinstance(child.tag, str) or not child.tag.endswith("body"):
            continue
        net = etree.Element("net", name=f"{layer.name}/{child.tag}")
        net.extend(list(child))
        text = etree.tostring(net)
        document = read_ir(text, f"{label}: {layer.type} '{layer.name}' {child.tag}")
        port_map = element.find(child.tag[: -len("body")] + "port_map")
        inputs: dict[str, str] = {}
        outputs: dict[str, str] = {}
        entries: dict[str, list[PortMapEntry]] = {"input": [], "output": []}
        for entry in port_map if port_map is not None else ():
            target = inputs if entry.tag == "input" else outputs if entry.tag == "output" else None
            if target is not None:
                target[entry.get("external_port_id", "")] = entry.get("internal_layer_id", "")
                entries[entry.tag].append(_port_map_entry(entry, f"{label}: {layer.type} '{layer.name}' {child.tag}"))
        back = element.find("back_edges")
        back_edges = tuple(
            (edge.get("from-layer", ""), edge.get("to-layer", ""))
            for edge in (back if back is not None else ())
            if edge.tag == "edge"
        )
        bodies[child.tag] = Body(
            document,
            MappingProxyType(inputs),
            MappingProxyType(outputs),
            text,
            tuple(entries["input"]),
            tuple(entries["output"]),
            back_edges,
        )
    return bodies


def _port_map_entry(entry: etree._Element, where: str) -> PortMapEntry:
    """A ``<port_map>`` entry read (``PortMapEntry``); an integer attribute that is not one is a
    ``ModelError`` naming the body and the attribute."""

    def integer(name: str, default: int) -> int:
        text = entry.get(name)
        if text is None:
            return default
        value = ir_int(text)
        if value is None:
            raise ModelError.in_file(where, f"port_map {entry.tag} attribute '{name}' is '{text}', not an integer")
        return value

    axis = integer("axis", 0) if entry.get("axis") is not None else None
    return PortMapEntry(
        entry.get("external_port_id", ""),
        entry.get("internal_layer_id", ""),
        axis,
        integer("start", 0),
        integer("end", -1),
        integer("stride", 1),
        integer("part_size", 1),
        entry.get("purpose", ""),
    )

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ovpool.errors import InputFileError, ModelError
from ovpool.files import read_input, regular_size
from ovpool.ir.document import PARSER_OPTIONS, Edge, IRDocument, Layer, Port, SourceLines
from ovpool.ir.fast_reader import read_plain
from ovpool.memory import budget, check_bytes
from ovpool.shape import Bound, dim_problem
from ovpool.shape import format_bound as format_bound  # moved to the shape engine; still here

if TYPE_CHECKING:
    from lxml import etree

# The largest IR XML read: ten times the largest real IR seen (~100 MB), and within what lxml
# parses without its huge-tree option.
MAX_XML_BYTES = 1 << 30


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

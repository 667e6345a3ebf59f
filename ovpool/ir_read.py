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
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from lxml import etree

from ovpool.errors import InputFileError

# IR port precisions -> numpy dtype names (OpenVINO writes FP32 on ports, f32 on Parameter data).
PRECISIONS = {
    "FP64": "float64", "FP32": "float32", "FP16": "float16", "BF16": "bfloat16",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8",
    "U64": "uint64", "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
}
ELEMENT_TYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8", "boolean": "bool",
}

Bound = tuple[int, int | None]


class Port(NamedTuple):
    """One ``<port>``: its id, precision (e.g. "FP32", "" when absent) and dims as written.
    (Port and Layer are NamedTuples: immutable, and cheap to make by the ten thousand.)"""

    id: str
    precision: str
    dims: tuple[str, ...]
    names: str = ""

    @property
    def dtype(self) -> str | None:
        return PRECISIONS.get(self.precision.upper())


class Layer(NamedTuple):
    """One ``<layer>`` with its ``<data>`` attributes (read-only: layers with the same ``<data>``
    share one mapping) and ports; ``line`` is its line in the file."""

    id: str
    name: str
    type: str
    version: str
    data: Mapping[str, str]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    line: int

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
    line: int


class IRDocument:
    """A parsed IR: ``version`` of ``<net>`` (10, 11), its layers by id in file order, its edges."""

    def __init__(self, path: str, name: str, version: int | None, layers: dict[str, Layer], edges: tuple[Edge, ...]) -> None:
        self.path, self.name, self.version, self.layers, self.edges = path, name, version, layers, edges

    def layer(self, layer_id: str) -> Layer | None:
        """The layer with this id, or None."""
        return self.layers.get(layer_id)

    def producers(self) -> dict[tuple[str, str], Edge]:
        """(to layer, to port) -> the edge feeding it."""
        return {(e.to_layer, e.to_port): e for e in self.edges}


_PARSER_OPTIONS = {"resolve_entities": False, "load_dtd": False, "no_network": True, "huge_tree": False, "remove_comments": True}


def parser() -> etree.XMLParser:
    """The only way ovpool parses untrusted XML: no entities, no DTD, no network, no huge trees
    (``read_ir`` streams with the same options)."""
    return etree.XMLParser(**_PARSER_OPTIONS)


def read_ir(source: str | os.PathLike | bytes, name: str | None = None) -> IRDocument:
    """Parse an IR ``.xml`` (a path, or its bytes with ``name`` for messages).

    The document is streamed: each top-level ``<layer>`` and ``<edge>`` becomes a plain value and
    its element is freed at once, so memory stays at the size of those values (a whole lxml tree
    of a 15 MB IR takes ~250 MB, and allocating it costs more than parsing). Layers nested in a
    ``<body>`` (TensorIterator, Loop) are part of their outer layer, not of the document."""
    data, label = _source_bytes(source, name)
    _refuse_doctype(data, label)
    layers: dict[str, Layer] = {}
    edges: list[Edge] = []
    reader = _LayerReader()
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag=("layer", "edge"), **_PARSER_OPTIONS)
    try:
        for _, node in events:
            parent = node.getparent()
            grandparent = parent.getparent()
            if grandparent is None or grandparent.getparent() is not None:
                continue  # inside a layer's <body>, or not under <net>
            if node.tag == "edge":
                if parent.tag == "edges":
                    get = node.get
                    edges.append(Edge(get("from-layer", ""), get("from-port", ""), get("to-layer", ""), get("to-port", ""), node.sourceline or 0))
            elif parent.tag == "layers":
                layer = reader.layer(node)
                if layer.id in layers:
                    raise InputFileError(f"{label}:{layer.line}: layer id {layer.id} appears twice")
                layers[layer.id] = layer
            else:
                continue
            node.clear()
            while node.getprevious() is not None:
                del parent[0]
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (exc.lineno, 0)
        message = re.sub(r", line \d+, column \d+$", "", exc.msg)
        raise InputFileError(f"{label}:{line}:{column}: malformed XML: {message}") from None
    root = events.root
    if root.getroottree().docinfo.doctype:
        raise InputFileError(f"{label}: refusing XML with a DOCTYPE (an IR has none)")
    if root.tag != "net":
        raise InputFileError(f"{label}: not an OpenVINO IR (root element <{root.tag}>, expected <net>)")
    if root.find("layers") is None:
        raise InputFileError(f"{label}: not an OpenVINO IR (no <layers>)")
    version_text = root.get("version", "")
    return IRDocument(label, root.get("name", ""), int(version_text) if version_text.isdigit() else None, layers, tuple(edges))


def _source_bytes(source: str | os.PathLike | bytes, name: str | None) -> tuple[bytes, str]:
    """The document's bytes and the label its messages use."""
    if isinstance(source, bytes):
        return source, name or "<bytes>"
    path = Path(source)
    label = name or str(path)
    try:
        return path.read_bytes(), label
    except FileNotFoundError:
        raise InputFileError(f"{label}: no such file") from None
    except OSError as exc:
        raise InputFileError(f"{label}: cannot read ({exc.strerror})") from None


def dim_bounds(text: str) -> Bound | None:
    """(lower, upper) of a dim's text; upper None is unbounded. ``6`` -> (6, 6), ``-1``/``?`` ->
    (0, None), ``1..10`` -> (1, 10), ``..10`` -> (0, 10), ``4..`` -> (4, None); None if unreadable."""
    text = text.strip()
    if text in ("-1", "?"):
        return 0, None
    try:
        if ".." in text:
            low, high = text.split("..", 1)
            bound = (int(low) if low else 0, int(high) if high and high != "-1" else None)
            return bound if bound[0] >= 0 and (bound[1] is None or bound[1] >= bound[0]) else None
        value = int(text)
    except ValueError:
        return None
    return (value, value) if value >= 0 else None


def format_bound(bound: Bound) -> str:
    """The IR spelling of a dim: (6, 6) -> "6", (0, None) -> "?", (1, 10) -> "1..10", (2, None) -> "2.."."""
    low, high = bound
    if low == high:
        return str(low)
    if high is None:
        return "?" if low == 0 else f"{low}.."
    return f"{low}..{high}" if low else f"..{high}"


def _refuse_doctype(data: bytes, label: str) -> None:
    """An IR never has a DOCTYPE; one is how entity bombs and external entities get in."""
    root_at = data.find(b"<net")
    head = data[: root_at if root_at >= 0 else len(data)]
    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
        raise InputFileError(f"{label}: refusing XML with a DOCTYPE or entity declarations (an IR has none)")


class _LayerReader:
    """Turns ``<layer>`` elements into Layers, sharing what layers repeat: ``<data>`` mappings and
    dims. 20,000 identical pooling layers then take ~20 MB instead of ~55 MB; fresh memory (page
    faults) costs more here than the lookups."""

    def __init__(self) -> None:
        self._data: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self._dims: dict[tuple[str, ...], tuple[str, ...]] = {}

    def layer(self, node: etree._Element) -> Layer:
        """One pass over the layer's children (the hot loop of reading a 20,000-layer IR)."""
        data: Mapping[str, str] = _NO_DATA
        inputs: tuple[Port, ...] = ()
        outputs: tuple[Port, ...] = ()
        for child in node:
            tag = child.tag
            if tag == "data":
                items = tuple(child.items())
                data = self._data.get(items) or self._data.setdefault(items, MappingProxyType(dict(items)))
            elif tag == "input":
                inputs = self._ports(child)
            elif tag == "output":
                outputs = self._ports(child)
        get = node.get
        return Layer(get("id", ""), get("name", ""), get("type", ""), get("version", ""), data, inputs, outputs, node.sourceline or 0)

    def _ports(self, node: etree._Element) -> tuple[Port, ...]:
        """The ``<port>`` children with their ``<dim>`` texts (children filtered by tag in Python:
        lxml's ``iterchildren(tag)`` costs more than the loop)."""
        ports = []
        for port in node:
            if port.tag == "port":
                get = port.get
                dims = tuple([d.text or "" for d in port if d.tag == "dim"])
                ports.append(Port(get("id", ""), get("precision", ""), self._dims.setdefault(dims, dims), get("names", "")))
        return tuple(ports)


_NO_DATA: Mapping[str, str] = MappingProxyType({})
